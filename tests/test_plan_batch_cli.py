"""`gpuplan plan batch` as a user runs it: the README job, JSON, export, and one-line errors."""
from __future__ import annotations

import json

import pytest

README = ["plan", "batch", "--model", "llama-3.1-8b", "--items", "10M", "--input-len", "500", "--output-len", "200",
          "--deadline", "3d"]


def test_readme_job_ranks_fleets_with_marketplace_offers(cli):
    code, out, err = cli(*README)
    assert code == 0, err
    assert "batch fleets for llama-3.1-8b: 10,000,000 items (500 in / 200 out tokens) by 3.0 d" in out
    assert "#1 in detail" in out and "#1 (" in out
    assert "decentralized / marketplace GPUs:" in out
    code, out, err = cli(*README, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["workload"] == "batch" and data["kind"] == "generate"
    fleets = data["fleets"]
    assert len(fleets) >= 5
    assert any(f["kind_shares"].get("marketplace", 0) > 0 for f in fleets)
    for f in fleets:
        assert f["finish_hours"] <= 72
        assert abs(sum(g["share"] for g in f["groups"]) - 1) < 1e-9
        assert f["cost_p10_usd"] <= f["cost_usd"] <= f["cost_p90_usd"]
        assert f["cost_per_million_output_tokens_usd"] > 0
        for g in f["groups"]:
            assert {"provider", "hosts", "hosts_available", "share", "cold_start_hours", "egress_usd",
                    "interruptions_per_host_hour", "offer"} <= g.keys()
    assert data["suitability"]["verdict"]


def test_embeddings_and_generic_work_from_the_command_line(cli):
    code, out, err = cli("plan", "batch", "--model", "qwen3-8b", "--tokens-per-item", "512", "--items", "50M",
                         "--deadline", "1d", "--json", "--limit", "3")
    assert code == 0, err
    data = json.loads(out)
    assert data["kind"] == "embed" and data["fleets"][0]["cost_per_million_tokens_usd"] > 0
    code, out, err = cli("plan", "batch", "--gpu-seconds", "2.5", "--items", "1M", "--deadline", "2d",
                         "--min-gpu-memory", "24", "--limit", "3")
    assert code == 0, err
    assert "generic GPU work" in out and "2.5 GPU-s on H100-SXM" in out and "$/1k items" in out


@pytest.mark.parametrize("target, marker", [("skypilot", "sky jobs launch"), ("k8s", "kind: Job")])
def test_export_prints_the_files_and_the_command(cli, target, marker):
    code, out, err = cli(*README, "--export", target)
    assert code == 0, err
    assert marker in out and "split -d -a 5" in out and "# file: gpuplan-batch-g1" in out
    code, out, err = cli(*README, "--export", target, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["files"] and data["shards"] >= 1 and "split" in data["command"]


@pytest.mark.parametrize("args, fragment", [
    (["--items", "0"], "--items must be positive"),
    (["--items", "-5"], "--items must be positive"),
    (["--items", "nan"], "--items"),
    (["--items", "1e30"], "--items"),
    (["--items", "10M", "--deadline", "0"], "--deadline must be positive"),
    (["--items", "10M", "--deadline", "nan"], "--deadline"),
    (["--items", "10M", "--deadline", "-3d"], "--deadline"),
    (["--items", "10M", "--input-len", "0"], "--input-len"),
    (["--items", "10M", "--output-len", "-3"], "--output-len"),
    (["--items", "10M", "--output-len", "1e9"], "--output-len"),
    (["--items", "10M", "--budget", "nan"], "--budget"),
    (["--items", "10M", "--budget", "-1"], "--budget"),
    (["--items", "10M", "--hosts-per-offer", "0"], "--hosts-per-offer"),
    (["--items", "10M", "--kind", "foo"], "--kind"),
    (["--items", "10M", "--kind", "generate", "--gpu-seconds", "2"], "--gpu-seconds is for --kind gpu"),
    (["--items", "10M", "--precision", "fp9"], "--precision"),
    (["--items", "10M", "--gpu", "H900"], "unknown GPU"),
    (["--items", "10M", "--params", "8B"], "exactly one of --model and --params"),
    (["--items", "10M", "--engine", "tgi"], "--engine"),
])
def test_hostile_inputs_get_one_line_errors(cli, args, fragment):
    code, out, err = cli("plan", "batch", "--model", "llama-3.1-8b", "--deadline", "3d", *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert fragment in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("args, fragment", [
    (["--model", "llama-9b", "--items", "10", "--deadline", "1d"], "unknown model 'llama-9b'"),
    (["--items", "10", "--deadline", "1d"], "exactly one of --model and --params"),
    (["--model", "llama-3.1-8b", "--deadline", "1d"], "--items is required"),
    (["--model", "llama-3.1-8b", "--items", "10"], "--deadline is required"),
    (["--kind", "gpu", "--items", "10", "--deadline", "1d"], "--kind gpu needs --gpu-seconds"),
    (["--gpu-seconds", "nan", "--items", "10", "--deadline", "1d"], "--gpu-seconds"),
    (["--gpu-seconds", "3", "--reference-gpu", "X100", "--items", "10", "--deadline", "1d"], "unknown GPU 'X100'"),
    (["--model", "qwen3-8b", "--tokens-per-item", "64", "--output-len", "5", "--items", "10", "--deadline", "1d"],
     "--output-len is for generation"),
    (["--model", "qwen3-8b", "--tokens-per-item", "10000000", "--items", "10", "--deadline", "1d"], "--tokens-per-item"),
])
def test_more_hostile_inputs(cli, args, fragment):
    code, out, err = cli("plan", "batch", *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0], err


@pytest.mark.parametrize("args, fragment", [
    (["--deadline", "10m"], "too short"),
    (["--items", "1e12", "--deadline", "1h"], "no fleet finishes"),
    (["--budget", "1"], "over the --budget"),
])
def test_nothing_fits_exits_1_with_the_reason(cli, args, fragment):
    base = {"--items": "10M", "--deadline": "3d"}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    flat = [x for kv in base.items() for x in kv]
    code, out, err = cli("plan", "batch", "--model", "llama-3.1-8b", *flat)
    assert code == 1, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0], err
    code, out, err = cli("plan", "batch", "--model", "llama-3.1-8b", *flat, "--json")
    assert code == 1 and json.loads(out)["fleets"] == [] and fragment in err
