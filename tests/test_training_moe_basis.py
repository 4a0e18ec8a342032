"""Two refinements of the training time model, each without a new fitted parameter:

- fine-grained MoE experts (FFN narrower than the hidden size) multiply through narrow GEMMs,
  which run at the efficiency law's lower eta for their width;
- a full run's published GPU-hours are compared with or without goodput according to what the
  source says they measure (wall-clock allocation vs hours computed from measured throughput).
"""
from __future__ import annotations

import pytest

from gpuplan.models import get_preset
from gpuplan.perf.efficiency import default_efficiency
from gpuplan.perf.training_shape import model_shape
from gpuplan.perf.training_time import routed_expert_extra_flops
from gpuplan.perf.training_validation import includes_downtime, load_rows, prepare_row
from gpuplan.perf.workload import make_workload


def _extra(preset: str):
    shape = model_shape(get_preset(preset))
    return shape, routed_expert_extra_flops(shape, make_workload(tokens=1e9), default_efficiency())


@pytest.mark.parametrize("preset", ["llama-3.1-8b", "mixtral-8x7b"])
def test_dense_and_wide_experts_pay_nothing_extra(preset):
    _, extra = _extra(preset)
    assert extra.tolist() == [0.0, 0.0, 0.0]


def test_fine_grained_experts_cost_more_per_token():
    shape, extra = _extra("deepseek-v3")
    assert 0 < shape.expert_ffn < shape.hidden
    eff = default_efficiency()
    slow = (1 + eff.h_half / shape.expert_ffn) / (1 + eff.h_half / shape.hidden) - 1
    # forward + backward = 3 passes over the routed weights, 2 FLOPs per weight and token
    assert extra[0] == pytest.approx(2 * shape.routed_active_params * 3 * slow)
    assert extra[2] > extra[1] == extra[0]  # full recompute reruns the forward


def test_hours_basis_decides_whether_goodput_applies():
    rows = {r["name"]: r for r in load_rows()}
    steady = prepare_row(rows["Pythia-1B"])
    wall = prepare_row(rows["OPT-175B"])
    assert steady.row["hours_basis"] == "steady" and not includes_downtime(steady)
    assert wall.row["hours_basis"] == "wall" and includes_downtime(wall)
