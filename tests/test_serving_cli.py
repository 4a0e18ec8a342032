"""`gpuplan estimate serve` and `gpuplan estimate capacity`."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest


def test_serve_json_top_level_fields(cli):
    code, out, err = cli("estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100",
                         "--input-len", "1000", "--output-len", "500", "--json")
    assert code == 0, err
    d = json.loads(out)
    for k in ("output_tokens_per_s", "output_tokens_per_s_per_gpu", "ttft_ms", "tpot_ms", "max_concurrency",
              "kv_cache_tokens", "memory_per_gpu_gb", "assumptions"):
        assert k in d
    assert d["fits"] and d["tp"] == 1 and d["output_tokens_per_s"] > 1000


def test_serve_params_and_targets(cli):
    code, out, err = cli("estimate", "serve", "--params", "8B", "--gpu", "A100-80GB", "--input-len", "2k",
                         "--output-len", "256", "--max-tpot-ms", "40", "--engine", "sglang", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["meets_targets"] and d["tpot_ms"] <= 40 and d["engine"] == "sglang"


def test_serve_table(cli):
    code, out, _ = cli("estimate", "serve", "-m", "llama-3.3-70b", "--gpu", "H200", "--precision", "fp8",
                       "--input-len", "1000", "--output-len", "1000")
    assert code == 0 and "output tokens/s" in out and "KV cache tokens" in out


def test_serve_not_fit_exit_1_with_message(cli):
    code, out, err = cli("estimate", "serve", "--model", "llama-3.3-70b", "--gpu", "H100", "--gpus", "1",
                         "--input-len", "1000", "--output-len", "1000")
    assert code == 1
    assert "needs" in err and "--gpus 2" in err and "Traceback" not in err


@pytest.mark.parametrize("args, match", [
    (["--input-len", "0"], "input"),
    (["--input-len", "nan"], "input"),
    (["--output-len", "1e30"], "output_len"),
    (["--concurrency", "0"], "concurrency"),
    (["--requests", "-1"], "requests must be"),
    (["--concurrency", "8", "--requests", "0"], "requests must be"),
    (["--max-num-seqs", "0"], "max_num_seqs must be"),
    (["--max-num-seqs", "-4"], "max_num_seqs must be"),
    (["--engine", "foo"], "unknown engine"),
    (["--precision", "fp7"], "unknown precision"),
    (["--gpu", "Z9000"], "unknown GPU"),
])
def test_serve_bad_input_exit_2(cli, args, match):
    base = {"--gpu": "H100", "--input-len": "100", "--output-len": "100"}
    for i in range(0, len(args), 2):
        base[args[i]] = args[i + 1]
    flat = [x for kv in base.items() for x in kv]
    code, _, err = cli("estimate", "serve", "--model", "llama-3.1-8b", *flat)
    assert code == 2 and match in err and "Traceback" not in err


def test_serve_max_num_seqs_raises_vllm_a100_default(cli):
    """vLLM caps an A100 at 256 running requests; --max-num-seqs (vLLM's own flag) lifts it, and the table says which."""
    base = ("estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "A100-80GB", "--input-len", "500",
            "--output-len", "500")
    code, out, err = cli(*base, "--json")
    assert code == 0, err
    default = json.loads(out)
    assert default["max_concurrency"] == 256 and default["assumptions"]["max_num_seqs"] == 256
    code, out, err = cli(*base, "--max-num-seqs", "1024", "--json")
    assert code == 0, err
    wider = json.loads(out)
    assert wider["max_concurrency"] > 256 and wider["output_tokens_per_s"] > default["output_tokens_per_s"]
    code, out, _ = cli(*base)
    assert code == 0 and "at most 256 running" in " ".join(out.split())


def test_serve_fp8_on_a100_is_usage_error(cli):
    code, _, err = cli("estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "A100", "--precision", "fp8",
                       "--input-len", "100", "--output-len", "100")
    assert code == 2 and "fp8" in err


def test_serve_needs_model_xor_params(cli):
    code, _, err = cli("estimate", "serve", "--gpu", "H100", "--input-len", "100", "--output-len", "100")
    assert code == 2 and "--model" in err


def test_capacity_one_gpu_json(cli):
    code, out, err = cli("estimate", "capacity", "--model", "llama-3.1-8b", "--gpu", "L40S", "--requests-per-s", "5",
                         "--input-len", "1000", "--output-len", "200", "--max-tpot-ms", "60",
                         "--price-per-gpu-hour", "1.0", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["feasible"] and d["total_gpus"] >= 1 and d["cost_per_million_output_tokens_usd"] > 0


def test_capacity_all_gpus_table(cli):
    code, out, err = cli("estimate", "capacity", "--model", "llama-3.3-70b", "--tokens-per-month", "20B",
                         "--input-len", "1000", "--output-len", "300", "--precision", "fp8",
                         "--max-tpot-ms", "50", "--price-per-gpu-hour", "2")
    assert code == 0, err
    assert "H100-SXM" in out and "$/M out" in out


def test_capacity_bad_traffic(cli):
    code, _, err = cli("estimate", "capacity", "--model", "llama-3.1-8b", "--gpu", "H100",
                       "--input-len", "100", "--output-len", "100")
    assert code == 2 and "requests_per_s" in err


@pytest.mark.skipif(shutil.which("gpuplan") is None, reason="console script not installed")
def test_console_script_serve():
    r = subprocess.run(["gpuplan", "estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100",
                        "--input-len", "512", "--output-len", "128", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["kv_cache_tokens"] > 100_000
    bad = subprocess.run(["gpuplan", "estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100",
                          "--input-len", "-1", "--output-len", "128"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error:")


@pytest.mark.parametrize("flags", [["--attention-dp"], ["--gpus", "2", "--ep", "2"]])
def test_expert_layouts_are_refused_on_dense_models(cli, flags):
    code, _, err = cli("estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100", *flags)
    assert code == 2 and "mixture-of-experts" in err and "Traceback" not in err
    code, out, err = cli("estimate", "serve", "--model", "qwen3-30b-a3b", "--gpu", "H100", *flags, "--json")
    assert code == 0, err
