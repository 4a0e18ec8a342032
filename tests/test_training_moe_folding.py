"""MoE parallel folding (issue 13): the routed experts' tensor parallelism `etp` is the TP size (split like the dense
layers) or 1 (each expert whole on its expert-parallel rank, the EP ranks drawn from TP x CP x DP). Megatron's recipes
for Qwen3-235B on 256 H100 (TP2 PP8 EP32) and torchtitan's DeepSeek-V3 (TP2 EP32 ETP1) run only that way. Also the
uneven interleaved chunks a pinned vp may ask for (DeepSeek-V3's 61 layers on PP2 x VP8).
"""
from __future__ import annotations

import numpy as np
import pytest
from gpuplan.catalog.gpus import get_gpu
from gpuplan.models import get_preset
from gpuplan.perf.efficiency import default_efficiency
from gpuplan.perf.layout_search import LayoutFixed, _select, enumerate_layouts
from gpuplan.perf.training_estimate import estimate_memory, estimate_training
from gpuplan.perf.training_memory import memory_breakdown_bytes
from gpuplan.perf.training_shape import model_shape
from gpuplan.perf.training_time import gpu_features, step_time_s
from gpuplan.perf.training_validation import load_rows, prepare_row, row_fixed
from gpuplan.perf.workload import pretraining

WL = pretraining(1e12, seq_len=4096, global_batch=2048)


def _step(preset, *, t, p, d, e, etp=None, b=1, gpn=8, inter=50e9):
    eff = default_efficiency()
    shape = model_shape(get_preset(preset))
    feats = _select(gpu_features([get_gpu("H100")], WL.precision, gpn, eff), 0)
    return step_time_s(shape, WL, feats, eff, t, p, d, 1, e, b, 0, 1, 1, 2048, gpn, inter, etp=etp)


def test_folded_experts_drop_the_moe_blocks_tensor_parallel_collectives():
    # Qwen3-235B-A22B: every layer is MoE and there is no shared expert, so folding leaves the attention's two
    # collectives of four per layer.
    split = _step("qwen3-235b-a22b", t=2, p=8, d=16, e=16)
    folded = _step("qwen3-235b-a22b", t=2, p=8, d=16, e=32, etp=1)
    assert float(folded["tp"]) == pytest.approx(0.5 * float(split["tp"]), rel=1e-9)
    # A shared expert stays tensor-parallel: DeepSeek-V3's MoE blocks keep their collectives.
    ds_split = _step("deepseek-v3", t=2, p=16, d=8, e=8)
    ds_folded = _step("deepseek-v3", t=2, p=16, d=8, e=16, etp=1)
    assert float(ds_folded["tp"]) == pytest.approx(float(ds_split["tp"]), rel=1e-9)


def test_etp_equal_to_tp_is_the_unfolded_layout():
    a = _step("qwen3-235b-a22b", t=2, p=8, d=16, e=16)
    b = _step("qwen3-235b-a22b", t=2, p=8, d=16, e=16, etp=2)
    for k in a:
        assert float(np.asarray(a[k])) == pytest.approx(float(np.asarray(b[k])), rel=1e-12), k


def test_folding_at_the_same_ep_feeds_each_expert_fewer_rows():
    # Folded, each of a replica's TP ranks dispatches only its sequence-parallel share: at the same EP size an expert
    # sees 1/t of the rows (slower grouped GEMMs); doubling EP restores them with half the local experts.
    split = _step("qwen3-30b-a3b", t=2, p=1, d=8, e=8)
    folded_same = _step("qwen3-30b-a3b", t=2, p=1, d=8, e=8, etp=1)
    folded_wide = _step("qwen3-30b-a3b", t=2, p=1, d=8, e=16, etp=1)
    assert float(folded_same["compute"]) > float(split["compute"])
    assert float(folded_wide["compute"]) < float(split["compute"])


def test_folded_memory_keeps_each_expert_whole_on_its_rank():
    shape = model_shape(get_preset("qwen3-235b-a22b"))
    kw = dict(global_batch=2048)
    split = memory_breakdown_bytes(shape, WL, 2, 8, 16, 1, 16, 1, 0, 1, 1, **kw)
    folded = memory_breakdown_bytes(shape, WL, 2, 8, 16, 1, 32, 1, 0, 1, 1, etp=1, **kw)
    same_ep = memory_breakdown_bytes(shape, WL, 2, 8, 16, 1, 16, 1, 0, 1, 1, etp=1, **kw)
    # EP32 whole experts = EP16 experts split over TP2: the same expert bytes per GPU.
    assert float(folded["weights"]) == pytest.approx(float(split["weights"]), rel=1e-9)
    # EP16 whole experts hold twice the expert weights of EP16 x TP2.
    assert float(same_ep["weights"]) > 1.5 * float(split["weights"])


