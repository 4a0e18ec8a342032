"""dstack exports, parsed by dstack's own configuration models (skipped when `dstack` is not installed)."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import yaml

from gpuplan.export import ExportOptions, build_export, export_result, load_plan_result, parse_plan_result
from gpuplan.export.common import supported_targets

PLANS = Path(__file__).parent / "fixtures" / "plans"
# Plans dstack can run (the rest are a one-line error: tests/test_export_common.py).
CASES = [(f.name, p.rank) for f in sorted(PLANS.glob("*.json")) for p in load_plan_result(f).plans
         if "dstack" in supported_targets(p.provider, p.workload == "train" and p.nodes > 1)]


def _data(name: str) -> dict:
    return json.loads(resources.files("gpuplan.export").joinpath("data", f"{name}.json").read_text())


def test_gpu_names_and_memory_are_gpuhunts():
    """dstack matches offers by gpuhunt's GPU table: every name+memory we emit must be in it."""
    constraints = pytest.importorskip("gpuhunt._internal.constraints")
    known = {(g.name, int(g.memory)) for g in constraints.KNOWN_NVIDIA_GPUS + constraints.KNOWN_AMD_GPUS
             + constraints.KNOWN_INTEL_ACCELERATORS}
    for gpu, (name, memory) in _data("dstack")["gpus"].items():
        assert (name, int(memory.removesuffix("GB"))) in known, (gpu, name, memory)


def test_backend_names_are_dstacks():
    base = pytest.importorskip("dstack._internal.core.models.backends.base")
    values = {b.value for b in base.BackendType}
    for provider, backend in _data("dstack")["backends"].items():
        assert backend in values, (provider, backend)


@pytest.mark.parametrize("fixture, rank", CASES)
def test_configuration_parses_in_dstack_as_planned(fixture, rank):
    configs = pytest.importorskip("dstack._internal.core.models.configurations")
    result = load_plan_result(PLANS / fixture)
    plan = next(p for p in result.plans if p.rank == rank)
    ex = export_result(result, "dstack", rank)
    conf = configs.parse_run_configuration(yaml.safe_load(ex.text))

    gpu = conf.resources.gpu
    name, memory = _data("dstack")["gpus"][plan.gpu]
    assert gpu.name == [name]
    assert gpu.count.min == gpu.count.max == plan.gpus_per_node
    assert gpu.memory.min == gpu.memory.max and float(gpu.memory.min) == float(memory.removesuffix("GB"))
    assert conf.spot_policy.value == ("spot" if plan.offer.preemptible else "on-demand")
    backend = _data("dstack")["backends"][plan.provider]
    assert [b.value for b in conf.backends] == [backend]
    assert conf.max_price >= plan.offer.price_per_hour_usd
    # no bare NAME (dstack fails `apply` when it is unset): the launch line adds each secret only if set
    assert "HF_TOKEN" not in conf.env and "WANDB_API_KEY" not in conf.env
    assert "${HF_TOKEN:+-e HF_TOKEN}" in ex.launch
    if plan.workload == "train":
        assert conf.type == "task" and conf.nodes == plan.nodes
        assert conf.env["PP_SIZE"] == str(plan.layout.pp)
        assert {e.value for e in conf.retry.on_events} >= {"interruption", "no-capacity"}
        assert conf.retry.duration >= plan.wall_hours * 3600
        launch = conf.commands[-1]
        if plan.nodes > 1:
            assert "$DSTACK_NODE_RANK" in launch and "$DSTACK_MASTER_NODE_IP" in launch
            _check_cluster_fleet(configs, ex, plan, conf)
        else:
            assert "--standalone" in launch or "accelerate launch --num_machines 1 " in launch
    else:
        assert conf.type == "service" and conf.port.container_port == 8000
        assert conf.replicas.min == conf.replicas.max == plan.nodes
        assert conf.probes[0].url == "/health"


def _check_cluster_fleet(configs, ex, plan, conf) -> None:
    """The multi-node task's fleet parses as a dstack fleet with cluster placement, and the task uses it."""
    (text,) = ex.files.values()
    fleet = configs.parse_apply_configuration(yaml.safe_load(text))
    assert fleet.type == "fleet" and fleet.placement.value == "cluster"
    assert fleet.nodes.min == 0 and fleet.nodes.max == plan.nodes
    assert [b.value for b in fleet.backends] == [b.value for b in conf.backends]
    assert fleet.resources.gpu.count.min == plan.gpus_per_node
    assert [f.name for f in conf.fleets] == [fleet.name]
    assert ex.launch.startswith(f"dstack apply -f {fleet.name}.dstack.yml && dstack apply -f <this file>")


@pytest.mark.parametrize("provider, fabric, env", [
    ("nebius", "infiniband", "NCCL_IB_HCA=mlx5"),
    ("aws", "efa", "FI_PROVIDER=efa"),
])
def test_multi_node_fast_fabric_task_and_fleet_parse_in_dstack(cli, provider, fabric, env):
    configs = pytest.importorskip("dstack._internal.core.models.configurations")
    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--providers", provider,
                         "--json")
    assert code == 0, err
    result = parse_plan_result(json.loads(out))
    plan = next((p for p in sorted(result.plans, key=lambda p: p.rank)
                 if p.nodes > 1 and p.assumptions.get("fabric") == fabric), None)
    assert plan is not None, f"the planner ranked no multi-node {provider} plan on {fabric}"
    ex = build_export(plan, "dstack", summary=result.summary)
    conf = configs.parse_run_configuration(yaml.safe_load(ex.text))
    assert conf.type == "task" and conf.nodes == plan.nodes
    assert conf.env[env.split("=")[0]] == env.split("=")[1] and conf.env["NCCL_DEBUG"] == "INFO"
    assert "pretrain_gpt.py" in conf.commands[-1]  # pre-training timed on Megatron's stack, whatever the layout
    _check_cluster_fleet(configs, ex, plan, conf)


def test_existing_fleet_runs_unsupported_providers():
    configs = pytest.importorskip("dstack._internal.core.models.configurations")
    result = load_plan_result(PLANS / "train_tensorwave_mi300x.json")
    ex = export_result(result, "dstack", 1, ExportOptions(fleet="tensorwave-ssh"))
    conf = configs.parse_run_configuration(yaml.safe_load(ex.text))
    assert [f.name for f in conf.fleets] == ["tensorwave-ssh"] and conf.backends is None and conf.image == "rocm/megatron-lm:v25.5_py310"
