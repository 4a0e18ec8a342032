"""scripts/check_sources.py, the live-source canary: on the recorded payloads it must pass (CI runs
it), and its assertions must catch the bugs it exists for (a node price read as per GPU, a wrong
confidence, no offers)."""
from __future__ import annotations

import datetime as dt
import importlib.util
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gpuplan.catalog.records import Offer
from gpuplan.catalog.sources.base import SourceResult

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_sources.py"


@pytest.fixture(scope="module")
def canary():
    spec = importlib.util.spec_from_file_location("check_sources", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["check_sources"] = mod  # dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop("check_sources", None)


def test_recorded_payloads_pass_and_print_a_table():
    r = subprocess.run([sys.executable, str(SCRIPT), "--recorded"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:6] == ["source", "rows", "GPUs", "price", "range", "verdict"]
    body = {ln.split()[0]: ln.split() for ln in lines[2:] if ln.strip() and not ln.startswith("recorded")}
    assert set(body) == {"vast", "runpod", "azure", "vultr", "lambda", "skypilot:lambda", "gpuhunt:gcp",
                         "gpuhunt:runpod"}
    for name, cells in body.items():
        assert int(cells[1]) > 0 and int(cells[2]) > 0 and cells[4] == "PASS", (name, cells)
        lo, hi = (float(x.lstrip("$")) for x in cells[3].split("-"))
        assert 0 < lo <= hi < 20
    assert "recorded payloads: 8 pass" in r.stdout


def _offer(price_per_hour, n=8, gpu="H100-SXM", confidence="live", as_of=None):
    return Offer(provider="x", instance_type="t", gpu=gpu, gpus_per_node=n, pricing="on_demand",
                 price_per_hour_usd=price_per_hour, price_per_gpu_hour_usd=price_per_hour / n,
                 as_of=as_of or dt.date(2026, 11, 20), source="s", confidence=confidence)


def test_assertions_catch_unit_and_confidence_bugs(canary):
    today = dt.date(2026, 11, 23)
    ok = canary.check_result("azure", SourceResult([_offer(98.32)], 1), today)
    assert ok.verdict == "PASS" and ok.lo == pytest.approx(12.29)
    per_node_as_gpu = canary.check_result("azure", SourceResult([_offer(98.32, n=1)], 1), today)
    assert per_node_as_gpu.verdict == "FAIL" and "outside" in per_node_as_gpu.problems[0]
    cents = canary.check_result("lambda", SourceResult([_offer(399.0, n=1)], 1), today)  # cents read as dollars
    assert cents.verdict == "FAIL"
    wrong_conf = canary.check_result("gpuhunt:aws", SourceResult([_offer(24.0)], 1), today)
    assert wrong_conf.verdict == "FAIL" and "aggregated" in wrong_conf.problems[0]
    future = canary.check_result("vast", SourceResult([_offer(24.0, as_of=dt.date(2027, 1, 1))], 1), today)
    assert future.verdict == "FAIL"
    empty = canary.check_result("vast", SourceResult([], 40, Counter({"unknown GPU 'X'": 40})), today)
    assert empty.verdict == "FAIL" and "no offers" in empty.problems[0]


def test_sources_needing_an_absent_key_are_skipped_not_failed(monkeypatch, tmp_path):
    monkeypatch.delenv("LAMBDA_API_KEY", raising=False)
    monkeypatch.setenv("GPUPLAN_CONFIG", str(tmp_path / "none.toml"))
    r = subprocess.run([sys.executable, str(SCRIPT), "-s", "lambda"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SKIP" in r.stdout and "LAMBDA_API_KEY" in r.stdout


def test_recorded_mode_refuses_a_source_without_a_payload():
    r = subprocess.run([sys.executable, str(SCRIPT), "--recorded", "-s", "skypilot:gcp"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "no recorded payload" in r.stderr
