"""Graph-captured fused MoE (issue 13): from NeMo 26.06 NVIDIA's MXFP8 MoE recipes on Blackwell replay the whole
iteration as one CUDA graph (sync-free dropless dispatch) and run each MoE layer's experts as one fused grouped-MLP
kernel. The step then pays none of the launch costs the estimator charges per layer, per MoE layer and per local
expert; nothing else changes. It is an input (`fused_moe`, `--fused-moe`, a calibration column), off by default,
counted only on data-centre Blackwell.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from gpuplan.catalog.gpus import get_gpu
from gpuplan.models import get_preset
from gpuplan.perf import calibration as cal
from gpuplan.perf.efficiency import default_efficiency
from gpuplan.perf.layout_search import _select
from gpuplan.perf.training_shape import model_shape
from gpuplan.perf.training_time import gpu_features, step_time_s
from gpuplan.perf.training_validation import load_rows, predict, prepare_row
from gpuplan.perf.workload import pretraining

LAUNCH_COSTS = dict(layer_overhead_us=0.0, moe_layer_overhead_us=0.0, moe_expert_overhead_us=0.0)


def _step(preset, gpu, fused, eff=None, *, e=8, b=4, gpn=8):
    eff = eff or default_efficiency()
    wl = pretraining(1e12, seq_len=4096, global_batch=512, precision="fp8", fused_moe=fused)
    shape = model_shape(get_preset(preset))
    feats = _select(gpu_features([get_gpu(gpu)], wl.precision, gpn, eff), 0)
    out = step_time_s(shape, wl, feats, eff, 1, 1, 8, 1, e, b, 0, 1, 1, 512, gpn, 50e9)
    return {k: float(np.asarray(v)) for k, v in out.items()}


def test_fused_drops_exactly_the_launch_costs_on_blackwell():
    plain, fused = _step("qwen3-30b-a3b", "B200", False), _step("qwen3-30b-a3b", "B200", True)
    assert fused["total"] < 0.85 * plain["total"]  # 16 local experts x 48 layers of launches are a large share
    # With those costs at zero the two stacks time the same step: fusing removes them and nothing else.
    eff0 = default_efficiency().with_params(**LAUNCH_COSTS)
    for k, v in _step("qwen3-30b-a3b", "B200", False, eff0).items():
        assert fused[k] == pytest.approx(v, rel=1e-12), k
    for k in ("ep", "dp", "optimizer"):
        assert fused[k] == pytest.approx(plain[k], rel=1e-12), k


@pytest.mark.parametrize("gpu", ["H100", "MI300X", "RTX-PRO-6000"])
def test_fused_changes_nothing_off_data_centre_blackwell(gpu):
    # The CuTeDSL fused grouped-MLP kernel is sm100: Hopper, AMD and the sm120 RTX cards keep their launches.
    assert _step("qwen3-30b-a3b", gpu, True) == _step("qwen3-30b-a3b", gpu, False)


def test_fused_changes_nothing_for_a_dense_model():
    assert _step("llama-3.1-8b", "B200", True, e=1) == _step("llama-3.1-8b", "B200", False, e=1)


def test_the_fused_rows_are_the_graph_captured_recipes():
    """Data check: the rows marked fused are NVIDIA's MXFP8 MoE recipes on data-centre Blackwell from June 2026 on
    (Megatron-Bridge 26.06 / 26.08, MLPerf Training v6.0's DeepSeek-V3), and each names the configuration that sets
    the stack up."""
    rows = [r for r in load_rows() if (r.get("fused_moe") or "").strip() == "1"]
    assert len(rows) >= 10
    for r in rows:
        assert r["source_id"] in ("megatron-bridge-26.06", "megatron-bridge-26.08", "mlperf-training-v6.0"), r["row"]
        assert "MXFP8" in (r["name"] + r["notes"]).upper() and r["precision"] == "fp8", r["row"]
        assert r["gpu_id"] in ("B200", "B300", "GB200", "GB300"), r["row"]
        assert "full_iteration" in r["notes"] and "fused grouped MLP" in r["notes"], r["row"]


@pytest.mark.parametrize("row, tolerance", [("324", 0.10), ("335", 0.10), ("336", 0.20)])
def test_pinned_fused_rows(row, tolerance):
    """Qwen3-30B-A3B on 8 GB200 (26.06, 26.08) and Qwen3-235B-A22B on 256 GB300 (26.08), as run (fused): within the
    stated tolerance of the published step; timed without the fused stack they were 50%, 50% and 26% slow."""
    eff = default_efficiency()
    r = next(x for x in load_rows() if str(x["row"]) == row)
    prep = prepare_row(r, eff)
    pred, _ = predict(prep, eff)
    assert abs(pred / prep.measured - 1.0) <= tolerance, (row, pred, prep.measured)
    unfused = prepare_row({**r, "fused_moe": ""}, eff)
    assert predict(unfused, eff)[0] > 1.2 * prep.measured


def test_estimate_train_fused_moe(cli):
    args = ("estimate", "train", "-m", "qwen3-30b-a3b", "--gpu", "GB200", "--gpus", "8", "--precision", "fp8",
            "--tp", "1", "--pp", "1", "--ep", "8", "--micro-batch", "4", "--global-batch", "512",
            "--recompute", "none", "--json")
    code, out, _ = cli(*args)
    assert code == 0
    plain = json.loads(out)
    code, out, _ = cli(*args, "--fused-moe")
    assert code == 0
    fused = json.loads(out)
    assert fused["step_time_s"] < 0.8 * plain["step_time_s"]
    assert fused["assumptions"].get("fused_moe") is True and "fused_moe" not in plain["assumptions"]
    assert any("--fused-moe" in n for n in fused["notes"])
    # Without the flag, a MoE estimate on data-centre Blackwell says which stack it timed and how to time the other.
    assert any("eager step" in n and "--fused-moe" in n for n in plain["notes"])


@pytest.mark.parametrize("model, gpu", [("qwen3-30b-a3b", "H100"), ("llama-3.1-8b", "B200")])
def test_no_fused_stack_hint_where_it_cannot_run(cli, model, gpu):
    code, out, _ = cli("estimate", "train", "-m", model, "--gpu", gpu, "--gpus", "8", "--json")
    assert code == 0 and not any("--fused-moe" in n for n in json.loads(out)["notes"])


@pytest.mark.parametrize("model, gpu, fragment", [("qwen3-30b-a3b", "H100", "data-centre Blackwell"),
                                                  ("llama-3.1-8b", "B200", "is dense")])
def test_estimate_train_fused_moe_refuses_what_cannot_run_it(cli, model, gpu, fragment):
    code, out, err = cli("estimate", "train", "-m", model, "--gpu", gpu, "--gpus", "8", "--fused-moe")
    assert code == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0]


def test_calibration_rows_carry_the_fused_stack(cli, tmp_path, monkeypatch):
    monkeypatch.setenv(cal.ENV_DIR, str(tmp_path / "config"))
    monkeypatch.delenv(cal.ENV_PROFILE, raising=False)
    header = "kind,model,gpu,n_gpus,tp,pp,ep,micro_batch,global_batch,seq_len,precision,recompute,step_time_s,fused_moe"
    row = "train,qwen3-30b-a3b,GB200,8,1,1,8,4,512,4096,fp8,none,6.44,{}"
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([header, row.format(""), row.format("1")]) + "\n", encoding="utf-8")
    plain, fused = cal.read_runs(path)
    assert fused.args["fused_moe"] is True and plain.args["fused_moe"] is False
    assert cal.predict(fused) > 1.2 * cal.predict(plain)  # tokens/s
    path.write_text("\n".join([header, row.format("maybe")]) + "\n", encoding="utf-8")
    code, out, err = cli("calibrate", path, "--name", "bad")
    assert code == 2 and "fused_moe 'maybe'" in err and not (tmp_path / "config").exists()
