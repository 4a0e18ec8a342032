"""`gpuplan estimate train` / `gpuplan estimate memory`: JSON fields, human output, bad input."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

REQUIRED = {"flops", "gpu_hours", "wall_hours", "wall_days", "step_time_s", "tokens_per_s", "mfu", "hfu",
            "memory_per_gpu_gb", "layout", "assumptions", "fits", "memory_shortfall_gb", "runners_up", "rejected"}


def test_train_json_fields(cli):
    code, out, err = cli("estimate", "train", "--model", "llama-3.1-8b", "--tokens", "1T", "--gpu", "H100",
                         "--gpus", "64", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert REQUIRED <= set(d)
    assert {"tp", "pp", "cp", "dp", "ep", "micro_batch", "recompute", "zero"} <= set(d["layout"])
    assert {"efficiency", "goodput", "peak_tflops", "precision", "flops_convention", "fabric"} <= set(d["assumptions"])
    assert d["n_gpus"] == 64 and d["fits"] is True
    assert d["gpu_hours"] == pytest.approx(d["wall_hours"] * 64)
    assert d["tokens"] == 1e12


def test_train_params_and_suffixes(cli):
    code, out, _ = cli("estimate", "train", "--params", "70B", "--tokens", "2e12", "--gpu", "A100-80GB",
                       "--gpus", "512", "--fabric", "ethernet", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["assumptions"]["fabric"]["inter_node_gbps_per_gpu"] == pytest.approx(100)
    assert 60e9 < d["assumptions"]["params"] < 80e9


def test_train_human_output_and_lora_epochs(cli):
    code, out, _ = cli("estimate", "train", "--model", "llama-3.1-8b", "--epochs", "3", "--dataset-tokens", "100M",
                       "--method", "lora", "--gpu", "H100", "--gpus", "1")
    assert code == 0
    assert "GPU-hours" in out and "memory per GPU" in out and "3e+08 tokens" in out


def test_the_panel_names_the_first_fit_and_the_last_refit_the_json_the_whole_history(cli):
    from gpuplan.display import fit_provenance

    history = "fitted 2026-11-27 on 404 rows; goodput refitted 2026-11-29 on 423 rows; MoE refitted 2026-11-30 on 468 rows"
    assert fit_provenance(history) == ("fitted 2026-11-27 on 404 rows; 2 refits since, the last: MoE refitted "
                                       "2026-11-30 on 468 rows")
    assert fit_provenance("fitted 2026-11-27 on 404 rows") == "fitted 2026-11-27 on 404 rows"
    code, out, _ = cli("estimate", "train", "--model", "llama-3.1-8b", "--gpu", "H100", "--gpus", "8")
    _, js, _ = cli("estimate", "train", "--model", "llama-3.1-8b", "--gpu", "H100", "--gpus", "8", "--json")
    source = json.loads(js)["assumptions"]["efficiency_source"]
    assert code == 0 and source.count("; ") >= 2  # the shipped file records its refits
    assert " ".join(fit_provenance(source).split()) in " ".join(out.replace("│", " ").split())


@pytest.mark.parametrize("args,needle", [
    (["--tokens", "1T", "--gpu", "H100", "--gpus", "8", "--tp", "3"], "tp=3"),
    (["--tokens", "-5", "--gpu", "H100"], "--tokens"),
    (["--tokens", "nanT", "--gpu", "H100"], "--tokens"),
    (["--tokens", "1e30", "--gpu", "H100"], "beyond"),
    (["--tokens", "1T", "--gpu", "H9000"], "unknown GPU"),
    (["--tokens", "1T", "--gpu", "A100-80GB", "--precision", "fp8"], "fp8"),
    (["--tokens", "1T", "--gpu", "H100", "--gpus", "0"], "GPU count"),
    (["--tokens", "1T", "--gpu", "H100", "--fabric", "carrier-pigeon"], "--fabric"),
    (["--tokens", "1T", "--gpu", "H100", "--method", "dora"], "--method"),
    (["--tokens", "1T"], "--gpu"),
])
def test_train_usage_errors(cli, args, needle):
    code, out, err = cli("estimate", "train", "--model", "llama-3.1-8b", *args)
    assert code == 2
    assert needle in err and err.startswith("error: ") and "Traceback" not in err


def test_train_not_fitting_exits_1_with_shortfall(cli):
    code, out, err = cli("estimate", "train", "--model", "llama-3.1-70b", "--tokens", "1e9", "--gpu", "RTX-4090",
                         "--gpus", "1", "--json")
    assert code == 1
    assert json.loads(out)["memory_shortfall_gb"] > 100
    assert "GB more than" in err


def test_memory_command(cli):
    code, out, _ = cli("estimate", "memory", "--model", "llama-3.1-8b", "--gpu", "H100", "--gpus", "8",
                       "--zero", "3", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["fits"] is True and d["layout"]["dp"] == 8
    assert d["memory"]["optimizer"] == pytest.approx(8.03e9 * 12 / 8 / 1e9, rel=0.02)
    code, out, err = cli("estimate", "memory", "--model", "llama-3.1-70b", "--gpu", "RTX-4090", "--method", "qlora")
    assert code == 1 and "short by" in out


def test_console_script_runs():
    exe = [sys.executable, "-c", "import sys; from gpuplan.cli.main import main; sys.exit(main())"]
    import shutil

    script = shutil.which("gpuplan")
    cmd = [script] if script else exe
    r = subprocess.run(cmd + ["estimate", "train", "--model", "llama-3.1-8b", "--tokens", "1e11", "--gpu", "h100",
                              "--gpus", "8", "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["gpu"] == "H100-SXM"
    r = subprocess.run(cmd + ["estimate", "train", "--model", "llama-3.1-8b", "--tokens", "1T", "--gpu", "H100",
                              "--tp", "3", "--gpus", "8"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: ")


def test_tokens_optional_for_step_time_with_gpus(cli):
    import json as _json

    code, out, err = cli("estimate", "train", "--model", "llama-3.1-8b", "--gpu", "H100", "--gpus", "8", "--json")
    assert code == 0, err
    est = _json.loads(out)
    assert est["step_time_s"] > 0 and 0 < est["mfu"] < 1 and any("no --tokens" in n for n in est["notes"])
    # neither --tokens nor --gpus: the count with the best throughput per GPU, and it says so
    code, out, err = cli("estimate", "train", "--model", "llama-3.1-8b", "--gpu", "H100", "--json")
    assert code == 0, err
    est = _json.loads(out)
    assert any("highest throughput per GPU" in n for n in est["notes"]) and "Traceback" not in err


def test_a_long_sequence_on_the_default_stack_names_the_pytorch_attention_gap(cli):
    """At 64k tokens attention is most of the step: on H100 the default (Megatron, cuDNN attention) estimate says what a
    PyTorch stack's FlashAttention-2 keeps and names --framework pytorch; on A100, where both stacks run
    FlashAttention-2, it does not; at 4k it does not either."""
    def notes(gpu, seq):
        code, out, err = cli("estimate", "train", "--model", "llama-3.1-8b", "--tokens", "1e10", "--gpu", gpu,
                             "--gpus", "64", "--seq-len", str(seq), "--json")
        assert code == 0, err
        return json.loads(out)["notes"]

    assert any("FlashAttention-2" in n and "--framework pytorch" in n for n in notes("H100", 65536))
    assert not any("FlashAttention-2" in n for n in notes("A100-80GB", 65536))
    assert not any("FlashAttention-2" in n for n in notes("H100", 4096))


def test_framework_pytorch_slows_fp8_only(cli):
    """--framework pytorch (torchtitan, FSDP2, Composer): FP8 GEMMs keep the fitted share of Megatron's efficiency,
    said in the assumptions and notes; bf16 GEMMs run the same on both stacks, attention on H100 at FlashAttention-2's
    share of cuDNN's (on A100 both stacks run FlashAttention-2); an unknown stack is a usage error."""
    def run(*extra):
        code, out, err = cli("estimate", "train", "--model", "llama-3.1-8b", "--tokens", "1e11", "--gpu", "H100",
                             "--gpus", "8", "--tp", "1", "--pp", "1", "--micro-batch", "2", *extra, "--json")
        assert code == 0, err
        return json.loads(out)

    mega, torch = run("--precision", "fp8"), run("--precision", "fp8", "--framework", "pytorch")
    ratio = torch["assumptions"]["framework_fp8_ratio"]
    assert mega["assumptions"]["framework"] == "megatron" and mega["assumptions"]["framework_fp8_ratio"] == 1.0
    assert torch["assumptions"]["framework"] == "pytorch" and 0.4 <= ratio < 1.0
    assert torch["step_time_s"] > mega["step_time_s"] * 1.05
    assert any("pytorch stack" in n for n in torch["notes"])
    assert any("--framework pytorch" in n for n in mega["notes"])  # an unstated stack says what the other one costs
    b_mega, b_torch = run(), run("--framework", "PyTorch")
    assert b_torch["assumptions"]["framework_fp8_ratio"] == 1.0
    # bf16 GEMMs run the same on both stacks; on H100 the PyTorch stack's attention is FlashAttention-2
    att = b_torch["assumptions"]["framework_attention_ratio"]
    assert b_mega["assumptions"]["framework_attention_ratio"] == 1.0 and 0.3 <= att < 1.0
    assert b_mega["step_time_s"] < b_torch["step_time_s"] < b_mega["step_time_s"] / att
    assert any("FlashAttention-2" in n for n in b_torch["notes"])
    a_mega, a_torch = run("--gpu", "A100-80GB"), run("--gpu", "A100-80GB", "--framework", "pytorch")
    assert a_torch["step_time_s"] == pytest.approx(a_mega["step_time_s"])  # FlashAttention-2 in both stacks
    assert a_torch["assumptions"]["framework_attention_ratio"] == 1.0
    code, out, err = cli("estimate", "train", "--model", "llama-3.1-8b", "--tokens", "1e11", "--gpu", "H100",
                         "--framework", "jax")
    assert code == 2 and "framework" in err and err.strip().count("\n") == 0
