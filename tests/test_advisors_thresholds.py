"""Regulatory compute thresholds: values, statuses and the strict 'greater than'."""
from __future__ import annotations

import pytest

from gpuplan.economics.thresholds import check_thresholds, exceeded_active, list_thresholds
from gpuplan.errors import UsageError


def by_id(flops):
    return {c.id: c for c in check_thresholds(flops)}


def test_known_thresholds_and_statuses():
    t = {x.id: x for x in list_thresholds()}
    assert t["eu-ai-act-gpai-systemic-risk"].threshold_flops == 1e25 and t["eu-ai-act-gpai-systemic-risk"].active
    assert t["us-eo-14110-reporting"].threshold_flops == 1e26 and t["us-eo-14110-reporting"].status == "revoked"
    assert t["ca-sb53-frontier-model"].threshold_flops == 1e26 and t["ca-sb53-frontier-model"].status == "in force"
    assert all(x.source and x.as_of and x.verified in ("yes", "partly", "no") for x in t.values())


def test_greater_than_is_strict():
    assert not by_id(1e25)["eu-ai-act-gpai-systemic-risk"].exceeded
    assert by_id(1.0001e25)["eu-ai-act-gpai-systemic-risk"].exceeded


def test_llama_3_1_405b_scale_run():
    """3.8e25 FLOPs: over the EU line, under California's and the (revoked) US one."""
    c = by_id(3.8e25)
    assert c["eu-ai-act-gpai-systemic-risk"].exceeded and c["eu-ai-act-gpai-systemic-risk"].ratio == pytest.approx(3.8)
    assert not c["ca-sb53-frontier-model"].exceeded and not c["us-eo-14110-reporting"].exceeded
    active = {x.id for x in exceeded_active(3.8e25)}
    assert "eu-ai-act-gpai-systemic-risk" in active and not any(i.startswith("us-eo") for i in active)


def test_small_run_exceeds_nothing_active():
    assert exceeded_active(1e21) == []
    assert len(check_thresholds(0)) == len(list_thresholds())


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "x"])
def test_bad_flops(bad):
    with pytest.raises(UsageError):
        check_thresholds(bad)
