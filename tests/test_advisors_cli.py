"""CLI: gpuplan size | testtime | apis | own-vs-rent | thresholds | breakeven."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest


def test_size_quality_of_reproduces_sardana_by_default(cli):
    code, out, err = cli("size", "--quality-of", "13B", "--inference-tokens", "2T", "--json")
    assert code == 0, err
    d = json.loads(out)
    for k in ("params", "tokens", "training_flops", "flops_saved", "savings_fraction", "loss", "chinchilla"):
        assert k in d
    assert d["laws"] == "sardana" and d["laws_default_used"] and d["laws_note"]
    assert d["params"] == pytest.approx(6.969e9, rel=0.01) and d["savings_fraction"] == pytest.approx(0.1745, rel=0.01)
    assert d["chinchilla"]["params"] == pytest.approx(13e9, rel=1e-6)


def test_size_table_names_the_laws_used(cli):
    code, out, _ = cli("size", "--quality-of", "13B", "--inference-tokens", "2T")
    assert code == 0 and "laws=sardana" in out and "17.45%" in out and "note: default" in out
    code, out, _ = cli("size", "--quality-of", "13B", "--inference-tokens", "2T", "--laws", "epoch")
    assert code == 0 and "laws=epoch" in out and "note: default" not in out


def test_size_compute_and_cost_mode(cli):
    code, out, _ = cli("size", "--compute", "1e23", "--json")
    d = json.loads(out)
    assert code == 0 and d["laws"] == "epoch" and 6 * d["params"] * d["tokens"] == pytest.approx(1e23)
    assert set(d["other_laws"]) == {"hoffmann", "hoffmann-rounded", "sardana"}
    code, out, _ = cli("size", "--compute", "3e25", "--json")
    assert any(t["id"] == "eu-ai-act-gpai-systemic-risk" for t in json.loads(out)["thresholds_exceeded"])
    code, out, _ = cli("size", "--quality-of", "13B", "--inference-tokens", "2T", "--train-price-per-gpu-hour", "2",
                       "--inference-price-per-gpu-hour", "3", "--decode-mfu", "0.05", "--json")
    d = json.loads(out)
    assert code == 0 and d["objective"] == "usd" and d["usd_savings_fraction"] > 0
    assert d["assumptions"]["cost_inference_usd_per_gpu_hour"] == 3


@pytest.mark.parametrize("args,needle", [
    (["size"], "exactly one"),
    (["size", "--compute", "1e23", "--quality-of", "7B"], "exactly one"),
    (["size", "--quality-of", "7B"], "--inference-tokens"),
    (["size", "--compute", "1e23", "--inference-tokens", "1T"], "--inference-tokens"),
    (["size", "--compute", "-5"], "positive"),
    (["size", "--compute", "abc"], "not a number"),
    (["size", "--loss", "1.0", "--inference-tokens", "1T"], "irreducible"),
    (["size", "--quality-of", "7B", "--inference-tokens", "1T", "--laws", "nope"], "unknown scaling-law set"),
    (["size", "--quality-of", "7B", "--inference-tokens", "1T", "--train-mfu", "2"], "train-mfu"),
])
def test_size_errors(cli, args, needle):
    code, out, err = cli(*args)
    assert code == 2 and needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_testtime(cli, tmp_path):
    f = tmp_path / "q.csv"
    f.write_text("id,p_success,cost\nq1,0.9,1\nq2,0.2,1\nq3,0.05,1\nq4,0.5,1\n")
    code, out, err = cli("testtime", str(f), "--budget", "12", "--json")
    d = json.loads(out)
    assert code == 0 and d["method"] == "greedy" and d["spent"] <= 12
    assert d["expected_solved"] >= d["uniform_expected_solved"]
    code, out, _ = cli("testtime", str(f), "--budget", "12")
    assert code == 0 and "expected solved" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("id,p_success\nq1,0.5\nq2,2\n")
    code, _, err = cli("testtime", str(bad), "--budget", "5")
    assert code == 2 and "row 3" in err and "p_success" in err
    code, _, err = cli("testtime", str(f), "--budget", "0")
    assert code == 2


def test_apis(cli):
    code, out, _ = cli("apis", "--provider", "together", "--json")
    rows = json.loads(out)
    assert code == 0 and rows and all(r["id"].startswith("together/") for r in rows)
    assert all("age_days" in r and r["as_of"] and r["source"] for r in rows)
    code, out, _ = cli("apis", "--model-like", "405b", "--csv")
    assert code == 0 and out.splitlines()[0].startswith("id,") and len(out.splitlines()) >= 4
    code, _, err = cli("apis", "--provider", "nosuch")
    assert code == 2 and "unknown API provider" in err


def test_own_vs_rent_with_explicit_prices(cli):
    code, out, err = cli("own-vs-rent", "--gpu", "H100", "--rent-usd-per-gpu-hour", "2", "--rent-usd-per-gpu-hour", "4",
                         "--utilization", "0.9", "--json")
    d = json.loads(out)
    assert code == 0, err
    assert d["gpu"] == "H100-SXM" and len(d["comparisons"]) == 2 and d["rent_source"] == "given"
    assert d["comparisons"][1]["owned_cheaper"] and d["comparisons"][1]["payback_months"] > 0
    code, out, _ = cli("own-vs-rent", "--gpu", "H100", "--rent-usd-per-gpu-hour", "3")
    assert code == 0 and "break-even" in out


def test_own_vs_rent_from_catalog(cli):
    code, out, err = cli("own-vs-rent", "--gpu", "H100-SXM", "--json")
    if code != 0 and "no on-demand" in err:
        pytest.skip("catalog has no on-demand H100 offers")
    d = json.loads(out)
    assert code == 0 and {c["label"] for c in d["comparisons"]} == {"cheapest on-demand", "median on-demand"}


@pytest.mark.parametrize("args,needle", [
    (["own-vs-rent", "--gpu", "H100", "--rent-usd-per-gpu-hour", "2", "--utilization", "0"], "utilization"),
    (["own-vs-rent", "--gpu", "nosuchgpu", "--rent-usd-per-gpu-hour", "2"], "unknown"),
    (["own-vs-rent", "--gpu", "A100-80GB", "--rent-usd-per-gpu-hour", "2"], "--purchase-usd"),
    (["own-vs-rent", "--gpu", "H100", "--rent-usd-per-gpu-hour", "-2"], "rental price"),
])
def test_own_vs_rent_errors(cli, args, needle):
    code, _, err = cli(*args)
    assert code == 2 and needle in err and "Traceback" not in err


def test_thresholds(cli):
    code, out, _ = cli("thresholds", "--flops", "3.8e25", "--json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and rows["eu-ai-act-gpai-systemic-risk"]["exceeded"] and not rows["ca-sb53-frontier-model"]["exceeded"]
    code, out, _ = cli("thresholds")
    assert code == 0 and "revoked" in out
    code, _, err = cli("thresholds", "--flops", "-1")
    assert code == 2


def test_breakeven_compares_five_apis(cli):
    code, out, err = cli("breakeven", "--model", "llama-3.3-70b", "--tokens-per-month", "5B",
                         "--price-per-gpu-hour", "2", "--json")
    assert code == 0, err
    d = json.loads(out)
    for k in ("self_host_usd_per_month", "api_usd_per_month", "breakeven_tokens_per_month"):
        assert k in d
    assert len(d["comparisons"]) >= 5
    assert sum(c["same_model"] for c in d["comparisons"]) == 3  # Together, DeepInfra, Groq serve Llama-3.3-70B
    assert d["self_host_usd_per_month"] == pytest.approx(
        d["self_host"]["gpus_per_replica"] * d["self_host"]["replicas"] * 2 * 730)
    assert len(d["curve"]["tokens_per_month"]) == len(d["curve"]["self_host_usd_per_month"])


def test_breakeven_table_and_chart(cli):
    code, out, err = cli("breakeven", "--model", "llama-3.1-8b", "--tokens-per-month", "20B", "--price-per-gpu-hour", "2",
                         "--api", "together/meta-llama-3.1-8b-instruct-turbo", "--api", "groq/llama-3.1-8b-instant")
    assert code == 0, err
    assert "S = self-host" in out and "tokens/month (log)" in out and "together/meta-llama-3.1-8b" in out


@pytest.mark.parametrize("args,needle", [
    (["breakeven", "--model", "llama-3.3-70b", "--tokens-per-month", "-5"], "positive"),
    (["breakeven", "--model", "llama-3.3-70b", "--tokens-per-month", "5B", "--input-share", "1.5"], "input share"),
    (["breakeven", "--model", "llama-3.3-70b", "--tokens-per-month", "5B", "--api", "nope/x",
      "--price-per-gpu-hour", "2"], "unknown API model"),
    (["breakeven", "--model", "no-such-model", "--tokens-per-month", "5B", "--price-per-gpu-hour", "2"], "unknown"),
])
def test_breakeven_errors(cli, args, needle):
    code, _, err = cli(*args)
    assert code == 2 and needle in err and "Traceback" not in err


@pytest.mark.skipif(shutil.which("gpuplan") is None, reason="console script not installed")
def test_console_script_size():
    p = subprocess.run(["gpuplan", "size", "--quality-of", "13B", "--inference-tokens", "2T", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["params"] == pytest.approx(6.969e9, rel=0.01)
    p = subprocess.run(["gpuplan", "size", "--compute", "nan"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("error:")


def test_breakeven_multi_node_replica_and_same_weights(cli):
    code, out, err = cli("breakeven", "--model", "deepseek-v3", "--tokens-per-month", "50B", "--precision", "fp8",
                         "--price-per-gpu-hour", "2", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["self_host"]["gpus_per_replica"] >= 16  # 671B params at fp8 do not fit one 8×H100 node
    rows = {c["api"]: c for c in d["comparisons"]}
    assert rows["together/deepseek-v3"]["same_model"] and not rows["together/deepseek-r1"]["same_model"]
    assert d["primary_api"] in {a for a, c in rows.items() if c["same_model"]}
