"""Exports without the orchestrators installed: plan loading, the launch environment, safety."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuplan.errors import UsageError
from gpuplan.export import ExportOptions, build_export, export_plan, export_result, load_plan_result, write_atomic
from gpuplan.export.common import make_context, megatron_args, save_interval_steps, serve_layout, train_env

PLANS = Path(__file__).parent / "fixtures" / "plans"
FIXTURES = sorted(p.name for p in PLANS.glob("*.json"))
TARGETS = ("skypilot", "dstack", "k8s")


def load(name: str):
    return load_plan_result(PLANS / name)


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


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


def test_serve_model_id_comes_from_the_preset_source_or_override():
    result = load("serve_runpod_l40s.json")
    text = export_plan(result.plans[0], "dstack", summary=result.summary)
    assert docs(text)[0]["model"] == "meta-llama/Llama-3.1-8B"
    text = export_plan(result.plans[0], "dstack", ExportOptions(model_id="meta-llama/Llama-3.1-8B-Instruct"),
                       summary=result.summary)
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct" in docs(text)[0]["commands"][0]


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
                text = export_result(result, target, plan.rank).text
                for v in fakes.values():
                    assert v not in text
                assert "HF_TOKEN" in text  # referenced by name, to be given at launch


@pytest.mark.parametrize("body, match", [
    ("", "empty"), ("{not json", "not JSON"), ("[1, 2]", "not a plan result"),
    ('{"plans": [{"rank": 1}]}', "invalid plan at"),
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


def test_unsupported_provider_is_said_in_file_and_warnings():
    result = load("train_tensorwave_mi300x.json")
    for target in ("skypilot", "dstack"):
        ex = export_result(result, target, 1)
        assert any("tensorwave" in w.lower() for w in ex.warnings)
        assert ex.text.startswith("#") and "WARNING: " in ex.text and "TensorWave" in ex.text
    vp = export_result(result, "skypilot", 2)
    assert any("voltage-park" in w for w in vp.warnings)
    assert "infra" not in docs(vp.text)[0]["resources"]


def test_cli_writes_file_and_prints_warnings(cli, tmp_path):
    out = tmp_path / "task.yaml"
    code, stdout, stderr = cli("export", "skypilot", "--from", PLANS / "train_tensorwave_mi300x.json", "--out", out)
    assert code == 0, stderr
    assert "warning: SkyPilot does not support provider 'tensorwave'" in stderr
    assert docs(out.read_text())[0]["num_nodes"] == 2
    code, _, stderr = cli("export", "dstack", "--from", PLANS / "train_lambda_h100.json", "--rank", "5", "--out", out)
    assert code == 2 and stderr.strip().count("\n") == 0 and "--rank 5" in stderr
    code, _, stderr = cli("export", "k8s", "--from", PLANS / "train_lambda_h100.json", "--out", tmp_path)
    assert code == 2 and "is a directory" in stderr


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
