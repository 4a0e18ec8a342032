"""`gpuplan models` list / show / derive, in-process and through the installed console script."""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys

import pytest

from gpuplan.models import get_preset, preset_ids


def test_list_json_has_every_preset_with_its_counts(cli):
    code, out, err = cli("models", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["id"] for r in rows] == preset_ids()
    by_id = {r["id"]: r for r in rows}
    assert by_id["llama-3.1-8b"]["params_b"] == pytest.approx(8.03, abs=0.001)
    assert by_id["llama-3.1-8b"]["kv_kib_per_token_bf16"] == 128
    assert by_id["deepseek-v3"]["active_b"] == pytest.approx(get_preset("deepseek-v3").active_params() / 1e9, abs=0.001)
    assert by_id["mixtral-8x7b"]["experts"] == "8 top-2"


def test_list_subcommand_and_csv(cli):
    code, out, _ = cli("models", "list", "--csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(preset_ids())
    assert {"id", "params_b", "active_b", "n_layers", "hidden_size", "n_kv_heads", "attention", "kv_kib_per_token_bf16"} <= set(rows[0])


def test_list_table(cli):
    code, out, _ = cli("models")
    assert code == 0
    assert "qwen3-235b-a22b" in out and "KV KiB/tok" in out


def test_show_json_has_working(cli):
    code, out, _ = cli("models", "show", "Llama-3.1-70B", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["model"]["name"] == "llama-3.1-70b"
    assert data["counts"]["kv_bytes_per_token_bf16"] == 2 * 80 * 8 * 128 * 2
    assert data["counts"]["total_vs_published_pct"] == pytest.approx(0.0, abs=0.01)
    assert "80 layers" in data["kv_working"]


def test_show_local_attention_working(cli):
    code, out, _ = cli("models", "show", "gemma-3-27b", "--json")
    assert code == 0
    data = json.loads(out)
    assert "52 of 62 layers keep only the last 1024 tokens" in data["kv_working"]
    spec = get_preset("gemma-3-27b")
    per_layer = spec.kv_bytes_per_token(2.0) / 62
    assert data["counts"]["kv_gib_per_128k_sequence_bf16"] == pytest.approx(
        per_layer * (52 * 1024 + 10 * 131072) / 2**30)
    code, out, _ = cli("models", "show", "llama-3.1-8b", "--json")
    assert "kv_gib_per_128k_sequence_bf16" not in json.loads(out)["counts"]  # no window: per token x context


def test_show_refuses_a_hybrid_config_in_one_line(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "granitemoehybrid", "num_hidden_layers": 4, "hidden_size": 64,
                                "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128,
                                "layer_types": ["mamba", "mamba", "mamba", "attention"]}))
    code, out, err = cli("models", "show", str(path))
    assert code == 2 and "not modelled" in err and len(err.strip().splitlines()) == 1


def test_show_table_for_a_config_file(cli, tmp_path):
    from gpuplan.models.hf_config import spec_to_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps(spec_to_config(get_preset("qwen2.5-7b"))))
    code, out, err = cli("models", "show", str(path))
    assert code == 0, err
    assert "7.616 B" in out and "56.00 KiB" in out


def test_derive(cli):
    code, out, _ = cli("models", "derive", "70B", "--json")
    assert code == 0
    assert json.loads(out)["counts"]["total_params"] == pytest.approx(70e9, rel=0.02)
    code, out, _ = cli("models", "derive", "600e9", "--active", "30B", "--json")
    data = json.loads(out)
    assert data["model"]["n_experts"] > 0
    assert data["counts"]["active_params"] == pytest.approx(30e9, rel=0.03)


@pytest.mark.parametrize("args, needle", [
    (["models", "show", "llama-9-70b"], "unknown model"),
    (["models", "derive", "lots"], "not a parameter count"),
    (["models", "derive", "0"], "must be positive"),
    (["models", "derive", "7B", "--active", "8B"], "cannot exceed"),
])
def test_errors_are_one_line_exit_2(cli, args, needle):
    code, out, err = cli(*args)
    assert code == 2
    assert needle in err and err.startswith("error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_bad_config_file_is_one_line(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    code, _, err = cli("models", "show", str(path))
    assert code == 2 and "not valid JSON" in err and err.count("\n") == 1


def test_console_script():
    exe = shutil.which("gpuplan")
    cmd = [exe] if exe else [sys.executable, "-m", "gpuplan.cli.main"]
    proc = subprocess.run(cmd + ["models", "show", "deepseek-v3", "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["counts"]["kv_bytes_per_token_bf16"] == 61 * (512 + 64) * 2
    proc = subprocess.run(cmd + ["models", "show", "nope-model"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: unknown model")


def test_show_hybrid_and_sparse_attention_working(cli):
    """The KV working names what each kind of layer keeps: a hybrid's state, DeepSeek-V3.2's indexer key."""
    from pathlib import Path

    config = Path(__file__).parent / "fixtures" / "configs" / "qwen3-next-80b-a3b.json"
    code, out, err = cli("models", "show", str(config), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["kv_working"].startswith("2 x 12 layers x 2 KV heads x 256 x 2 B = 24.0 KiB; the other 36 layers")
    assert d["counts"]["linear_state_mib_per_sequence"] == pytest.approx(36 * (32 * 128 * 128 * 2 + 8192 * 3 * 2) / 2**20)
    code, out, err = cli("models", "show", "deepseek-v3.2")
    assert code == 0, err
    assert "128 indexer key" in out and "MiB" not in out
