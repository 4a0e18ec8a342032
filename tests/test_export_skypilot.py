"""SkyPilot exports, loaded by SkyPilot's own task loader (skipped when `skypilot` is not installed)."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from gpuplan.export import export_result, load_plan_result

PLANS = Path(__file__).parent / "fixtures" / "plans"
CASES = [(f.name, p.rank) for f in sorted(PLANS.glob("*.json")) for p in load_plan_result(f).plans]


def _data(name: str) -> dict:
    return json.loads(resources.files("gpuplan.export").joinpath("data", f"{name}.json").read_text())


def test_accelerator_names_exist_in_skypilots_catalog():
    """Every name we emit is in SkyPilot's accelerators.csv; per-cloud names are listed for that cloud."""
    m, known = _data("skypilot"), _data("skypilot_accelerators")["accelerators"]
    for gpu, name in m["accelerators"].items():
        assert name in known, (gpu, name)
    for cloud, names in m["accelerators_by_cloud"].items():
        for gpu, name in names.items():
            assert cloud in known.get(name, []), (cloud, gpu, name)


def test_cloud_names_are_skypilots():
    sky_constants = pytest.importorskip("sky.skylet.constants")
    for provider, cloud in _data("skypilot")["clouds"].items():
        assert cloud in sky_constants.ALL_CLOUDS, (provider, cloud)


@pytest.mark.parametrize("fixture, rank", CASES)
def test_task_loads_in_skypilot_as_planned(tmp_path, fixture, rank):
    sky = pytest.importorskip("sky")
    result = load_plan_result(PLANS / fixture)
    plan = next(p for p in result.plans if p.rank == rank)
    ex = export_result(result, "skypilot", rank)
    path = tmp_path / "task.yaml"
    path.write_text(ex.text)
    task = sky.Task.from_yaml(str(path))

    (res,) = list(task.resources)
    ((acc, count),) = res.accelerators.items()
    assert count == plan.gpus_per_node
    assert acc == _data("skypilot")["accelerators_by_cloud"].get(plan.provider, {}).get(
        plan.gpu, _data("skypilot")["accelerators"].get(plan.gpu))
    assert res.use_spot == plan.offer.preemptible
    cloud = _data("skypilot")["clouds"].get(plan.provider)
    if cloud is None:
        assert res.cloud is None and any(plan.provider in w for w in ex.warnings)
    else:
        assert str(res.cloud).lower() == cloud
        region = plan.region if plan.region and plan.region.replace("-", "").isalnum() and plan.region.islower() else None
        assert res.region == region
    if plan.workload == "train":
        assert task.num_nodes == plan.nodes
        assert res.job_recovery["max_restarts_on_errors"] == 3
        assert task.envs["TP_SIZE"] == str(plan.layout.tp)
        assert "/checkpoints" in task.storage_mounts
        run = task.run
        assert "$SKYPILOT_NODE_RANK" in run if plan.nodes > 1 else "--standalone" in run
    else:
        spec = task.service
        assert spec is not None
        assert spec.readiness_path == "/health"
        assert spec.min_replicas == plan.nodes
        assert f"--tensor-parallel-size {plan.gpus_per_replica}" in task.run


def test_spot_service_keeps_planned_replicas_with_on_demand_fallback(tmp_path):
    sky = pytest.importorskip("sky")
    result = load_plan_result(PLANS / "serve_runpod_l40s.json")
    plan = result.plans[0]
    spot = plan.model_copy(update={"pricing": "spot", "offer": plan.offer.model_copy(update={"pricing": "spot"})})
    from gpuplan.export import build_export

    path = tmp_path / "svc.yaml"
    path.write_text(build_export(spot, "skypilot", summary=result.summary).text)
    task = sky.Task.from_yaml(str(path))
    (res,) = list(task.resources)
    assert res.use_spot is True
    assert task.service.min_replicas == task.service.max_replicas == plan.nodes
    assert task.service.dynamic_ondemand_fallback is True
