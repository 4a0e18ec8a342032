"""Scale-up topology (perf/scaleup.py, perf/data/scaleup-topology.csv): point-to-point meshes bound a collective
over a few GPUs of the node to the links among them, in serving and in training."""
from __future__ import annotations

import csv
from importlib import resources

import pytest

from gpuplan.catalog.gpus import all_gpus, get_gpu
from gpuplan.perf import scaleup
from gpuplan.perf.inference_estimate import estimate_serving
from gpuplan.perf.vendor_efficiency import physics_only


def _rows() -> list[dict]:
    text = resources.files("gpuplan.perf.data").joinpath(scaleup.DATA_FILE).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


def test_every_mesh_names_a_catalog_gpu_a_source_and_adds_up_within_its_stated_aggregate():
    gpus = all_gpus()
    rows = _rows()
    assert {r["gpu_id"] for r in rows} >= {"MI300X", "MI325X", "MI355X", "Gaudi2", "Gaudi3"}
    for r in rows:
        g = gpus[r["gpu_id"]]
        assert r["topology"] == "mesh" and r["source"].strip() and r["note"].strip()
        peers, peer, total = int(r["peers"]), float(r["peer_gb_s_per_direction"]), float(r["scaleup_gb_s_per_direction"])
        assert peers * peer == pytest.approx(total)
        # The links wired inside the box never exceed the catalog's aggregate (per direction = half of it).
        assert total <= g.nvlink_gbps / 2 + 1e-9, r["gpu_id"]


def test_a_switched_gpu_gives_any_group_its_whole_bandwidth_and_a_mesh_only_the_links_among_the_group():
    h100 = get_gpu("H100-SXM")
    assert all(scaleup.group_share(h100, g) == 1.0 for g in (2, 4, 8))
    assert scaleup.describe(h100, 2) is None
    mi = get_gpu("MI300X")
    assert scaleup.group_share(mi, 2) == pytest.approx(64 / 448)
    assert scaleup.group_share(mi, 4) == pytest.approx(3 * 64 / 448)
    assert scaleup.group_share(mi, 8) == pytest.approx(1.0)
    g2 = get_gpu("Gaudi2")
    # Gaudi 2's 600 GB/s counts its 3 scale-out ports: even all 7 peers' links reach 262.5 of the 300 per direction.
    assert scaleup.group_share(g2, 2) == pytest.approx(37.5 / 300)
    assert scaleup.box_share(g2) == pytest.approx(262.5 / 300)
    assert "37.5 GB/s" in scaleup.describe(g2, 2)


@pytest.fixture
def no_meshes(monkeypatch):
    """Every GPU taken as switched: the model before the topology was known."""
    monkeypatch.setattr(scaleup, "meshes", lambda: {})


def _tp_serving(gpu: str, tp: int) -> float:
    with physics_only():
        e = estimate_serving("llama-3.1-70b", gpu, n_gpus=tp, tp=tp, precision="fp8", kv_precision="fp8",
                             input_len=2048, output_len=128, concurrency=64, engine="trtllm")
    return e.output_tokens_per_s


def test_a_tp2_replica_on_a_mesh_pays_for_its_single_link_and_tp8_barely_changes(no_meshes, monkeypatch):
    switched_tp2, switched_tp8 = _tp_serving("MI300X", 2), _tp_serving("MI300X", 8)
    monkeypatch.undo()
    meshed_tp2, meshed_tp8 = _tp_serving("MI300X", 2), _tp_serving("MI300X", 8)
    assert meshed_tp2 < 0.97 * switched_tp2
    assert meshed_tp8 == pytest.approx(switched_tp8, rel=0.01)


def test_serving_assumptions_state_the_link_a_replica_uses():
    e = estimate_serving("llama-3.1-70b", "Gaudi3", n_gpus=2, tp=2, precision="fp8", input_len=1000, output_len=200)
    assert "75 GB/s" in e.assumptions["scaleup_link"]
    e = estimate_serving("llama-3.1-70b", "H100", n_gpus=2, tp=2, precision="fp8", input_len=1000, output_len=200)
    assert e.assumptions["scaleup_link"] is None


def _train_8b(gpu: str, tp: int, **layout):
    """Llama 3.1 8B on 8 GPUs of `gpu` at tensor parallel `tp`, one pipeline stage."""
    from gpuplan.perf.training_estimate import estimate_training
    from gpuplan.perf.workload import TrainingWorkload

    wl = TrainingWorkload(tokens=1e9, seq_len=4096, global_batch=64)
    return estimate_training("llama-3.1-8b", wl, gpu, n_gpus=8, tp=tp, pp=1, **layout)


def _tp_training_step(gpu: str, tp: int) -> float:
    return _train_8b(gpu, tp, micro_batch=1, zero=1).step_time_s


def test_training_tensor_parallel_on_a_mesh_costs_more_than_on_a_switch(no_meshes, monkeypatch):
    switched = _tp_training_step("MI300X", 2)
    monkeypatch.undo()
    assert _tp_training_step("MI300X", 2) > 1.02 * switched


def test_a_training_estimate_states_the_link_its_tensor_parallel_group_uses():
    assert "64 GB/s per direction" in _train_8b("MI300X", 2).assumptions["fabric"]["scaleup_link"]
    assert _train_8b("H100", 2).assumptions["fabric"]["scaleup_link"] is None
