"""Exports without the orchestrators installed: plan loading, the launch environment, safety."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuplan.display import layout_text
from gpuplan.errors import UsageError
from gpuplan.export import (
    ExportOptions, build_export, export_plan, export_result, load_plan_result, parse_plan_result, write_atomic,
)
from gpuplan.export.common import (
    make_context, megatron_args, save_interval_steps, serve_layout, supported_targets, train_env,
)

PLANS = Path(__file__).parent / "fixtures" / "plans"
FIXTURES = sorted(p.name for p in PLANS.glob("*.json"))
TARGETS = ("skypilot", "dstack", "k8s")
_PLANNED: dict[tuple[str, ...], object] = {}


def load(name: str):
    return load_plan_result(PLANS / name)


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def planned(cli, *args: str):
    """A PlanResult from the real planner (`gpuplan plan ... --json`), once per argument list."""
    if args not in _PLANNED:
        code, out, err = cli("plan", *args, "--json")
        assert code == 0, err
        _PLANNED[args] = parse_plan_result(json.loads(out))
    return _PLANNED[args]


def first(result, **want):
    """The best-ranked plan with these attributes (assumptions.fabric as fabric=...)."""
    for p in sorted(result.plans, key=lambda p: p.rank):
        fab = want.get("fabric")
        if fab and p.assumptions.get("fabric") != fab:
            continue
        if want.get("multi") and p.nodes < 2:
            continue
        if all(getattr(p, k) == v for k, v in want.items() if k not in ("fabric", "multi")):
            return p
    pytest.fail(f"the planner ranked no plan with {want}")


def supported(plan, target: str) -> bool:
    return target in supported_targets(plan.provider, plan.workload == "train" and plan.nodes > 1)


def test_fixtures_cover_the_cases_the_brief_names():
    seen = {(r.workload, p.provider, p.pricing) for r in map(load, FIXTURES) for p in r.plans}
    assert ("train", "aws", "spot") in seen
    assert any(w == "train" and prov == "lambda" for w, prov, _ in seen)
    assert any(w == "serve" and prov == "runpod" for w, prov, _ in seen)
    assert any(prov in ("tensorwave", "voltage-park") for _, prov, _ in seen)


@pytest.mark.parametrize("fixture", FIXTURES)
@pytest.mark.parametrize("target", TARGETS)
def test_every_plan_exports_to_parseable_yaml_with_its_counts(fixture, target):
    result = load(fixture)
    for plan in result.plans:
        if not supported(plan, target):
            with pytest.raises(UsageError, match="gpuplan export k8s") as e:
                export_result(result, target, plan.rank)
            assert "\n" not in str(e.value) and plan.provider in str(e.value)
            continue
        ex = export_result(result, target, plan.rank)
        parsed = docs(ex.text)
        assert parsed, "empty export"
        text = ex.text
        assert f"plan rank {plan.rank}" in text.splitlines()[0]
        assert str(plan.gpus) in text.splitlines()[1]
        for w in ex.warnings:
            assert f"# WARNING: {w}" in text


def test_layout_env_matches_the_plan():
    result = load("train_aws_h100_spot.json")
    plan = result.plans[0]
    env = train_env(make_context(plan, result.summary, ExportOptions()))
    lay = plan.layout
    assert (env["TP_SIZE"], env["PP_SIZE"], env["CP_SIZE"], env["DP_SIZE"]) == tuple(
        str(v) for v in (lay.tp, lay.pp, lay.cp, lay.dp))
    assert env["NNODES"] == str(plan.nodes) and env["GPUS_PER_NODE"] == str(int(plan.gpus_per_node))
    assert env["GLOBAL_BATCH"] == str(result.summary["global_batch"])
    assert float(env["CHECKPOINT_INTERVAL_MIN"]) == pytest.approx(plan.checkpoint_interval_min)
    assert env["ZERO_STAGE"] == str(lay.zero) and env["RECOMPUTE"] == lay.recompute


def test_save_interval_steps_follow_the_plans_step_time():
    result = load("train_aws_h100_spot.json")
    plan = result.plans[0]
    ctx = make_context(plan, result.summary, ExportOptions())
    s = result.summary
    step_s = plan.wall_hours * 3600 / (s["tokens"] / (s["global_batch"] * s["seq_len"]))
    assert save_interval_steps(ctx) == int(plan.checkpoint_interval_min * 60 / step_s)
    longer = plan.model_copy(update={"checkpoint_interval_min": plan.checkpoint_interval_min * 4})
    assert save_interval_steps(make_context(longer, s, ExportOptions())) > save_interval_steps(ctx)
    assert save_interval_steps(make_context(plan, {"model": "x"}, ExportOptions())) is None


def test_megatron_flags_follow_layout_and_precision():
    result = load("train_aws_h100_spot.json")
    plan = result.plans[0]
    args = megatron_args(make_context(plan, result.summary, ExportOptions()))
    assert args[args.index("--tensor-model-parallel-size") + 1] == str(plan.layout.tp)
    assert args[args.index("--pipeline-model-parallel-size") + 1] == str(plan.layout.pp)
    assert "--bf16" in args and "--fp8-format" not in args
    fp8 = plan.model_copy(update={"precision": "fp8", "layout": plan.layout.model_copy(update={"recompute": "full"})})
    args8 = megatron_args(make_context(fp8, result.summary, ExportOptions()))
    assert args8[args8.index("--fp8-format") + 1] == "hybrid"
    assert args8[args8.index("--recompute-granularity") + 1] == "full"


def test_no_megatron_args_keeps_env_only():
    result = load("train_lambda_h100.json")
    text = export_plan(result.plans[0], "skypilot", ExportOptions(megatron_args=False, script_args=("--cfg", "a b")),
                       summary=result.summary)
    run = docs(text)[0]["run"]
    assert "--tensor-model-parallel-size" not in run
    assert "train.py --cfg 'a b'" in run
    assert docs(text)[0]["envs"]["TP_SIZE"] == "1"


def test_serving_packs_replicas_per_node_as_data_parallel_engines():
    result = load("serve_runpod_l40s.json")
    plan = result.plans[0].model_copy(update={"gpus_per_node": 8.0, "gpus_per_replica": 2, "nodes": 2, "gpus": 16})
    ctx = make_context(plan, result.summary, ExportOptions())
    assert serve_layout(ctx) == (2, 4, 2)
    text = export_plan(plan, "skypilot", summary=result.summary)
    run = docs(text)[0]["run"]
    assert "--tensor-parallel-size 2" in run and "--data-parallel-size 4" in run
    too_wide = plan.model_copy(update={"gpus_per_replica": 16})
    with pytest.raises(UsageError, match="multi-node serving"):
        export_plan(too_wide, "k8s", summary=result.summary)


def test_serve_model_id_is_the_presets_instruct_checkpoint_or_override():
    result = load("serve_runpod_l40s.json")
    text = export_plan(result.plans[0], "dstack", summary=result.summary)
    assert docs(text)[0]["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct " in docs(text)[0]["commands"][0]
    text = export_plan(result.plans[0], "dstack", ExportOptions(model_id="org/my-finetune"), summary=result.summary)
    assert "vllm serve org/my-finetune " in docs(text)[0]["commands"][0]
    # a preset whose published repo already is the chat model, and a plan made for an exact repo id
    for model, served in [("deepseek-v3", "deepseek-ai/DeepSeek-V3"), ("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct"),
                          ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct"), ("qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct")]:
        text = export_plan(result.plans[0], "k8s", summary={**result.summary, "model": model})
        assert f"vllm serve {served} " in docs(text)[0]["spec"]["template"]["spec"]["containers"][0]["command"][-1]


def test_remote_code_only_for_repos_that_ship_their_own_tokenizer():
    """Kimi's repos load a tokenizer of their own code (data/serving.json remote_code): vLLM and SGLang refuse them
    without --trust-remote-code. Other presets never get the flag."""
    result = load("serve_runpod_l40s.json")
    for model, engine in [("kimi-k2-thinking", "vllm"), ("Kimi-K2.5", "vllm"), ("kimi-k2", "sglang")]:
        text = export_plan(result.plans[0], "k8s", summary={**result.summary, "model": model, "engine": engine})
        cmd = docs(text)[0]["spec"]["template"]["spec"]["containers"][0]["command"][-1]
        assert "--trust-remote-code" in cmd and "moonshotai/Kimi-K2" in cmd
    for model in ("llama-3.1-8b", "deepseek-v3", "gpt-oss-120b"):
        text = export_plan(result.plans[0], "k8s", summary={**result.summary, "model": model})
        assert "--trust-remote-code" not in text


def test_fractional_gpu_plans_are_refused():
    result = load("train_lambda_h100.json")
    base = result.plans[0]
    half = base.model_copy(update={"gpus_per_node": 0.5})
    with pytest.raises(UsageError, match="fractional"):
        export_plan(half, "skypilot", summary=result.summary)


def test_secrets_in_the_environment_never_reach_the_files(monkeypatch):
    fakes = {"HF_TOKEN": "hf_FAKEtoken123456789", "WANDB_API_KEY": "wandbFAKE0987654321",
             "AWS_SECRET_ACCESS_KEY": "awsFAKEsecretKEY/abc", "RUNPOD_API_KEY": "rpFAKEkey555",
             "LAMBDA_API_KEY": "lambdaFAKE777"}
    for k, v in fakes.items():
        monkeypatch.setenv(k, v)
    for fixture in FIXTURES:
        result = load(fixture)
        for plan in result.plans:
            for target in TARGETS:
                if not supported(plan, target):
                    continue
                text = export_result(result, target, plan.rank).text
                for v in fakes.values():
                    assert v not in text
                assert "HF_TOKEN" in text  # referenced by name, to be given at launch


@pytest.mark.parametrize("body, match", [
    ("", "empty"), ("{not json", "not JSON"), ("[1, 2]", "not a plan result"),
    ('{"plans": [{"rank": 1}]}', "invalid plan"),
])
def test_malformed_plan_files_are_one_line_usage_errors(tmp_path, body, match):
    f = tmp_path / "p.json"
    f.write_text(body)
    with pytest.raises(UsageError, match=match) as e:
        load_plan_result(f)
    assert "\n" not in str(e.value)


def test_missing_file_directory_and_bad_rank(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        load_plan_result(tmp_path / "nope.json")
    with pytest.raises(UsageError, match="is a directory"):
        load_plan_result(tmp_path)
    result = load("train_lambda_h100.json")
    with pytest.raises(UsageError, match=r"--rank 9: no such plan; this file has ranks 1..2"):
        export_result(result, "dstack", 9)
    empty = result.model_copy(update={"plans": []})
    with pytest.raises(UsageError, match="no plans"):
        export_result(empty, "dstack")
    with pytest.raises(UsageError, match="unknown export target"):
        export_result(result, "slurm")


def test_options_are_validated():
    for bad in ("Upper", "a", "x" * 42, "has_underscore", "-lead"):
        with pytest.raises(UsageError, match="--name"):
            ExportOptions(name=bad)
    with pytest.raises(UsageError, match="--image"):
        ExportOptions(image="two words")
    with pytest.raises(UsageError, match="--max-restarts"):
        ExportOptions(max_restarts=-1)


def test_write_atomic_replaces_whole_file_and_refuses_directories(tmp_path):
    f = tmp_path / "out.yaml"
    f.write_text("old content that is longer than the new one\n")
    write_atomic(f, "new\n")
    assert f.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.yaml"]  # no temp file left behind
    assert oct(f.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    with pytest.raises(UsageError, match="is a directory"):
        write_atomic(tmp_path, "x")
    with pytest.raises(UsageError, match="does not exist"):
        write_atomic(tmp_path / "missing" / "out.yaml", "x")


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


def test_unsupported_provider_is_a_one_line_error_naming_the_targets_that_work(cli, tmp_path):
    result = load("train_tensorwave_mi300x.json")
    for target, tool, escape in (("skypilot", "SkyPilot", "--infra ssh/<node-pool>"), ("dstack", "dstack", "--fleet")):
        for rank in (1, 2):  # TensorWave, Voltage Park: neither orchestrator has them
            with pytest.raises(UsageError) as e:
                export_result(result, target, rank)
            msg = str(e.value)
            assert "\n" not in msg and msg.startswith(f"{tool} cannot provision on ")
            assert "`gpuplan export k8s`" in msg and escape in msg
    assert "TensorWave (tensorwave)" in str(pytest.raises(UsageError, export_result, result, "skypilot", 1).value)
    out = tmp_path / "task.yaml"
    code, stdout, stderr = cli("export", "skypilot", "--from", PLANS / "train_tensorwave_mi300x.json", "--out", out)
    assert code == 2 and stderr.startswith("error: SkyPilot cannot provision on TensorWave")
    assert stderr.strip().count("\n") == 0 and not out.exists()
    code, _, stderr = cli("export", "dstack", "--from", PLANS / "train_tensorwave_mi300x.json", "--out", out)
    assert code == 2 and "gpuplan export k8s" in stderr and not out.exists()
    # the same plans do launch on Kubernetes, and on the user's own nodes through either orchestrator
    assert docs(export_result(result, "k8s", 1).text)[1]["kind"] == "PyTorchJob"
    sky = docs(export_result(result, "skypilot", 1, ExportOptions(infra="ssh/tw-pool")).text)[0]
    assert sky["resources"]["infra"] == "ssh/tw-pool" and "instance_type" not in sky["resources"]
    ds = export_result(result, "dstack", 1, ExportOptions(fleet="tw-ssh"))
    assert docs(ds.text)[0]["fleets"] == ["tw-ssh"] and "backends" not in docs(ds.text)[0] and not ds.files
    with pytest.raises(UsageError, match="--infra"):
        ExportOptions(infra="aws/us-east-1")


def test_cli_writes_file_and_prints_warnings_and_the_launch_command(cli, tmp_path):
    out = tmp_path / "task.yaml"
    code, stdout, stderr = cli("export", "skypilot", "--from", PLANS / "train_tensorwave_mi300x.json", "--infra",
                               "ssh/tw", "--out", out)
    assert code == 0, stderr
    assert f"wrote {out}" in stderr
    assert stdout.strip() == (f"sky jobs launch -n llama-3-1-70b-train ${{HF_TOKEN:+--secret HF_TOKEN}} "
                              f"${{WANDB_API_KEY:+--secret WANDB_API_KEY}} {out}")
    assert docs(out.read_text())[0]["num_nodes"] == 2
    code, _, stderr = cli("export", "dstack", "--from", PLANS / "train_lambda_h100.json", "--rank", "5", "--out", out)
    assert code == 2 and stderr.strip().count("\n") == 0 and "--rank 5" in stderr
    code, _, stderr = cli("export", "k8s", "--from", PLANS / "train_lambda_h100.json", "--out", tmp_path)
    assert code == 2 and "is a directory" in stderr
    code, stdout, _ = cli("export", "k8s", "--from", PLANS / "train_lambda_h100.json", "--out", tmp_path / "t.k8s.yaml")
    assert code == 0 and stdout.strip() == f"kubectl apply -f {tmp_path / 't.k8s.yaml'}"


def test_cli_writes_the_dstack_cluster_fleet_next_to_the_task(cli, tmp_path):
    plans = tmp_path / "plan.json"
    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--providers", "nebius",
                         "--json")
    assert code == 0, err
    plans.write_text(out)
    rank = first(parse_plan_result(json.loads(out)), fabric="infiniband", multi=True).rank
    task = tmp_path / ".dstack.yml"
    code, stdout, stderr = cli("export", "dstack", "--from", plans, "--rank", rank, "--out", task)
    assert code == 0, stderr
    fleet = tmp_path / "llama-3-1-8b-train-fleet.dstack.yml"
    assert fleet.exists() and docs(fleet.read_text())[0]["placement"] == "cluster"
    assert stdout.strip() == (f"dstack apply -f {fleet} && dstack apply -f {task} ${{HF_TOKEN:+-e HF_TOKEN}} "
                              "${WANDB_API_KEY:+-e WANDB_API_KEY}")
    code, stdout, stderr = cli("export", "dstack", "--from", plans, "--rank", rank)
    assert code == 0 and "fleet.dstack.yml" in stderr and docs(stdout)[0]["fleets"] == ["llama-3-1-8b-train-fleet"]


def test_cli_reads_stdin_via_console_script(tmp_path):
    exe = Path(sys.executable).parent / "gpuplan"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "gpuplan.cli.main"]
    body = (PLANS / "serve_runpod_l40s.json").read_text()
    out = tmp_path / "svc.yaml"
    r = subprocess.run(cmd + ["export", "k8s", "--from", "-", "--rank", "2", "--name", "chat", "--out", str(out)],
                       input=body, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    kinds = [d["kind"] for d in docs(out.read_text())]
    assert kinds == ["Deployment", "Service"]
    assert docs(out.read_text())[0]["spec"]["replicas"] == json.loads(body)["plans"][1]["nodes"]
    r = subprocess.run(cmd + ["export", "k8s", "--from", "-"], input="", capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("error: --from stdin: empty")


def test_build_export_reports_launch_command():
    result = load("serve_runpod_l40s.json")
    ex = build_export(result.plans[0], "sky", summary=result.summary)
    assert ex.target == "skypilot" and ex.launch.startswith("sky serve up")


def test_reserved_plans_warn_that_the_reservation_must_exist():
    result = load("train_lambda_h100.json")
    plan = result.plans[0]
    reserved = plan.model_copy(update={"pricing": "reserved", "offer": plan.offer.model_copy(
        update={"pricing": "reserved", "commitment_term_h": 8760.0})})
    for target in TARGETS:
        ex = build_export(reserved, target, summary=result.summary)
        assert any("reserved capacity (8760 h term)" in w for w in ex.warnings)
    assert not any("reserved" in w for w in build_export(plan, "k8s", summary=result.summary).warnings)


def test_gpus_without_bf16_run_in_fp16():
    result = load("serve_runpod_l40s.json")
    plan = result.plans[0]
    v100 = plan.model_copy(update={"gpu": "V100-SXM2-32GB", "precision": "bf16",
                                   "offer": plan.offer.model_copy(update={"gpu": "V100-SXM2-32GB"})})
    ex = build_export(v100, "k8s", summary={**result.summary, "precision": "bf16", "kv_precision": None})
    cmd = docs(ex.text)[0]["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert "--dtype float16" in cmd and "bfloat16" not in cmd
    assert any("no BF16" in w for w in ex.warnings)
    l40s = build_export(plan.model_copy(update={"precision": "bf16"}), "k8s",
                        summary={**result.summary, "kv_precision": None})
    assert "--dtype bfloat16" in docs(l40s.text)[0]["spec"]["template"]["spec"]["containers"][0]["command"][-1]


# ---------------------------------------------------------------- the fabric the plan assumed

def _k8s_container(text: str) -> dict:
    job = docs(text)[1]
    tmpl = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"] if job["kind"] == "PyTorchJob" \
        else job["spec"]["template"]
    return tmpl["spec"]["containers"][0]


def _k8s_env(text: str) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in _k8s_container(text)["env"]}


def test_nebius_infiniband_plan_asks_every_orchestrator_for_the_fabric(cli):
    result = planned(cli, "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--providers", "nebius")
    plan = first(result, provider="nebius", fabric="infiniband", multi=True)
    assert plan.assumptions["fabric_gbps_per_node"] >= 400
    sky = build_export(plan, "skypilot", summary=result.summary)
    task = docs(sky.text)[0]
    assert task["resources"]["network_tier"] == "best" and task["num_nodes"] == plan.nodes
    assert task["envs"]["NCCL_IB_HCA"] == "mlx5" and task["envs"]["NCCL_IB_DISABLE"] == "0"
    assert task["envs"]["NCCL_DEBUG"] == "INFO" and "NCCL_NET" not in task["envs"]
    assert "NET/IB" in sky.text  # the header says how to check the transport in the logs
    ds = build_export(plan, "dstack", summary=result.summary)
    (fleet_text,) = ds.files.values()
    fleet = docs(fleet_text)[0]
    assert fleet["type"] == "fleet" and fleet["placement"] == "cluster" and fleet["nodes"] == f"0..{plan.nodes}"
    assert fleet["backends"] == ["nebius"] and fleet["resources"]["gpu"].endswith(f":{int(plan.gpus_per_node)}")
    assert docs(ds.text)[0]["fleets"] == [fleet["name"]]
    assert "NCCL_IB_HCA=mlx5" in docs(ds.text)[0]["env"]
    k8s = build_export(plan, "k8s", summary=result.summary)
    c = _k8s_container(k8s.text)
    assert c["resources"]["limits"]["rdma/rdma_shared_device_a"] == 1
    assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert _k8s_env(k8s.text)["NCCL_IB_HCA"] == "mlx5"


def test_aws_efa_plan_gets_efa_interfaces_and_libfabric_settings(cli):
    result = planned(cli, "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--providers", "aws")
    plan = first(result, provider="aws", instance_type="p5.48xlarge", fabric="efa", multi=True)
    task = docs(build_export(plan, "skypilot", summary=result.summary).text)[0]
    assert task["resources"]["network_tier"] == "best" and task["resources"]["instance_type"] == "p5.48xlarge"
    assert task["envs"]["FI_PROVIDER"] == "efa" and task["envs"]["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert "NCCL_IB_GID_INDEX" not in task["envs"]
    ex = build_export(plan, "k8s", summary=result.summary)
    c = _k8s_container(ex.text)
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32  # p5.48xlarge: 32 EFA interfaces
    assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]
    assert "aws-ofi-nccl" in ex.text
    fleet = docs(next(iter(build_export(plan, "dstack", summary=result.summary).files.values())))[0]
    assert fleet["placement"] == "cluster" and fleet["instance_types"] == ["p5.48xlarge"]
    # recent NGC images lack aws-ofi-nccl: the export says so, and the job log warns when it is missing
    sky = build_export(plan, "skypilot", summary=result.summary)
    assert any("aws-ofi-nccl" in w for w in sky.warnings) and "libnccl-net" in docs(sky.text)[0]["setup"]


def test_roce_tcp_and_tcpx_plans(cli):
    oci = planned(cli, "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--providers", "oci")
    plan = first(oci, provider="oci", fabric="roce", multi=True)
    ex = build_export(plan, "skypilot", summary=oci.summary)
    env = docs(ex.text)[0]["envs"]
    assert env["NCCL_IB_GID_INDEX"] == "3" and env["NCCL_IB_TC"] == "41"
    assert "network_tier" not in docs(ex.text)[0]["resources"]  # SkyPilot's OCI has no RDMA cluster networks
    assert any("cluster network" in w for w in ex.warnings)
    assert _k8s_env(build_export(plan, "k8s", summary=oci.summary).text)["NCCL_IB_GID_INDEX"] == "3"
    # TensorWave RoCE: the NIC vendor is not recorded, so NCCL_IB_HCA is left to autodetection
    tw = load("train_tensorwave_mi300x.json").plans[0].model_copy(update={"assumptions": {"fabric": "roce"}})
    env = _k8s_env(build_export(tw, "k8s", summary=load("train_tensorwave_mi300x.json").summary).text)
    assert env["NCCL_IB_GID_INDEX"] == "3" and "NCCL_IB_HCA" not in env
    # a multi-node plan over plain Ethernet: sockets, said plainly, no RDMA resources
    lam = load("train_lambda_h100.json")
    tcp = lam.plans[1].model_copy(update={"assumptions": {"fabric": "ethernet", "fabric_gbps_per_node": 100}})
    ex = build_export(tcp, "k8s", summary=lam.summary)
    assert _k8s_env(ex.text)["NCCL_NET"] == "Socket"
    assert set(_k8s_container(ex.text)["resources"]["limits"]) == {"nvidia.com/gpu"}
    assert any("over ethernet (TCP)" in w for w in ex.warnings)
    sky = docs(build_export(tcp, "skypilot", summary=lam.summary).text)[0]
    assert "network_tier" not in sky["resources"] and sky["envs"]["NCCL_NET"] == "Socket"
    # GCP TCPX: network_tier best (SkyPilot installs Google's plugin), and the k8s file says what it needs
    gcp = planned(cli, "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--providers", "gcp")
    plan = first(gcp, provider="gcp", fabric="tcpx", multi=True)
    assert docs(build_export(plan, "skypilot", summary=gcp.summary).text)[0]["resources"]["network_tier"] == "best"
    text = build_export(plan, "k8s", summary=gcp.summary).text
    assert "plugin" in text and "nccl-plugin-gpudirecttcpx" in text


def test_single_node_and_serving_plans_carry_no_fabric_settings():
    lam = load("train_lambda_h100.json")
    one = build_export(lam.plans[0], "skypilot", summary=lam.summary)
    assert "network_tier" not in docs(one.text)[0]["resources"]
    assert not [k for k in docs(one.text)[0]["envs"] if k.startswith(("NCCL_", "FI_"))]
    svc = load("serve_runpod_l40s.json")
    assert "NCCL_" not in build_export(svc.plans[0], "k8s", summary=svc.summary).text


# ---------------------------------------------------------------- secrets are optional

def test_no_file_declares_a_secret_the_orchestrator_would_require():
    for fixture in ("train_aws_h100_spot.json", "serve_runpod_l40s.json"):
        result = load(fixture)
        sky = export_result(result, "skypilot", 1)
        assert "secrets" not in docs(sky.text)[0]
        assert "${HF_TOKEN:+--secret HF_TOKEN}" in sky.launch and "${WANDB_API_KEY:+--secret WANDB_API_KEY}" in sky.launch
        ds = export_result(result, "dstack", 1)
        assert all("=" in e for e in docs(ds.text)[0]["env"])  # a bare NAME fails `dstack apply` when unset
        assert "${HF_TOKEN:+-e HF_TOKEN}" in ds.launch
        env = _k8s_env(export_result(result, "k8s", 1).text) if result.workload == "train" else {}
        assert "HF_TOKEN" in env or result.workload == "serve"


def test_launch_lines_pass_only_the_secrets_that_are_set():
    """The shell expands each `${NAME:+flag NAME}` to nothing when NAME is unset or empty."""
    result = load("serve_runpod_l40s.json")
    for target, flag in (("skypilot", "--secret"), ("dstack", "-e")):
        launch = export_result(result, target, 1).launch.replace("<this file>", "svc.yaml")
        for env, want in [({"HF_TOKEN": "x"}, f"{flag} HF_TOKEN"), ({"HF_TOKEN": ""}, None), ({}, None)]:
            r = subprocess.run(["bash", "-c", f"echo {launch}"], env={"PATH": os.environ["PATH"], **env},
                               capture_output=True, text=True)
            words = r.stdout.split()
            assert "svc.yaml" in words and "WANDB_API_KEY" not in words
            assert (want in " ".join(words)) if want else "HF_TOKEN" not in words


# ---------------------------------------------------------------- launchers match layout and ZeRO

def test_model_parallel_layout_launches_megatron_with_the_models_shape():
    result = load("train_aws_h100_spot.json")  # llama-3.1-70b, tp=8 pp=2 dp=2, ZeRO-1
    plan = result.plans[0]
    task = docs(export_result(result, "skypilot", 1).text)[0]
    run = task["run"]
    assert "/opt/Megatron-LM/pretrain_gpt.py" in run and "train.py" not in run
    assert "git clone --depth 1 --branch core_v0.15.0 https://github.com/NVIDIA/Megatron-LM.git" in task["setup"]
    for flag in ("--tensor-model-parallel-size 8", "--pipeline-model-parallel-size 2", "--sequence-parallel",
                 "--num-layers 80", "--hidden-size 8192", "--num-attention-heads 64", "--group-query-attention",
                 "--num-query-groups 8", "--ffn-hidden-size 28672", "--swiglu", "--normalization RMSNorm",
                 "--use-distributed-optimizer", "--tokenizer-model meta-llama/Llama-3.1-70B",
                 "--seq-length 8192", "--global-batch-size 512", f"--train-samples {int(2e10 / 8192)}",
                 '--data-path "$DATA_PATH"'):
        assert flag in run, flag
    assert "--use-megatron-fsdp" not in run and task["envs"]["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert task["resources"]["image_id"] == "docker:nvcr.io/nvidia/pytorch:25.09-py3"
    assert 'if [ -z "${DATA_PATH:-}" ]' in run  # fails fast instead of training on nothing
    # ZeRO-3 with pipeline parallelism: Megatron-FSDP shards parameters too, never ZeRO-1-style
    z3 = plan.model_copy(update={"layout": plan.layout.model_copy(update={"zero": 3})})
    t3 = docs(build_export(z3, "skypilot", summary=result.summary).text)[0]
    assert "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params" in t3["run"]
    assert "--ckpt-format fsdp_dtensor" in t3["run"] and "CUDA_DEVICE_MAX_CONNECTIONS" not in t3["envs"]
    z2 = plan.model_copy(update={"layout": plan.layout.model_copy(update={"zero": 2})})
    assert "--data-parallel-sharding-strategy optim_grads " in megatron_args_line(z2, result.summary)


def test_folded_experts_launch_with_their_own_tensor_parallel_size():
    result = load("train_aws_h100_spot.json")  # tp=8
    plan = result.plans[0]
    split = plan.model_copy(update={"layout": plan.layout.model_copy(update={"ep": 8})})
    folded = plan.model_copy(update={"layout": plan.layout.model_copy(update={"ep": 8, "etp": 1})})
    assert "--expert-tensor-parallel-size" not in megatron_args_line(split, result.summary)  # Megatron's default: tp
    assert "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 " in megatron_args_line(folded,
                                                                                              result.summary)
    assert train_env(make_context(folded, result.summary, ExportOptions()))["ETP_SIZE"] == "1"
    assert train_env(make_context(split, result.summary, ExportOptions()))["ETP_SIZE"] == "8"
    assert "ep=8, etp=1): Megatron-LM" in build_export(folded, "skypilot", summary=result.summary).text
    assert "etp=" not in build_export(split, "skypilot", summary=result.summary).text


def megatron_args_line(plan, summary) -> str:
    return " ".join(megatron_args(make_context(plan, summary, ExportOptions()))) + " "


def test_pure_data_parallel_layout_shards_as_its_zero_stage():
    result = load("train_lambda_h100.json")  # tp=pp=1, ZeRO-2
    base = result.plans[0]
    cases = {3: "--use_fsdp --fsdp_version 1 --fsdp_sharding_strategy FULL_SHARD",
             2: "--use_fsdp --fsdp_version 1 --fsdp_sharding_strategy SHARD_GRAD_OP",
             1: "--use_deepspeed --zero_stage 1", None: "--multi_gpu"}
    for zero, want in cases.items():
        plan = base.model_copy(update={"layout": base.layout.model_copy(update={"zero": zero})})
        for target in TARGETS:
            text = build_export(plan, target, summary=result.summary).text
            assert want in text, (zero, target)
            assert "--tensor-model-parallel-size" not in text and "pretrain_gpt.py" not in text
            assert "accelerate launch --num_machines 1 --num_processes 8" in text
    run = docs(build_export(result.plans[1], "skypilot", summary=result.summary).text)[0]["run"]
    assert '--machine_rank "$SKYPILOT_NODE_RANK" --main_process_ip "$MASTER_ADDR"' in run
    assert "--num_machines 2 --num_processes 16" in run
    with pytest.raises(UsageError, match=r"^dstack cannot run a 2-node task on Lambda \(lambda\): dstack's lambda "
                                         r"backend has no multi-node support; export plan rank 2 with `gpuplan export "
                                         r"skypilot` or `gpuplan export k8s`"):
        build_export(result.plans[1], "dstack", summary=result.summary)
    ds1 = base.model_copy(update={"nodes": 2, "gpus": 16, "layout": base.layout.model_copy(update={"zero": 1, "dp": 16})})
    assert "--deepspeed_multinode_launcher standard" in build_export(ds1, "k8s", summary=result.summary).text
    assert "pip install 'accelerate>=1.0' deepspeed" in build_export(ds1, "k8s", summary=result.summary).text


def test_an_fp8_data_parallel_launch_says_its_casts_are_not_fused():
    """Plans time FP8 for Megatron's fused casts; a pure data-parallel plan launches `accelerate` (TransformerEngine
    linears outside Megatron), so its export warns that FP8 steps run slower than planned; bf16 exports do not."""
    result = load("train_lambda_h100.json")  # tp=pp=1
    base = result.plans[0]
    fp8 = build_export(base.model_copy(update={"precision": "fp8"}), "skypilot", summary=result.summary)
    assert "--mixed_precision fp8" in fp8.text
    assert any("--framework pytorch" in w and "fused casts" in w for w in fp8.warnings)
    bf16 = build_export(base, "skypilot", summary=result.summary)
    assert not any("fused casts" in w for w in bf16.warnings)


def test_a_plan_timed_for_a_pytorch_stack_does_not_launch_the_megatron_template():
    """A model-parallel plan made with --framework pytorch was timed for torchtitan / FSDP2: the Megatron-LM template
    would run another stack, so the export asks for the user's entry point (one line) and launches it when given."""
    aws = load("train_aws_h100_spot.json")  # tp=8: the Megatron template by default
    plan, summary = aws.plans[0], {**aws.summary, "framework": "pytorch"}
    assert "pretrain_gpt.py" in build_export(plan, "skypilot", summary=aws.summary).text
    with pytest.raises(UsageError, match=r"^the plan was timed for a PyTorch-native stack .* pass --script"):
        build_export(plan, "skypilot", summary=summary)
    text = build_export(plan, "skypilot", summary=summary, options=ExportOptions(script="train_titan.py")).text
    assert "train_titan.py" in text and "pretrain_gpt.py" not in text
    # a pure data-parallel FP8 plan timed for the PyTorch stack needs no warning about unfused casts
    lam = load("train_lambda_h100.json")
    fp8 = lam.plans[0].model_copy(update={"precision": "fp8"})
    quiet = build_export(fp8, "skypilot", summary={**lam.summary, "framework": "pytorch"})
    assert "--mixed_precision fp8" in quiet.text and not any("fused casts" in w for w in quiet.warnings)


