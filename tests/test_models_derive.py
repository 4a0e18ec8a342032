"""Shapes derived from a parameter count: close to the request, plausible, and strict about nonsense."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.errors import UsageError
from gpuplan.models import model_from_params
from gpuplan.models.spec import ModelSpec


def _plausible(spec: ModelSpec) -> None:
    assert spec.head_dim in (64, 128)
    assert spec.n_heads * spec.head_dim == spec.hidden_size
    assert spec.n_heads % spec.n_kv_heads == 0
    assert spec.gated_ffn and spec.vocab_size in (32_000, 128_256)


@pytest.mark.parametrize("total", np.geomspace(1e8, 2e12, 41).tolist())
def test_dense_sizes_within_2pct(total):
    spec = model_from_params(total)
    assert not spec.is_moe
    assert spec.total_params() == pytest.approx(total, rel=0.02)
    _plausible(spec)
    if total >= 1e9:  # below that, embeddings dominate and depth is a handful of layers
        assert 40 <= spec.hidden_size / spec.n_layers <= 300
        assert 2.0 <= spec.ffn_size / spec.hidden_size <= 6.0
        assert spec.n_kv_heads == 8  # GQA once there are 16+ heads


def test_known_sizes_look_like_their_families():
    """Not the published shapes (those are presets), but the same ballpark of depth and width."""
    for total, (layers, hidden) in {8.03e9: (32, 4096), 70.6e9: (80, 8192), 405.9e9: (126, 16384)}.items():
        spec = model_from_params(total)
        assert 0.6 < spec.n_layers / layers < 1.5
        assert 0.7 < spec.hidden_size / hidden < 1.4
        assert 0.5 < spec.kv_bytes_per_token() / (2 * layers * 8 * 128 * 2) < 1.6


@pytest.mark.parametrize("total", np.geomspace(1e9, 2e12, 13).tolist())
@pytest.mark.parametrize("ratio", [0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8])
def test_moe_both_counts_within_3pct(total, ratio):
    active = total * ratio
    spec = model_from_params(total, active)
    assert spec.is_moe and spec.n_active_experts < spec.n_experts
    assert spec.total_params() == pytest.approx(total, rel=0.03)
    assert spec.active_params() == pytest.approx(active, rel=0.03)
    _plausible(spec)


@pytest.mark.parametrize("total, active", [(46.7e9, 12.9e9), (671e9, 37e9), (235e9, 22e9), (1.04e12, 32e9), (117e9, 5.1e9)])
def test_moe_for_published_ratios(total, active):
    spec = model_from_params(total, active, name="my-moe")
    assert spec.name == "my-moe"
    assert spec.total_params() == pytest.approx(total, rel=0.01)
    assert spec.active_params() == pytest.approx(active, rel=0.01)


def test_active_equal_to_total_is_dense():
    assert not model_from_params(7e9, 7e9).is_moe
    assert not model_from_params(7e9, None).is_moe


def test_deterministic():
    assert model_from_params(13e9) == model_from_params(13e9)
    assert model_from_params(600e9, 30e9) == model_from_params(600e9, 30e9)


@pytest.mark.parametrize("total, active", [
    (0, None), (-1e9, None), (float("nan"), None), (float("inf"), None), (1e15, None), (1e3, None),
    ("7e9", None), (True, None), (None, None), (7e9, 8e9), (7e9, 0), (7e9, -1), (7e9, float("nan")),
    (1e12, 1.5e7),  # 0.0015% active: no plausible router
])
def test_nonsense_is_a_usage_error(total, active):
    with pytest.raises(UsageError) as ei:
        model_from_params(total, active)
    assert "\n" not in str(ei.value)


@settings(max_examples=150, deadline=None)
@given(st.floats(1e8, 1e14), st.one_of(st.none(), st.floats(0.01, 1.0)))
def test_any_size_gives_a_close_shape_or_a_clear_error(total, ratio):
    active = None if ratio is None else total * ratio
    try:
        spec = model_from_params(total, active)
    except UsageError:
        assert active is not None and (active < 0.05 * total or active < 1e8)  # only very sparse or tiny MoE
        return
    assert spec.total_params() == pytest.approx(total, rel=0.03)
    if active is not None:
        assert spec.active_params() == pytest.approx(active, rel=0.03)
    assert math.isfinite(spec.kv_bytes_per_token())