def test_search_offers_folding_where_ep_exceeds_the_data_parallel_ranks():
    shape = model_shape(get_preset("qwen3-235b-a22b"))
    lay = enumerate_layouts(shape, WL, [256], 8, LayoutFixed(tp=2, pp=8, ep=32))
    ok = lay["reason"] < 0
    assert ok.any() and set(lay["etp"][ok].tolist()) == {1}  # EP32 cannot divide DP16 unless folded
    free = enumerate_layouts(shape, WL, [256], 8, LayoutFixed(tp=2, pp=8, ep=8))
    assert set(free["etp"][free["reason"] < 0].tolist()) == {1, 2}  # both ways when EP divides DP
    dense = enumerate_layouts(model_shape(get_preset("llama-3.1-8b")), WL, [16], 8, LayoutFixed(tp=2))
    assert np.array_equal(dense["etp"], dense["tp"])  # no folding choice for a dense model


def test_estimate_runs_the_published_folded_layout():
    est = estimate_training("qwen3-235b-a22b", WL, "H100", 256, tp=2, pp=8, ep=32, etp=1, n_runners_up=0)
    assert est.layout.etp == 1 and est.layout.ep == 32 and est.layout.dp == 16
    assert any(n.startswith("experts folded over the TP ranks (ETP1") for n in est.notes)
    split = estimate_training("qwen3-235b-a22b", WL, "H100", 256, tp=2, pp=8, ep=16, etp=2, n_runners_up=0)
    assert split.layout.etp == 2 and not any("ETP1" in n for n in split.notes)
    with pytest.raises(Exception, match="does not divide"):
        estimate_memory("qwen3-235b-a22b", WL, "H100", 256, tp=2, pp=8, ep=32)
    mem = estimate_memory("qwen3-235b-a22b", WL, "H100", 256, tp=2, pp=8, ep=32, etp=1)
    assert mem.layout["etp"] == 1


def test_validation_rows_state_etp_only_where_their_layout_needs_or_names_it():
    rows = {r["row"]: r for r in load_rows()}
    folded = [r for r in rows.values() if r.get("etp")]
    assert folded, "no validation row states etp"
    for r in folded:
        fixed = row_fixed(r)
        assert fixed.etp == 1
        prep = prepare_row(r)
        if prep is not None and r["use"] == "1":
            assert set(prep.layouts["etp"].tolist()) == {1}
            assert "relaxed" not in prep.count_note or "vp" in prep.count_note
    assert "etp" in rows["0"]


@pytest.mark.parametrize("args, message", [
    (["--model", "llama-3.1-8b", "--gpus", "8", "--etp", "2"], "needs a mixture-of-experts model"),
    (["--model", "qwen3-235b-a22b", "--gpus", "256", "--tp", "2", "--etp", "4"], "is 1 (folded) or the tp size"),
    (["--model", "qwen3-235b-a22b", "--gpus", "256", "--etp", "0"], "etp must be in"),
])
def test_cli_rejects_an_impossible_etp_in_one_line(cli, args, message):
    code, out, err = cli("estimate", "train", "--gpu", "H100", "--tokens", "1e9", *args)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1


def test_cli_shows_a_folded_layout(cli):
    code, out, err = cli("estimate", "train", "--model", "qwen3-235b-a22b", "--gpu", "H100", "--gpus", "256",
                         "--tp", "2", "--pp", "8", "--ep", "32", "--etp", "1", "--global-batch", "2048")
    assert code == 0, err
    assert "EP32 ETP1" in out
    code, out, err = cli("estimate", "memory", "--model", "qwen3-235b-a22b", "--gpu", "H100", "--gpus", "256",
                         "--tp", "2", "--pp", "8", "--ep", "32", "--etp", "1")
    assert code == 0, err
    assert "EP32 ETP1" in out.splitlines()[0]
    code, out, err = cli("estimate", "memory", "--model", "qwen3-235b-a22b", "--gpu", "H100", "--gpus", "256",
                         "--tp", "2", "--pp", "8", "--ep", "32")
    assert code == 2 and "with etp=1" in err


def test_a_pinned_vp_may_split_a_stages_layers_unevenly():
    shape = model_shape(get_preset("deepseek-v3"))  # 61 layers: 31 on the fuller of two stages
    searched = enumerate_layouts(shape, WL, [256], 8, LayoutFixed(tp=1, pp=2, ep=32))
    assert 2 not in set(searched["vp"][searched["reason"] < 0].tolist())  # the search keeps even chunks
    pinned = enumerate_layouts(shape, WL, [256], 8, LayoutFixed(tp=1, pp=2, ep=32, vp=8))
    assert (pinned["reason"] < 0).any() and set(pinned["vp"].tolist()) == {8}
    # The bubble is p - 1 times the fullest chunk: 4 of the stage's 31 layers, not 31 / 8.
    eff = default_efficiency()
    feats = _select(gpu_features([get_gpu("H100")], WL.precision, 8, eff), 0)
    r = step_time_s(shape, WL, feats, eff, 1, 2, 128, 1, 32, 1, 0, 1, 8, 2048, 8, 50e9)
    per_mb = float(r["compute"]) / float(r["micro_batches"])
    assert float(r["bubble"]) == pytest.approx(1 * 4 / 31 * per_mb, rel=1e-9)