def test_user_script_is_kept():
    aws = load("train_aws_h100_spot.json")
    run = docs(export_result(aws, "skypilot", 1, ExportOptions(script="pretrain_mine.py")).text)[0]["run"]
    assert "pretrain_mine.py --tensor-model-parallel-size 8" in run and "pretrain_gpt.py" not in run
    lam = load("train_lambda_h100.json")
    run = docs(export_result(lam, "skypilot", 1, ExportOptions(script="sft.py", script_args=("--lr", "1e-5"))).text)[0]["run"]
    assert "--mixed_precision bf16 sft.py --lr 1e-5" in run and "--zero_stage" not in run  # ZeRO-2: FSDP


def test_amd_training_runs_rocm_images():
    result = load("train_tensorwave_mi300x.json")  # MI300X, tp=8: Megatron on ROCm
    k8s = _k8s_container(export_result(result, "k8s", 1).text)
    assert k8s["image"] == "rocm/megatron-lm:v25.5_py310" and "amd.com/gpu" in k8s["resources"]["limits"]
    assert "/workspace/Megatron-LM/pretrain_gpt.py" in k8s["command"][-1] and "git clone" not in k8s["command"][-1]
    sky = docs(export_result(result, "skypilot", 1, ExportOptions(infra="k8s")).text)[0]
    assert sky["resources"]["image_id"] == "docker:rocm/megatron-lm:v25.5_py310"
    dp = result.plans[0].model_copy(update={"layout": result.plans[0].layout.model_copy(update={"tp": 1, "dp": 16})})
    assert _k8s_container(build_export(dp, "k8s", summary=result.summary).text)["image"].startswith("rocm/pytorch")


