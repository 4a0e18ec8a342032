"""Repeat measurements: one configuration timed by successive sources, and the spread the validators print."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from gpuplan.perf.inference_validation import REPEAT_KEY as SERVING_KEY
from gpuplan.perf.inference_validation import serving_repeat_pairs
from gpuplan.perf.repeatability import repeat_pairs, spread_table
from gpuplan.perf.training_validation import REPEAT_KEY as TRAINING_KEY
from gpuplan.perf.training_validation import load_rows, measured_tokens_per_gpu_s, training_repeat_pairs

ROOT = Path(__file__).resolve().parents[1]


def _row(cfg, src, date, x, regime="moe"):
    return {"cfg": cfg, "source_id": src, "source_date": date, "x": x, "regime": regime}


def _pairs(rows):
    return repeat_pairs(rows, key=lambda r: (r["cfg"],), value=lambda r: r["x"], regime=lambda r: r["regime"])


def test_pairs_join_consecutive_sources_of_one_configuration_in_date_order():
    rows = [_row("a", "v3", "2026-06", 150.0), _row("a", "v1", "2025-09", 100.0), _row("a", "v2", "2026-02", 120.0),
            _row("b", "v1", "2025-09", 10.0)]
    pairs = _pairs(rows)
    assert [(p["earlier_source"], p["later_source"]) for p in pairs] == [("v1", "v2"), ("v2", "v3")]
    assert pairs[0]["log_ratio"] == pytest.approx(math.log(1.2)) and pairs[1]["log_ratio"] == pytest.approx(math.log(1.25))


def test_one_sources_repeats_and_unusable_values_never_pair():
    rows = [_row("a", "v1", "2025-09", 100.0), _row("a", "v1", "2025-09", 130.0),
            _row("c", "v1", "2025-09", 0.0), _row("c", "v2", "2026-01", 5.0),
            _row("d", "v1", "2025-09", float("nan")), _row("d", "v2", "2026-01", 5.0),
            _row("e", "v1", "2025-09", None), _row("e", "v2", "2026-01", 5.0)]
    assert _pairs(rows) == []


def test_spread_table_reports_each_regime_and_all_as_percentages():
    rows = [_row("a", "v1", "2025-09", 100.0), _row("a", "v2", "2026-01", 150.0),
            _row("b", "v1", "2025-09", 100.0, "dense"), _row("b", "v2", "2026-01", 90.0, "dense")]
    table = {t["regime"]: t for t in spread_table(_pairs(rows))}
    assert list(table) == ["dense", "moe", "all"]
    assert table["moe"]["median_pct"] == pytest.approx(50.0) and table["moe"]["signed_median_pct"] == pytest.approx(50.0)
    assert table["dense"]["median_pct"] == pytest.approx(100 / 90 * 100 - 100)  # |log| is symmetric: 0.9x reads as 11%
    assert table["dense"]["signed_median_pct"] == pytest.approx(-10.0)
    assert table["all"]["pairs"] == 2 and table["all"]["sources"] == 2
    assert spread_table([]) == []


def test_training_pairs_are_one_configuration_from_two_sources():
    rows = {(r["source_id"], r["name"], r["row"]): r for r in load_rows()}
    pairs = training_repeat_pairs()
    assert len(pairs) >= 30  # NVIDIA's Megatron-Bridge tables re-measure their recipes every release
    for p in pairs:
        assert p["earlier_source"] != p["later_source"]
        assert len(p["key"]) == len(TRAINING_KEY) + 1  # and whether the MoE run drops tokens
    # the value is the stated tokens/s per GPU, or global batch x sequence / (step time x GPUs)
    r = next(r for r in rows.values() if r["use"] == "1" and r["row_type"] == "THROUGHPUT"
             and not r["measured_tokens_per_s_per_gpu"] and r["step_time_s"] and r["global_batch"])
    want = float(r["global_batch"]) * float(r["seq_len"]) / (float(r["step_time_s"]) * float(r["gpu_count"]))
    assert measured_tokens_per_gpu_s(r) == pytest.approx(want)


def test_serving_pairs_are_one_configuration_from_two_sources():
    pairs = serving_repeat_pairs()
    assert pairs and all(p["earlier_source"] != p["later_source"] and len(p["key"]) == len(SERVING_KEY) for p in pairs)


def test_the_validators_table_prints_each_regime(capsys):
    spec = importlib.util.spec_from_file_location("repeat_spread", ROOT / "benchmarks" / "repeat_spread.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.print_spread(_pairs([_row("a", "v1", "2025-09", 100.0), _row("a", "v2", "2026-01", 140.0)]), "a test")
    out = capsys.readouterr().out
    assert "1 pairs of consecutive sources" in out and "moe" in out and "40.0%" in out
    mod.print_spread([], "a test")
    assert "no configuration of a test appears in two sources" in capsys.readouterr().out
