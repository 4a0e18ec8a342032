"""NVL72 racks in training plans: node counts the provider sells (whole racks), collectives inside
the rack's NVLink domain, and layouts ranked per sequence rather than per step."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpuplan.catalog.catalog import Catalog
from gpuplan.perf.efficiency import default_efficiency
from gpuplan.perf.layout_search import MAX_BATCH_GROWTH, search_layouts
from gpuplan.perf.training_estimate import _model, model_shape, with_model_defaults
from gpuplan.perf.training_time import gpu_features, inter_node_bytes_per_s, step_time_s
from gpuplan.perf.workload import pretraining
from gpuplan.planner import plan_training
from gpuplan.planner.requests import Constraints, TrainPlanRequest
from gpuplan.planner.train_plan import node_counts_for


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load(use_store=False)


def _gb200_plan(catalog, **constraints):
    req = TrainPlanRequest(model="llama-3.1-8b", tokens=1e12, limit=50,
                           constraints=Constraints(providers=["coreweave"], gpus=["GB200"], **constraints))
    return plan_training(req, catalog)


def test_node_counts_are_whole_blocks_where_the_provider_sells_blocks():
    counts = node_counts_for(4, 18, 16_384)
    assert counts.size > 3 and np.all(counts % 18 == 0) and counts[0] == 18
    assert list(counts[:5]) == [18, 36, 54, 72, 108]  # 1, 2, 3, 4, 6 racks
    assert np.all(counts * 4 <= 16_384)
    assert list(node_counts_for(8, 1, 64)) == [1, 2, 4, 8]  # no multiple: powers of two, as before
    assert node_counts_for(4, 18, 32).size == 0  # one rack is 72 GPUs


def test_coreweave_gb200_plans_whole_racks_with_pure_data_parallel_inside_the_rack(catalog):
    res = _gb200_plan(catalog)
    assert res.plans, res.rejected
    for p in res.plans:
        assert p.nodes % 18 == 0, (p.nodes, p.layout)
        assert p.assumptions["node_multiple"] == 18
        assert any("blocks of 18 nodes" in n for n in p.risk_notes)
    best = res.plans[0]
    if best.gpus <= 72:  # inside one NVLink domain: an 8B model needs neither pipeline nor tensor parallelism
        assert best.layout.pp == 1 and best.layout.dp > 1 and best.layout.tp == 1, best.layout


def test_a_gpu_cap_below_one_rack_is_rejected_with_the_reason(catalog):
    res = _gb200_plan(catalog, max_gpus=32)
    assert not res.plans
    assert "sold only in blocks of 18 nodes (72 GPUs), more than --max-gpus" in res.rejected


def _wl_shape():
    spec = _model("llama-3.1-8b")
    return with_model_defaults(pretraining(1e12), spec), model_shape(spec)


def test_data_parallel_inside_an_nvl72_rack_runs_over_nvlink_not_the_nic(catalog):
    wl, shape = _wl_shape()
    eff = replace(default_efficiency(), dp_overlap=0.0)  # the whole collective, none hidden
    inter = inter_node_bytes_per_s(100.0, eff)  # 400 Gb/s per 4-GPU tray
    gb200, b200 = catalog.gpus["GB200"], catalog.gpus["B200"]
    args = dict(t=1, p=1, d=72, c=1, e=1, b=1, recompute=0, zero=1, v=1, global_batch=1080, gpus_per_node=4,
                inter_node_bytes_s=inter)
    rack = step_time_s(shape, wl, gpu_features([gb200], wl.precision, 4, eff), eff, **args)
    hgx = step_time_s(shape, wl, gpu_features([b200], wl.precision, 4, eff), eff, **args)  # domain = the node
    assert float(np.ravel(rack["dp"])[0]) < 0.2 * float(np.ravel(hgx["dp"])[0])
    # Two racks: the gradient ring crosses the NICs, paying the network latency, but 72 members share
    # a rack's 72 NICs, so it still moves at about NVLink speed, far above one HGX node's four NICs.
    two = step_time_s(shape, wl, gpu_features([gb200], wl.precision, 4, eff), eff,
                      **{**args, "d": 144, "global_batch": 1152})
    assert float(np.ravel(two["dp"])[0]) > float(np.ravel(rack["dp"])[0])
    assert float(np.ravel(two["dp"])[0]) < 0.2 * float(np.ravel(hgx["dp"])[0])


def test_layouts_are_ranked_per_sequence_not_per_step(catalog):
    """72 GPUs: pure DP rounds the default batch up more than PP8 x DP9 does; per step it looked
    slower, per sequence it is faster."""
    wl, shape = _wl_shape()
    eff = default_efficiency()
    r = search_layouts(shape, wl, [catalog.gpus["GB200"]], [72], 4, inter_node_bytes_per_s(100.0, eff), eff,
                       grid_mode=True)
    i = int(r.best_index[0, 0])
    lay = {k: int(r.layouts[k][i]) for k in ("tp", "pp", "dp")}
    assert lay == {"tp": 1, "pp": 1, "dp": 72}
    assert r.layouts["batch"][i] <= wl.batch * (1 + MAX_BATCH_GROWTH)


def test_a_data_parallel_ring_across_hgx_nodes_moves_at_the_nics_of_its_members_in_each_node(catalog):
    # nccl-tests on 8x400G H100 nodes: ~400 GB/s all-reduce busbw, 8 x one NIC, because one ring per NIC
    # crosses each node boundary once. A group with one member per node (TP 8) gets one NIC's rate.
    wl, shape = _wl_shape()
    eff = replace(default_efficiency(), dp_overlap=0.0)
    inter = inter_node_bytes_per_s(400.0, eff)
    feats = gpu_features([catalog.gpus["H100-SXM"]], wl.precision, 8, eff)
    common = dict(p=1, c=1, e=1, b=1, recompute=0, zero=1, v=1, gpus_per_node=8, inter_node_bytes_s=inter)
    wide = step_time_s(shape, wl, feats, eff, t=1, d=32, global_batch=32, **common)   # 8 members per node
    deep = step_time_s(shape, wl, feats, eff, t=8, d=4, global_batch=4, **common)    # 1 member per node
    per_param_wide = float(np.ravel(wide["dp"])[0]) / shape.total_params
    per_param_deep = float(np.ravel(deep["dp"])[0]) / (shape.total_params / 8)
    assert per_param_deep > 4.0 * per_param_wide
    # Never faster than NVLink inside the node.
    nvl = float(np.ravel(feats.scaleup_bytes_s)[0])
    assert float(np.ravel(wide["dp"])[0]) >= 2 * (31 / 32) * shape.total_params * 2.0 / nvl * 0.9
