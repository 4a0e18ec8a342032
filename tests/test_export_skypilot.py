"""SkyPilot exports, loaded by SkyPilot's own task loader (skipped when `skypilot` is not installed)."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from gpuplan.export import ExportOptions, build_export, export_result, load_plan_result, parse_plan_result
from gpuplan.export.common import supported_targets

PLANS = Path(__file__).parent / "fixtures" / "plans"
# Plans whose provider SkyPilot reaches (the rest are a one-line error: tests/test_export_common.py).
CASES = [(f.name, p.rank) for f in sorted(PLANS.glob("*.json")) for p in load_plan_result(f).plans
         if "skypilot" in supported_targets(p.provider)]
_PLANNED: dict = {}


def _planned(cli, *args: str):
    if args not in _PLANNED:
        code, out, err = cli("plan", *args, "--json")
        assert code == 0, err
        _PLANNED[args] = parse_plan_result(json.loads(out))
    return _PLANNED[args]


def _multi_node(result, provider: str, fabric: str):
    for p in sorted(result.plans, key=lambda p: p.rank):
        if p.provider == provider and p.nodes > 1 and p.assumptions.get("fabric") == fabric:
            return p
    pytest.fail(f"the planner ranked no multi-node {provider} plan on {fabric}")


def _load(sky, tmp_path, text: str):
    path = tmp_path / "task.yaml"
    path.write_text(text)
    return sky.Task.from_yaml(str(path))


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
    cloud = _data("skypilot")["clouds"][plan.provider]
    assert str(res.cloud).lower() == cloud
    region = plan.region if plan.region and plan.region.replace("-", "").isalnum() and plan.region.islower() else None
    assert res.region == region
    if plan.workload == "train":
        assert task.num_nodes == plan.nodes
        assert res.job_recovery["max_restarts_on_errors"] == 3
        assert task.envs["TP_SIZE"] == str(plan.layout.tp)
        assert "/checkpoints" in task.storage_mounts
        run = task.run
        if plan.nodes > 1:
            assert "$SKYPILOT_NODE_RANK" in run
        else:
            assert "--standalone" in run or "accelerate launch --num_machines 1 " in run
    else:
        spec = task.service
        assert spec is not None
        assert spec.readiness_path == "/health"
        assert spec.min_replicas == plan.nodes
        assert f"--tensor-parallel-size {plan.gpus_per_replica}" in task.run
    assert not task.secrets and not task.managed_secret_refs  # nothing the launch would have to supply


@pytest.mark.parametrize("provider, fabric, env", [
    ("nebius", "infiniband", {"NCCL_IB_HCA": "mlx5", "NCCL_IB_DISABLE": "0"}),
    ("aws", "efa", {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}),
    ("gcp", "tcpx", {}),
])
def test_multi_node_fast_fabric_task_loads_with_network_tier_best(cli, tmp_path, provider, fabric, env):
    sky = pytest.importorskip("sky")
    from sky.utils.resources_utils import NetworkTier

    result = _planned(cli, "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--providers", provider)
    plan = _multi_node(result, provider, fabric)
    task = _load(sky, tmp_path, build_export(plan, "skypilot", summary=result.summary).text)
    (res,) = list(task.resources)
    assert res.network_tier == NetworkTier.BEST
    assert str(res.cloud).lower() == provider and task.num_nodes == plan.nodes
    # pre-training timed on Megatron's stack, model parallel or not: Megatron-LM in NVIDIA's image
    assert res.extract_docker_image() == "nvcr.io/nvidia/pytorch:25.09-py3" and "pretrain_gpt.py" in task.run
    for k, v in env.items():
        assert task.envs[k] == v
    assert task.envs["NCCL_DEBUG"] == "INFO"
    assert "$SKYPILOT_NODE_RANK" in task.run and not task.managed_secret_refs


def test_own_nodes_and_amd_images_load(tmp_path):
    sky = pytest.importorskip("sky")
    result = load_plan_result(PLANS / "train_tensorwave_mi300x.json")
    task = _load(sky, tmp_path, export_result(result, "skypilot", 1, ExportOptions(infra="k8s/tw-cluster")).text)
    (res,) = list(task.resources)
    assert str(res.cloud).lower() == "kubernetes" and res.region == "tw-cluster"
    assert res.extract_docker_image() == "rocm/megatron-lm:v25.5_py310"
    serve = load_plan_result(PLANS / "serve_runpod_l40s.json")
    plan = serve.plans[0]
    mi = plan.model_copy(update={"gpu": "MI300X", "offer": plan.offer.model_copy(update={"gpu": "MI300X"})})
    task = _load(sky, tmp_path, build_export(mi, "skypilot", summary=serve.summary).text)
    (res,) = list(task.resources)
    assert res.extract_docker_image() == "rocm/vllm:latest" and not task.setup


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