# ---------------------------------------------------------------- serving

def test_serving_context_precision_and_batch_follow_the_plan(cli):
    result = planned(cli, "serve", "--model", "llama-3.1-8b", "--requests-per-s", "2", "--input-len", "8000",
                     "--output-len", "1000", "--providers", "nebius,runpod,lambda")
    plan = result.plans[0]
    cmd = docs(build_export(plan, "skypilot", summary=result.summary).text)[0]["run"]
    assert "--max-model-len 9000" in cmd and "1250" not in cmd
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct " in cmd and "--dtype bfloat16" in cmd
    mem = plan.assumptions.get("memory_fraction")
    if mem:
        assert f"--gpu-memory-utilization {mem:g}" in cmd
    # DeepSeek-V3's published checkpoint is FP8: served as is, not re-quantized
    ds = load("serve_runpod_l40s.json")
    fp8 = build_export(ds.plans[0].model_copy(update={"precision": "fp8"}), "k8s",
                       summary={**ds.summary, "model": "deepseek-v3", "precision": "fp8", "kv_precision": None})
    line = docs(fp8.text)[0]["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert "vllm serve deepseek-ai/DeepSeek-V3 " in line and "--quantization" not in line
    # a BF16 model planned at FP8 is quantized when loaded
    assert "--quantization fp8" in docs(export_result(ds, "k8s", 1).text)[0]["spec"]["template"]["spec"][
        "containers"][0]["command"][-1]


def test_amd_and_gaudi_serving_use_their_vendors_images():
    result = load("serve_runpod_l40s.json")
    plan = result.plans[0]
    mi = plan.model_copy(update={"gpu": "MI300X", "offer": plan.offer.model_copy(update={"gpu": "MI300X"})})
    sky = docs(build_export(mi, "skypilot", summary=result.summary).text)[0]
    assert sky["resources"]["image_id"] == "docker:rocm/vllm:latest"
    assert "setup" not in sky  # never `pip install vllm` (a CUDA build) on AMD
    assert docs(build_export(mi, "dstack", summary=result.summary).text)[0]["image"] == "rocm/vllm:latest"
    k8s = docs(build_export(mi, "k8s", summary=result.summary).text)[0]["spec"]["template"]["spec"]["containers"][0]
    assert k8s["image"] == "rocm/vllm:latest" and k8s["resources"]["limits"] == {"amd.com/gpu": 1}
    g2 = plan.model_copy(update={"gpu": "Gaudi2", "offer": plan.offer.model_copy(update={"gpu": "Gaudi2"})})
    ex = build_export(g2, "k8s", summary=result.summary)
    c = docs(ex.text)[0]["spec"]["template"]["spec"]["containers"][0]
    assert c["image"].startswith("vault.habana.ai/gaudi-docker/") and "habana.ai/gaudi" in c["resources"]["limits"]
    assert any("vllm-gaudi" in w for w in ex.warnings)
    nv = docs(build_export(plan, "skypilot", summary=result.summary).text)[0]
    assert nv["setup"].strip() == "pip install vllm"


def test_megatron_moe_layer_pattern_follows_the_model():
    """Maverick alternates dense and MoE layers; DeepSeek-V3 has 3 leading dense layers."""
    from gpuplan.export.common import megatron_model_args

    result = load("train_aws_h100_spot.json")

    def freq(model: str) -> str:
        summary = dict(result.summary, model=model)
        args = megatron_model_args(make_context(result.plans[0], summary, ExportOptions()))
        return args[args.index("--moe-layer-freq") + 1]

    mav = freq("llama-4-maverick")
    mask = [int(x) for x in mav.strip("[]").split(",")]
    assert len(mask) == 48 and sum(mask) == 24 and mask[0] == 0 and mask[1] == 1
    assert freq("deepseek-v3") == "([0]*3+[1]*58)"


def test_moe_launch_runs_a_grouped_gemm_and_an_all_to_all_and_warns_when_ep_leaves_the_nvlink_domain():
    """Megatron's defaults (one GEMM per expert, all-gather dispatch) are not what the estimate times; an EP group
    beyond the node is timed as DeepEP / HybridEP run it, which the exported NCCL all-to-all is not."""
    from gpuplan.export.common import megatron_model_args

    result = load("train_aws_h100_spot.json")  # H100, 8 GPUs per node
    plan = result.plans[0]
    summary = dict(result.summary, model="qwen3-235b-a22b")

    def launch(**layout):
        p = plan.model_copy(update={"layout": plan.layout.model_copy(update=layout)})
        ctx = make_context(p, summary, ExportOptions())
        return " ".join(megatron_model_args(ctx) + megatron_args(ctx)) + " ", ctx.warnings

    line, warnings = launch(tp=1, pp=8, ep=8, etp=None)
    for flag in ("--moe-grouped-gemm", "--moe-token-dispatcher-type alltoall", "--moe-router-dtype fp32",
                 "--moe-permute-fusion"):
        assert flag in line, flag
    assert not any("NVLink domain" in w for w in warnings)  # EP8 inside the node
    _, warnings = launch(tp=2, pp=8, ep=32, etp=1)  # folded: 32 consecutive ranks, four nodes
    assert any("EP32) leaves the NVLink domain" in w and "--moe-enable-deepep" in w for w in warnings)
    _, warnings = launch(tp=2, pp=8, ep=8, etp=None)  # not folded: EP8 ranks 2 apart, two nodes
    assert any("EP8) leaves the NVLink domain" in w for w in warnings)
    dense = " ".join(megatron_model_args(make_context(plan, result.summary, ExportOptions())))
    assert "--moe-grouped-gemm" not in dense
    amd = plan.model_copy(update={"gpu": "MI300X", "layout": plan.layout.model_copy(update={"tp": 1, "pp": 8,
                                                                                          "ep": 32, "etp": None})})
    ctx = make_context(amd, summary, ExportOptions())
    line = " ".join(megatron_model_args(ctx) + megatron_args(ctx)) + " "
    assert "--moe-token-dispatcher-type alltoall" in line and "--moe-grouped-gemm" not in line
    assert any("does not pass --moe-grouped-gemm" in w for w in ctx.warnings)
    assert any("EP32) leaves" in w and "fork's tuned dispatcher" in w and "DeepEP in the image" not in w
               for w in ctx.warnings)


# ---------------------------------------------------------------- Megatron flags: the plan's gradients and overlap

MEGATRON_FLAGS = Path(__file__).parent / "fixtures" / "sources" / "megatron_core_v0.15.0_flags.txt"


def test_megatron_launch_reduces_gradients_as_the_plan_assumed_and_overlaps_them():
    """Under --bf16 Megatron keeps fp32 gradient buffers and reduces in fp32, after the backward, unless told
    otherwise; the plan's memory and step time assume bf16 gradients reduced behind the compute."""
    result = load("train_aws_h100_spot.json")  # H100, tp=8, ZeRO-1, bf16
    plan = result.plans[0]
    line = megatron_args_line(plan, result.summary)
    for flag in ("--overlap-grad-reduce", "--overlap-param-gather", "--grad-reduce-in-bf16"):
        assert f"{flag} " in line, flag
    assert "--grad-reduce-in-bf16" not in megatron_args_line(plan, dict(result.summary, gradient_bytes=4))
    z0 = plan.model_copy(update={"layout": plan.layout.model_copy(update={"zero": 0})})
    assert "--overlap-grad-reduce " in megatron_args_line(z0, result.summary)
    assert "--overlap-param-gather" not in megatron_args_line(z0, result.summary)  # needs a sharded optimizer
    fp16 = plan.model_copy(update={"precision": "fp16"})
    assert "--grad-reduce-in-bf16" not in megatron_args_line(fp16, result.summary)
    amd = plan.model_copy(update={"gpu": "MI300X"})
    ctx = make_context(amd, result.summary, ExportOptions())
    assert "--grad-reduce-in-bf16" not in megatron_args(ctx) and "--overlap-grad-reduce" in megatron_args(ctx)
    assert any("fp32 buffers" in w and "--grad-reduce-in-bf16" in w for w in ctx.warnings)


@pytest.mark.parametrize("layout", [dict(), dict(zero=0), dict(zero=2), dict(zero=3, cp=2),
                                    dict(tp=1, pp=8, ep=8, etp=None), dict(tp=2, pp=8, ep=32, etp=1, vp=2)])
def test_every_flag_the_megatron_launch_passes_is_one_the_pinned_release_parses(layout):
    """The option strings of Megatron-LM core_v0.15.0's argument parser, cut from its arguments.py: a misspelt or
    retired flag would stop the exported job at start-up."""
    from gpuplan.export.common import data_map

    header = MEGATRON_FLAGS.read_text().splitlines()
    assert data_map("training")["megatron"]["ref"] in header[1]  # the list is the pinned release's
    known = {w for w in header if w.startswith("--")}
    result = load("train_aws_h100_spot.json")
    plan = result.plans[0]
    plan = plan.model_copy(update={"layout": plan.layout.model_copy(update=layout)})
    summary = dict(result.summary, model="qwen3-235b-a22b" if layout.get("ep") else result.summary["model"])
    run = docs(build_export(plan, "skypilot", summary=summary).text)[0]["run"]
    words = run[run.index("pretrain_gpt.py"):].split()
    flags = {w for w in words if w.startswith("--")}
    assert {"--tensor-model-parallel-size", "--overlap-grad-reduce", "--bf16"} <= flags
    assert flags - known == set()


def test_megatron_launch_interleaves_and_splits_uneven_stages_as_the_plan_timed():
    """Megatron refuses a layer count that does not divide over the stages, and runs plain 1F1B unless told the
    interleaved chunks; the plan times ceil(layers / pp) on its fullest stage and vp chunks per stage."""
    result = load("train_aws_h100_spot.json")  # llama-3.1-70b: 80 layers

    def line(vendor_gpu="H100-SXM", **layout):
        plan = result.plans[0]
        p = plan.model_copy(update={"gpu": vendor_gpu, "layout": plan.layout.model_copy(update=layout)})
        ctx = make_context(p, result.summary, ExportOptions())
        return " ".join(megatron_args(ctx)) + " ", ctx.warnings

    even, _ = line(pp=4, vp=1)
    assert "--num-layers-per-virtual-pipeline-stage" not in even and "--pipeline-model-parallel-layout" not in even
    assert "--num-layers-per-virtual-pipeline-stage 4 " in line(pp=4, vp=5)[0]  # 20 layers per stage, 5 chunks
    three, _ = line(pp=3, vp=1)
    assert "--pipeline-model-parallel-layout Et*27|t*27|t*26L " in three
    chunks, _ = line(pp=3, vp=2)  # chunk k of stage s is entry k * pp + s: stages hold 27, 27, 26 layers
    layout = chunks.split("--pipeline-model-parallel-layout ")[1].split()[0]
    sizes = [int(c.strip("EL").split("*")[1]) for c in layout.split("|")]
    assert len(sizes) == 6 and sum(sizes) == 80
    assert sorted(sum(sizes[s::3]) for s in range(3)) == [26, 27, 27]
    amd, warnings = line("MI300X", pp=3, vp=1)  # the ROCm fork's flags: the last stage's size
    assert "--decoder-last-pipeline-num-layers 26 " in amd and "--pipeline-model-parallel-layout" not in amd
    amd, warnings = line("MI300X", pp=3, vp=2)
    assert "--pipeline-model-parallel-layout" not in amd and any("without interleaving" in w for w in warnings)
    assert "VP2" in layout_text(result.plans[0].layout.model_copy(update={"pp": 3, "vp": 2}))


def test_a_planned_interleaved_pipeline_is_launched_interleaved(cli):
    """The planner's record keeps the interleaved chunks it timed, and the launch runs them, in whole groups of pp."""
    result = planned(cli, "train", "--model", "llama-3.1-70b", "--tokens", "2e12", "--providers", "nebius")
    plan = next((p for p in result.plans if p.layout.pp > 1 and p.layout.vp > 1), None)
    assert plan is not None, [p.layout for p in result.plans]
    lay = plan.layout
    assert f"PP{lay.pp} VP{lay.vp}" in layout_text(lay)
    assert train_env(make_context(plan, result.summary, ExportOptions()))["VP_SIZE"] == str(lay.vp)
    text = build_export(plan, "skypilot", summary=result.summary).text
    run = docs(text)[0]["run"]
    assert f"--num-layers-per-virtual-pipeline-stage {80 // lay.pp // lay.vp} " in run
    assert "(RoPE base, QK-norm) stay Megatron's defaults: add your model's with --arg" in text
    batch = int(run.split("--global-batch-size ")[1].split()[0])
    assert (batch // (lay.dp * lay.micro_batch)) % lay.pp == 0


def test_a_fine_tuning_plan_is_not_launched_as_megatron_pretraining(cli):
    """pretrain_gpt.py trains every weight from random initialisation: a LoRA / QLoRA or full fine-tuning plan with
    model parallelism needs the user's fine-tuning entry point, and says so; with --script it launches that."""
    result = planned(cli, "train", "--model", "llama-3.1-70b", "--method", "qlora", "--tokens", "1e8",
                     "--providers", "aws")
    assert result.summary["kind"] == "finetune"
    plan = next((p for p in result.plans if p.layout.tp * p.layout.pp > 1), None)
    assert plan is not None, [p.layout for p in result.plans]
    with pytest.raises(UsageError, match="fine-tunes llama-3.1-70b .qlora. with model parallelism.*pass --script"):
        build_export(plan, "skypilot", summary=result.summary)
    run = docs(build_export(plan, "skypilot", summary=result.summary,
                            options=ExportOptions(script="finetune.py")).text)[0]["run"]
    assert "finetune.py" in run and "pretrain_gpt.py" not in run
    full = dict(result.summary, kind="finetune", method="full")  # full fine-tuning over a data set's epochs
    with pytest.raises(UsageError, match=r"fine-tunes llama-3.1-70b \(full\)"):
        build_export(plan, "skypilot", summary=full)
    pre = dict(result.summary, kind="pretrain", method="full")
    assert "pretrain_gpt.py" in docs(build_export(plan, "skypilot", summary=pre).text)[0]["run"]


def test_pure_data_parallel_pretraining_runs_the_stack_it_was_timed_on(cli):
    """The main job's #1 (Llama 3.1 8B, DP32 ZeRO-1) is timed on Megatron's stack: its file launches Megatron-LM with
    the distributed optimizer, not a user's Accelerate loop; plans timed for a PyTorch-native stack, fine-tunes and
    plan files that do not say their kind keep the accelerate launch."""
    result = planned(cli, "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--providers", "nebius")
    plan = next(p for p in result.plans if max(p.layout.tp, p.layout.pp, p.layout.cp, p.layout.ep) == 1)
    assert result.summary["kind"] == "pretrain" and result.summary["framework"] == "megatron"
    run = docs(build_export(plan, "skypilot", summary=result.summary).text)[0]["run"]
    assert "pretrain_gpt.py" in run and "accelerate launch" not in run
    flags = ("--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 "
             f"--micro-batch-size {plan.layout.micro_batch} ")
    assert flags in run and "--use-distributed-optimizer" in run
    for summary in (dict(result.summary, framework="pytorch"), dict(result.summary, kind="finetune"),
                    {k: v for k, v in result.summary.items() if k != "kind"}):
        assert "accelerate launch" in docs(build_export(plan, "skypilot", summary=summary).text)[0]["run"]
    scripted = build_export(plan, "skypilot", summary=result.summary, options=ExportOptions(script="my_train.py"))
    assert "accelerate launch" in docs(scripted.text)[0]["run"] and "my_train.py" in scripted.text


def test_a_plan_file_whose_vp_is_null_or_absent_exports_plain_1f1b(cli, tmp_path):
    """A plan file written before the interleaved chunks were recorded (no vp) or by hand (vp: null) launches
    without interleaving, the same file either way, instead of failing on the missing number."""
    data = json.loads((PLANS / "train_lambda_h100.json").read_text())
    texts = []
    for value in ("absent", None, 1):
        lay = data["plans"][0]["layout"]
        lay.pop("vp", None)
        if value != "absent":
            lay["vp"] = value
        path = tmp_path / f"plan_{value}.json"
        path.write_text(json.dumps(data))
        code, stdout, stderr = cli("export", "skypilot", "--from", path, "--rank", "1")
        assert code == 0, stderr
        texts.append(stdout)
    assert texts[0] == texts[1] == texts[2]
    code, _, stderr = cli("export", "skypilot", "--from", _with_vp(data, tmp_path, "two"), "--rank", "1")
    assert code == 2 and "layout.vp" in stderr and stderr.strip().count("\n") == 0


def _with_vp(data: dict, tmp_path: Path, value) -> Path:
    data["plans"][0]["layout"]["vp"] = value
    path = tmp_path / "plan_bad_vp.json"
    path.write_text(json.dumps(data))
    return path
