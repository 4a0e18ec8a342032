"""dstack exports, parsed by dstack's own configuration models (skipped when `dstack` is not installed)."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import yaml

from gpuplan.export import export_result, load_plan_result

PLANS = Path(__file__).parent / "fixtures" / "plans"
CASES = [(f.name, p.rank) for f in sorted(PLANS.glob("*.json")) for p in load_plan_result(f).plans]


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
    backend = _data("dstack")["backends"].get(plan.provider)
    if backend is None:
        assert conf.backends is None and any(plan.provider in w for w in ex.warnings)
    else:
        assert [b.value for b in conf.backends] == [backend]
    assert conf.max_price >= plan.offer.price_per_hour_usd
    assert conf.env["HF_TOKEN"].__class__.__name__ == "EnvSentinel"  # taken from the shell at apply time
    if plan.workload == "train":
        assert conf.type == "task" and conf.nodes == plan.nodes
        assert conf.env["PP_SIZE"] == str(plan.layout.pp)
        assert {e.value for e in conf.retry.on_events} >= {"interruption", "no-capacity"}
        assert conf.retry.duration >= plan.wall_hours * 3600
        torchrun = conf.commands[-1]
        assert "$DSTACK_NODE_RANK" in torchrun and "$DSTACK_MASTER_NODE_IP" in torchrun if plan.nodes > 1 \
            else "--standalone" in torchrun
    else:
        assert conf.type == "service" and conf.port.container_port == 8000
        assert conf.replicas.min == conf.replicas.max == plan.nodes
        assert conf.probes[0].url == "/health"
