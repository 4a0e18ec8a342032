"""Training estimates against published runs (data/training-runs.csv, built by
scripts/build_training_validation.py).

Row kinds and what is compared:
- FULL: whole-run GPU-hours, predicted from model, tokens, GPU and count (the planner's default
  count when the paper gives none), layout searched as the planner would (a user asking for GPU-hours gets the
  planner's layout, not the one the authors happened to run), goodput included. `stated_layout_check` predicts
  the same runs at the layout their sources publish, where they do: the step-time physics apart from the choice.
- THROUGHPUT: seconds per step at the stated layout (unstated parts searched). Where the source
  gives TFLOP/s per GPU instead of a step time, the step time is derived with the source's own
  FLOP formula (Megatron 96·B·s·L·h²·(1 + s/6h + V/16Lh) when it counts recompute).
- PROJECTION: steady-state GPU-hours the authors projected from measured throughput (no goodput).

Rows are "prepared" once (shape, workload, candidate layouts that fit memory), so refitting the
efficiency parameters only re-runs the vectorized step-time model.

Every row carries a `regime` (gpuplan.perf.error_bands) and a `source_id`; `validate` reports each row in-sample,
leave-one-row-out and leave-one-source-out (all rows of one paper/table/page out of the fit together), and
`error_bands` turns the leave-one-source-out residuals into per-regime quantiles (data/training-error-bands.json).
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from gpuplan.catalog.records import Gpu
from gpuplan.models.spec import ModelSpec
from gpuplan.perf.efficiency import TrainingEfficiency, default_efficiency
from gpuplan.perf.layout_search import (LAYOUT_KEYS, MEMORY_HEADROOM, STEP_KEYS, LayoutFixed, _select, _useful_batch,
                                        enumerate_layouts, layout_complexity, preference_order)
from gpuplan.perf.training_flops import model_flops_per_token
from gpuplan.perf.training_memory import memory_breakdown_bytes
from gpuplan.perf.training_shape import ModelShape, model_shape
from gpuplan.perf.training_time import gpu_features, inter_node_bytes_per_s, step_time_s
from gpuplan.perf.workload import TrainingWorkload, make_workload

BASELINE_MFU = 0.40  # formulas.md "Baseline to beat": 6·N·D / (peak · 0.40)


@lru_cache(maxsize=1)
def load_rows() -> tuple[dict, ...]:
    text = resources.files("gpuplan.perf.data").joinpath("training-runs.csv").read_text(encoding="utf-8")
    return tuple(csv.DictReader(io.StringIO(text)))


@lru_cache(maxsize=1)
def _extra_models() -> dict:
    text = resources.files("gpuplan.perf.data").joinpath("training-models.json").read_text(encoding="utf-8")
    return json.loads(text)["models"]


def _f(row, key) -> float | None:
    v = (row.get(key) or "").strip()
    return float(v) if v else None


def _i(row, key) -> int | None:
    v = _f(row, key)
    return int(v) if v is not None else None


def shape_model(ref: str) -> ModelSpec:
    """A model given by its shape in the row: "shape:name,layers,hidden,heads,ffn,vocab[,gated][,tied]" (MHA)."""
    name, layers, hidden, heads, ffn, vocab, *flags = ref.removeprefix("shape:").split(",")
    h, nh = int(hidden), int(heads)
    return ModelSpec(name=name, n_layers=int(layers), hidden_size=h, n_heads=nh, n_kv_heads=nh, head_dim=h // nh,
                     ffn_size=int(ffn), gated_ffn="gated" in flags, vocab_size=int(vocab),
                     tied_embeddings="tied" in flags, attention="mha", max_seq_len=131072,
                     source="shape stated in the validation row")


def row_model(row) -> ModelSpec:
    ref = row["model_ref"]
    if ref.startswith("shape:"):
        return shape_model(ref)
    extra = _extra_models()
    if ref in extra:
        return ModelSpec(**extra[ref])
    if ref:
        from gpuplan.models import resolve_model

        return resolve_model(ref)
    from gpuplan.models import model_from_params

    return model_from_params(float(row["total_params"]), _f(row, "active_params"))


def row_gpu(row) -> Gpu:
    from gpuplan.catalog.gpus import get_gpu

    if "(validation only)" in row["gpu_id"]:
        # A chip the catalog does not sell, specified in the row: a TPU, or a variant of a catalog GPU (Meta's
        # 500 W, 96 GB H100: its tensor units are Hopper's, so FP8 runs at twice the stated BF16 peak).
        bf16 = float(row["gpu_peak_tflops"])
        tpu = "TPU" in row["gpu_id"]
        return Gpu(id=row["gpu_id"], vendor="Google" if tpu else "NVIDIA", memory_gb=float(row["gpu_memory_gb"]),
                   mem_bw_tbps=float(row["gpu_mem_bw_tbps"]), bf16_tflops=bf16, fp8_tflops=None if tpu else 2 * bf16,
                   nvlink_gbps=float(row["gpu_nvlink_gbps"]),
                   form_factor="TPU (validation only)" if tpu else "SXM (validation only)")
    return get_gpu(row["gpu_id"])


def row_workload(row) -> TrainingWorkload:
    tokens = _f(row, "tokens") or 1e12
    method = row.get("method") or "full"
    extra = {"lora_rank": _i(row, "lora_rank")} if method != "full" and _i(row, "lora_rank") else {}
    if method != "full" and (row.get("lora_targets") or "").strip():
        extra["lora_targets"] = row["lora_targets"].strip()
    if _i(row, "sample_len"):
        extra["sample_len"] = _i(row, "sample_len")
    if _i(row, "fused_moe"):
        extra["fused_moe"] = True
    if (row.get("moe_dispatcher") or "").strip():
        extra["moe_dispatcher"] = row["moe_dispatcher"].strip()
    if (row.get("ep_overlap") or "").strip():
        extra["ep_overlap"] = row["ep_overlap"].strip() == "1"
    return make_workload(kind="pretrain" if method == "full" else "finetune", method=method, tokens=tokens,
                         seq_len=_i(row, "seq_len") or 2048, global_batch=_i(row, "global_batch"),
                         precision=row["precision"] or "bf16", flash_attention=bool(_i(row, "flash_attention")),
                         batch_flexible=row["row_type"] == "FULL", framework=row.get("framework") or "megatron", **extra)


def row_fixed(row) -> LayoutFixed:
    return LayoutFixed(tp=_i(row, "tp"), pp=_i(row, "pp"), dp=_i(row, "dp"), cp=_i(row, "cp"),
                       ep=_i(row, "ep") if (_i(row, "ep") or 1) > 1 else None,
                       micro_batch=_i(row, "micro_batch"), recompute=_i(row, "recompute"),
                       zero=_stated_zero(_i(row, "fsdp")),
                       vp=_i(row, "vp") if (_i(row, "vp") or 1) > 1 or not_interleaved(row) else None,
                       etp=_i(row, "etp"))


def not_interleaved(row) -> bool:
    """A pipelined row whose source names the plain 1F1B schedule (one model chunk per stage). The build script
    writes vp 1 wherever a source prints no virtual stages, so vp 1 alone leaves the search free; the row's notes
    saying the schedule is not interleaved make it the stated layout (its bubble is v times the interleaved one's)."""
    return "not interleaved" in (row.get("notes") or "")


def _stated_zero(fsdp: int | None) -> int | None:
    """The ZeRO stage a row's FSDP column states: FSDP / FULL_SHARD shards everything (3); a stated FSDP 0 is
    Megatron's data parallelism with the distributed optimizer (1); blank leaves the search free."""
    if fsdp is None:
        return None
    return 3 if fsdp > 0 else 1


def measured_step_time_s(row, shape: ModelShape) -> float | None:
    """Stated step time, or the one the stated TFLOP/s per GPU implies under the source's formula."""
    st = _f(row, "step_time_s")
    if st:
        return st
    tflops, n = _f(row, "measured_tflops_per_gpu"), _f(row, "gpu_count")
    B, s = _f(row, "global_batch"), _f(row, "seq_len")
    if not (tflops and n and B and s):
        return None
    L, h, V = shape.n_layers, shape.hidden, shape.vocab
    if _i(row, "counts_recompute"):
        flops = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    elif (row.get("flops_convention") or "").startswith("nvidia"):  # NeMo counts full (non-causal) attention
        flops = B * s * model_flops_per_token(shape, int(s), attention="full")
    else:
        flops = B * s * model_flops_per_token(shape, int(s))
    return flops / (n * tflops * 1e12)


@dataclass
class PreparedRow:
    row: dict
    kind: str
    shape: ModelShape
    gpu: Gpu
    wl: TrainingWorkload
    n: int
    measured: float  # GPU-hours (FULL, PROJECTION) or seconds per step (THROUGHPUT)
    layouts: dict  # candidate layouts that fit memory
    feats: object
    inter: float
    gpn: int
    count_note: str
    fits: bool

    @property
    def label(self) -> str:
        return f"{self.row['row']:>2} {self.row['name']}"


def prepare_row(row, eff: TrainingEfficiency | None = None, stated_layout: bool = False) -> PreparedRow | None:
    """Inputs and candidate layouts for one row, or None when the row cannot be predicted. A whole run (FULL) is
    searched like a plan unless `stated_layout`, which fixes what its source states, as for throughput rows."""
    if row["use"] != "1":
        return None
    eff = eff or default_efficiency()
    kind = row["row_type"]
    spec = row_model(row)
    shape = model_shape(spec)
    gpu = row_gpu(row)
    wl = row_workload(row)
    n_given = _i(row, "gpu_count")
    gpn = _i(row, "nvlink_domain") or 8  # GPUs sharing one NVLink domain (NVL72 racks: up to 64 used)
    if n_given and n_given < gpn:
        gpn = n_given
    inter = inter_node_bytes_per_s(_f(row, "inter_node_gbps") or 400.0, eff)
    n = _i(row, "gpu_count")
    note = ""
    if kind == "THROUGHPUT":
        measured = measured_step_time_s(row, shape)
    else:
        measured = _f(row, "gpu_hours")
    if not measured or (kind == "THROUGHPUT" and not n):
        return None
    if n is None:  # the estimator's default count: the one a team would use (training_estimate._choose_count_efficient)
        from gpuplan.perf.training_estimate import estimate_training

        est = estimate_training(spec, wl, gpu, None, inter_node_gbps_per_gpu=_f(row, "inter_node_gbps") or 400.0,
                                efficiency_params=eff, n_runners_up=0)
        n = est.n_gpus
        note = "count: planner default"
    fixed = row_fixed(row) if kind != "FULL" or stated_layout else LayoutFixed()
    lay = enumerate_layouts(shape, wl, [n], gpn, fixed)
    valid = lay["reason"] < 0
    # Published layouts the search still rejects (none of the bundled rows since the twenty-seventh round timed folded
    # experts and uneven pinned chunks): relax the stated virtual stages, then pipeline, then expert sizes, and say so.
    for relax in (("vp",), ("vp", "pp"), ("vp", "pp", "ep")):
        if valid.any() or kind == "FULL":
            break
        fixed = dataclasses.replace(fixed, **{k: None for k in relax})
        lay = enumerate_layouts(shape, wl, [n], gpn, fixed)
        valid = lay["reason"] < 0
        note = (note + "; " if note else "") + f"stated {'/'.join(relax)} relaxed (the search rejects the layout)"
    mem = memory_breakdown_bytes(shape, wl, *(lay[k] for k in STEP_KEYS), global_batch=lay["batch"],
                                 etp=lay["etp"])["total"]
    ok = valid & (mem <= gpu.memory_bytes * (1.0 - MEMORY_HEADROOM))  # the planner's own limit
    fits = bool(ok.any())
    if not fits:  # keep the leanest valid layout: the prediction still stands, flagged
        if not valid.any():
            return None
        ok = np.zeros_like(valid)
        ok[np.nonzero(valid)[0][np.argmin(mem[valid])]] = True
    idx = np.nonzero(ok)[0]
    layouts = {k: lay[k][idx] for k in (*LAYOUT_KEYS, "batch")}
    feats = _select(gpu_features([gpu], wl.precision, gpn, eff), 0)
    return PreparedRow(row=dict(row), kind=kind, shape=shape, gpu=gpu, wl=wl, n=n, measured=measured,
                       layouts=layouts, feats=feats, inter=inter, gpn=gpn, count_note=note, fits=fits)


def token_dropping(row) -> bool:
    """An MoE row run with a fixed expert capacity (token dropping), as the source marks it."""
    return "token-dropping" in (row.get("notes") or "")


def tp_not_overlapped(row) -> bool:
    """A row whose source ran tensor parallelism without overlapping its collectives with compute (torchtitan's
    "vanilla TP", against its async TP), as the row's notes mark it."""
    return "TP not overlapped" in (row.get("notes") or "")


def row_efficiency(prep: PreparedRow, eff: TrainingEfficiency) -> TrainingEfficiency:
    """The parameters as they apply to this row. Dropless MoE (the estimator's default) sizes every all-to-all from
    per-expert token counts copied to the host, a synchronisation per MoE layer and micro-batch that stops the CPU
    from queueing kernels ahead: that is what `moe_layer_overhead_us` charges. A token-dropping run has static
    capacity-sized buffers, no such sync, and pays none of it. `tp_exposed` is the share of tensor-parallel traffic
    left on the critical path by the overlap the planner assumes (Megatron's tp_comm_overlap, torchtitan's async
    TP); a run the source says did not overlap it exposes all of it."""
    if prep.shape.is_moe and token_dropping(prep.row):
        eff = eff.with_params(moe_layer_overhead_us=0.0)
    if tp_not_overlapped(prep.row):
        eff = eff.with_params(tp_exposed=1.0)
    return eff


def steady_state(prep: PreparedRow, eff: TrainingEfficiency) -> tuple[float, dict]:
    """Step time of the layout the planner would pick among the prepared ones (least time per useful sequence: a
    global batch left to the layout is rounded to its dp x micro-batch, so candidates differ in batch; the simplest
    within SIMPLER_LAYOUT_TOLERANCE of it), and that layout."""
    eff = row_efficiency(prep, eff)
    lay = prep.layouts
    res = step_time_s(prep.shape, prep.wl, prep.feats, eff, *(lay[k] for k in STEP_KEYS), lay["batch"],
                      prep.gpn, prep.inter, etp=lay["etp"])
    total = np.broadcast_to(res["total"], lay["batch"].shape)
    score = total / _useful_batch(lay["batch"], prep.wl)
    i = int(preference_order(np.zeros(score.size, dtype=np.int64), score, layout_complexity(lay))[0])
    return float(total[i]), {k: int(lay[k][i]) for k in (*LAYOUT_KEYS, "batch")}


def predict(prep: PreparedRow, eff: TrainingEfficiency) -> tuple[float, dict]:
    step, layout = steady_state(prep, eff)
    if prep.kind == "THROUGHPUT":
        return step, layout
    steps = math.ceil(prep.wl.total_tokens / (layout["batch"] * prep.wl.seq_len))
    hours = prep.n * steps * step / 3600
    if prep.kind == "FULL" and includes_downtime(prep):
        hours /= float(eff.goodput(prep.n))
    return hours, layout


def includes_downtime(prep: PreparedRow) -> bool:
    """Whether the published GPU-hours are wall-clock (goodput applies) rather than computed by the
    authors from measured throughput (hours_basis "steady": compared at steady state)."""
    return prep.kind == "FULL" and (prep.row.get("hours_basis") or "wall") != "steady"


def baseline_gpu_hours(row) -> float:
    """formulas.md baseline: 6·N·D / (peak bf16 x 0.40), active parameters for MoE."""
    n_params = _f(row, "active_params") or _f(row, "total_params") or model_shape(row_model(row)).active_params
    peak = row_gpu(row).bf16_tflops * 1e12
    return 6 * n_params * float(row["tokens"]) / (peak * BASELINE_MFU) / 3600


def err_pct(pred: float, meas: float) -> float:
    return 100.0 * (pred - meas) / meas


def summary(errors) -> dict:
    a = np.abs(np.asarray(list(errors), dtype=float))
    if a.size == 0:
        return {"n": 0, "median_abs_pct": None, "p90_abs_pct": None}
    return {"n": int(a.size), "median_abs_pct": float(np.median(a)), "p90_abs_pct": float(np.percentile(a, 90))}


def prepare_all(eff: TrainingEfficiency | None = None) -> list[PreparedRow]:
    out = []
    for row in load_rows():
        p = prepare_row(row, eff)
        if p is not None:
            out.append(p)
    return out


def states_layout(row) -> bool:
    """Whether a row's source states any part of its parallel layout (what `row_fixed` reads from it)."""
    return row_fixed(row) != LayoutFixed()


# What makes two throughput rows "the same configuration": everything the estimator reads from a row's layout and
# workload (and whether an MoE run drops tokens); only the source (its software release, its date) differs.
REPEAT_KEY = ("model_ref", "gpu_id", "precision", "method", "lora_rank", "gpu_count", "seq_len", "global_batch",
              "micro_batch", "tp", "pp", "ep", "etp", "cp", "vp", "recompute", "fsdp", "framework", "fused_moe",
              "ep_overlap", "moe_dispatcher")


def measured_tokens_per_gpu_s(row) -> float | None:
    """A throughput row's tokens per second per GPU: stated, or from its step time, global batch and count."""
    stated = _f(row, "measured_tokens_per_s_per_gpu")
    if stated:
        return stated
    step, batch, seq, n = (_f(row, k) for k in ("step_time_s", "global_batch", "seq_len", "gpu_count"))
    return batch * seq / (step * n) if step and batch and seq and n else None


def training_repeat_pairs() -> list[dict]:
    """Usable throughput rows timing one configuration (REPEAT_KEY) in successive sources, paired
    (gpuplan.perf.repeatability): how far a publisher's own table moves between software releases."""
    from gpuplan.perf.repeatability import fields_key, repeat_pairs

    rows = [r for r in load_rows() if r["use"] == "1" and r["row_type"] == "THROUGHPUT"]
    stated = fields_key(REPEAT_KEY)
    return repeat_pairs(rows, key=lambda r: (*stated(r), token_dropping(r)),
                        value=measured_tokens_per_gpu_s, regime=lambda r: r.get("regime") or "dense")


def stated_layout_check(eff: TrainingEfficiency | None = None) -> list[dict]:
    """Whole runs whose sources publish their layout, predicted at the planner's layout (what a user asking for the
    GPU-hours gets: the headline) and at the stated one, both with `eff`: how much of a miss is the step-time physics
    and how much the authors' choice (full recompute where the planner needs none, a schedule the memory model cannot
    fit)."""
    eff = eff or default_efficiency()
    out = []
    for row in load_rows():
        if row["use"] != "1" or row["row_type"] != "FULL" or not states_layout(row):
            continue
        searched, stated = prepare_row(row, eff), prepare_row(row, eff, stated_layout=True)
        if searched is None or stated is None:
            continue
        (h_planner, lay_planner), (h_stated, lay_stated) = predict(searched, eff), predict(stated, eff)
        out.append({"row": int(row["row"]), "name": row["name"], "regime": row.get("regime", ""),
                    "measured": searched.measured, "planner_error_pct": err_pct(h_planner, searched.measured),
                    "stated_error_pct": err_pct(h_stated, stated.measured), "planner_layout": lay_planner,
                    "stated_layout": lay_stated, "stated_fits": stated.fits})
    return out


# ---- fitting -------------------------------------------------------------------------------
THROUGHPUT_PARAMS = {"eta_max": (0.2, 0.95), "h_half": (0.0, 20000.0), "tp_exposed": (0.0, 1.0)}
GOODPUT_PARAMS = {"goodput_base": (0.5, 1.0), "lost_h_per_failure": (0.0, 5.0)}


def _loss(preds, meas) -> float:
    """Mean absolute log error: symmetric in over/under-prediction, robust to one wild row."""
    p, m = np.asarray(preds, float), np.asarray(meas, float)
    return float(np.mean(np.abs(np.log(p / m))))


def _nelder_mead(f, x0, lo, hi, iters: int = 120) -> np.ndarray:
    """Minimize f over a box (clipped simplex); a few parameters, no gradients, deterministic."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    clip = lambda x: np.clip(x, lo, hi)  # noqa: E731
    n = len(x0)
    pts = [clip(np.asarray(x0, float))]
    for i in range(n):
        x = pts[0].copy()
        x[i] = x[i] + 0.15 * (hi[i] - lo[i]) if x[i] + 0.15 * (hi[i] - lo[i]) <= hi[i] else x[i] - 0.15 * (hi[i] - lo[i])
        pts.append(clip(x))
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        centroid = np.mean(pts[:-1], axis=0)
        xr = clip(centroid + (centroid - pts[-1]))
        fr = f(xr)
        if fr < vals[0]:
            xe = clip(centroid + 2 * (centroid - pts[-1]))
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = clip(centroid + 0.5 * (pts[-1] - centroid))
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0]] + [clip(pts[0] + 0.5 * (p - pts[0])) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
        if max(vals) - min(vals) < 1e-6:
            break
    return pts[int(np.argmin(vals))]


def fit_throughput(preps: list[PreparedRow], eff: TrainingEfficiency) -> TrainingEfficiency:
    rows = [p for p in preps if p.kind == "THROUGHPUT"]
    names = list(THROUGHPUT_PARAMS)
    lo, hi = zip(*THROUGHPUT_PARAMS.values())

    def f(x):
        e = eff.with_params(**dict(zip(names, x)))
        return _loss([steady_state(p, e)[0] for p in rows], [p.measured for p in rows])

    best = None
    for start in ([0.6, 1200.0, 0.5], [0.8, 4000.0, 0.2], [0.5, 200.0, 0.8], [0.7, 2000.0, 1.0]):  # a few starts: the loss is kinked
        x = _nelder_mead(f, start, lo, hi)
        if best is None or f(x) < f(best):
            best = x
    return eff.with_params(**{k: round(float(v), 4) for k, v in zip(names, best)})


def fit_goodput(preps: list[PreparedRow], eff: TrainingEfficiency) -> TrainingEfficiency:
    rows = [p for p in preps if includes_downtime(p)]  # steady-basis hours carry no goodput
    steady = [predict(p, eff.with_params(goodput_base=1.0, lost_h_per_failure=0.0))[0] for p in rows]
    n = np.array([p.n for p in rows], float)
    meas = [p.measured for p in rows]
    names = list(GOODPUT_PARAMS)
    lo, hi = zip(*GOODPUT_PARAMS.values())

    def f(x):
        e = eff.with_params(**dict(zip(names, x)))
        return _loss(np.asarray(steady) / e.goodput(n), meas)

    x = _nelder_mead(f, [0.85, 0.3], lo, hi)
    return eff.with_params(**{k: round(float(v), 4) for k, v in zip(names, x)})


def fit_all(preps: list[PreparedRow], eff: TrainingEfficiency | None = None) -> TrainingEfficiency:
    eff = eff or TrainingEfficiency()
    return fit_goodput(preps, fit_throughput(preps, eff))


def evaluate(preps: list[PreparedRow], eff: TrainingEfficiency, loo: bool = False) -> list[dict]:
    """One result per row: measured, predicted, error %; with `loo` each row's prediction comes
    from parameters refitted without it (throughput rows refit the compute parameters, full runs
    the goodput parameters; projections are never fitted on)."""
    out = []
    for p in preps:
        e = eff
        if loo and p.kind == "THROUGHPUT":
            e = fit_throughput([q for q in preps if q is not p], eff)
        elif loo and p.kind == "FULL":
            e = fit_goodput([q for q in preps if q is not p], eff)
        pred, layout = predict(p, e)
        r = {"row": int(p.row["row"]), "name": p.row["name"], "kind": p.kind, "gpu": p.gpu.id, "n_gpus": p.n,
             "measured": p.measured, "predicted": pred, "error_pct": err_pct(pred, p.measured), "layout": layout,
             "fits": p.fits, "count_note": p.count_note}
        if p.kind == "FULL":
            b = baseline_gpu_hours(p.row)
            r["baseline"] = b
            r["baseline_error_pct"] = err_pct(b, p.measured)
        out.append(r)
    return out


def summarize(results: list[dict]) -> dict:
    s = {}
    for kind in ("FULL", "THROUGHPUT", "PROJECTION"):
        rows = [r for r in results if r["kind"] == kind]
        s[kind] = summary(r["error_pct"] for r in rows)
        if kind == "FULL":
            s["FULL_baseline"] = summary(r["baseline_error_pct"] for r in rows)
    return s


# ---- per-regime, leave-one-source-out ------------------------------------------------------------------------
# The shipped compute parameters (data/training-efficiency.json "fitted": eta_max, h_half, m_half, overheads,
# exposures, ...) are fitted by scripts/fit_training_efficiency.py with Nelder-Mead: a few hundred passes over every
# throughput row, far too slow to repeat for each held-out source. The refit without a source is therefore done on
# the model linearized at the shipped point: log(prediction) of every row is differentiated once against each fitted
# parameter (one extra pass per parameter), the fold's parameters minimize the same regime-weighted mean absolute
# log error on the remaining THROUGHPUT rows (coordinate descent by weighted medians, within physical bounds), and the
# held-out rows are then predicted exactly at those parameters. Goodput is refitted on the remaining wall-clock full
# runs. "In-sample" is the same refit on every row.
ROW_KINDS = ("FULL", "THROUGHPUT", "PROJECTION")
GOODPUT_NAMES = ("goodput_base", "lost_h_per_failure")
# Physical bounds of the fitted parameters, for the full fit (scripts/fit_training_efficiency.py) and the held-out
# refits alike; others: >= 0.
PARAM_BOUNDS = {"eta_max": (0.3, 0.95), "h_half": (0.0, 6000.0), "tp_exposed": (0.0, 1.0), "m_half": (0.0, 2048.0),
                "moe_m_half": (0.0, 4096.0),
                "layer_overhead_us": (0.0, 500.0), "attn_ratio": (0.25, 1.0), "attn_blackwell": (0.7, 2.5),
                "lowp_fp8": (0.4, 1.0),
                "ep_exposed": (0.1, 1.0), "cp_exposed": (0.0, 1.0), "dp_exposed": (0.0, 1.0), "moe_imbalance": (1.0, 1.6),
                "moe_layer_overhead_us": (0.0, 10000.0), "moe_expert_overhead_us": (0.0, 1000.0),
                "pytorch_fp8_ratio": (0.4, 1.0), "pytorch_attn_ratio": (0.3, 1.0), "attn_dhalf": (0.0, 256.0),
                "linear_scan_bw_share": (0.05, 1.0)}
MAX_STEPS = 10.0  # a fold's refit moves each parameter at most this many finite-difference steps


def row_regime(prep: PreparedRow) -> str:
    return prep.row.get("regime") or "dense"


def fitted_compute_names(eff: TrainingEfficiency) -> list[str]:
    from importlib import resources as _res

    doc = json.loads(_res.files("gpuplan.perf.data").joinpath("training-efficiency.json").read_text(encoding="utf-8"))
    names = [n for n in doc.get("fitted", []) if n not in GOODPUT_NAMES]
    return [n for n in names if n == "lowp_fp8" or hasattr(eff, n)]


def get_param(eff: TrainingEfficiency, name: str) -> float:
    return float(eff.lowp_ratio.get("fp8", 1.0)) if name == "lowp_fp8" else float(getattr(eff, name))


def set_params(eff: TrainingEfficiency, values: dict) -> TrainingEfficiency:
    kw = {k: float(v) for k, v in values.items() if k != "lowp_fp8"}
    if "lowp_fp8" in values:
        kw["lowp_ratio"] = {**eff.lowp_ratio, "fp8": float(values["lowp_fp8"])}
    return eff.with_params(**kw)


@dataclass
class Linearized:
    names: list
    theta: np.ndarray  # shipped values
    step: np.ndarray  # finite-difference step per parameter (signed)
    logp: np.ndarray  # (rows,) log steady prediction at theta (s/step, or GPU-hours without goodput)
    jac: np.ndarray  # (rows, params): d log prediction per step
    fitted: dict | None = None  # parameters of the in-sample refit (set by an in-sample pass)

    def values(self, u: np.ndarray) -> dict:
        return {k: float(v) for k, v in zip(self.names, self.theta + self.step * u)}


def _steady_eff(eff: TrainingEfficiency) -> TrainingEfficiency:
    return eff.with_params(goodput_base=1.0, lost_h_per_failure=0.0)


def _steady(preps: list[PreparedRow], eff: TrainingEfficiency) -> np.ndarray:
    e = _steady_eff(eff)
    return np.array([predict(p, e)[0] for p in preps], float)


def linearize(preps: list[PreparedRow], eff: TrainingEfficiency, names: list[str] | None = None) -> Linearized:
    names = fitted_compute_names(eff) if names is None else names
    theta = np.array([get_param(eff, n) for n in names], float)
    base = np.log(_steady(preps, eff))
    steps, cols = [], []
    for k, n in enumerate(names):
        lo, hi = PARAM_BOUNDS.get(n, (0.0, np.inf))
        h = 0.1 * abs(theta[k]) if abs(theta[k]) > 1e-6 else 0.05 * (hi - lo if np.isfinite(hi) else 1.0)
        if theta[k] + h > hi:
            h = -h
        steps.append(h)
        cols.append(np.log(_steady(preps, set_params(eff, {n: theta[k] + h}))) - base)
    jac = np.stack(cols, axis=1) if cols else np.zeros((len(preps), 0))
    return Linearized(list(names), theta, np.array(steps, float), base, jac)


def _weighted_median(x: np.ndarray, w: np.ndarray) -> float:
    order = np.argsort(x)
    cum = np.cumsum(w[order])
    return float(x[order][np.searchsorted(cum, 0.5 * cum[-1])])


def _fit_linear(lin: Linearized, rows: np.ndarray, meas: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Steps u minimizing sum(w |log meas - (logp + J u)|) over `rows`, within bounds: coordinate descent, each
    coordinate's exact minimizer being a weighted median (the loss never rises above the shipped point's, u = 0)."""
    k = len(lin.names)
    u = np.zeros(k)
    if k == 0 or not rows.any():
        return u
    J, r, w = lin.jac[rows], np.log(meas[rows]) - lin.logp[rows], weights[rows]
    lo = np.array([PARAM_BOUNDS.get(n, (0.0, np.inf))[0] for n in lin.names])
    hi = np.array([PARAM_BOUNDS.get(n, (0.0, np.inf))[1] for n in lin.names])
    ulo, uhi = np.sort(np.stack([(lo - lin.theta) / lin.step, (hi - lin.theta) / lin.step]), axis=0)
    ulo, uhi = np.maximum(ulo, -MAX_STEPS), np.minimum(uhi, MAX_STEPS)
    res = r.copy()  # r - J u
    for _ in range(50):
        moved = 0.0
        for j in range(k):
            a = J[:, j]
            nz = np.abs(a) > 1e-9
            if not nz.any():
                continue
            partial = res[nz] + a[nz] * u[j]
            new = min(max(_weighted_median(partial / a[nz], w[nz] * np.abs(a[nz])), ulo[j]), uhi[j])
            if new != u[j]:
                res -= a * (new - u[j])
                moved = max(moved, abs(new - u[j]))
                u[j] = new
        if moved < 1e-4:
            break
    return u


def _fit_goodput_vec(steady: np.ndarray, n: np.ndarray, meas: np.ndarray,
                     eff: TrainingEfficiency) -> TrainingEfficiency:
    names = list(GOODPUT_PARAMS)
    lo, hi = zip(*GOODPUT_PARAMS.values())
    if steady.size == 0:
        return eff

    def f(x):
        e = eff.with_params(**dict(zip(names, x)))
        return _loss(steady / e.goodput(n), meas)

    x = _nelder_mead(f, [eff.goodput_base, eff.lost_h_per_failure], lo, hi)
    return eff.with_params(**{k: round(float(v), 4) for k, v in zip(names, x)})


# A parameter the remaining THROUGHPUT rows barely depend on (on every one of them its log-prediction moves less
# than this share of its largest move on any THROUGHPUT row) is not informed by the fold: it is held at its
# unfitted default, not at the shipped value (which the held-out rows helped fit).
IDENTIFIED_MIN_SHARE = 0.01


def unidentified_defaults(lin: Linearized, train: np.ndarray, reach: np.ndarray | None) -> dict:
    """{name: unfitted default} for the fitted parameters the `train` rows cannot inform; `reach` is each
    parameter's largest move on any THROUGHPUT row (None: there are none)."""
    if reach is None or not train.any():
        return {}
    base = TrainingEfficiency()
    quiet = np.max(np.abs(lin.jac[train]), axis=0) < IDENTIFIED_MIN_SHARE * reach
    return {n: get_param(base, n) for n, q in zip(lin.names, quiet) if q}


def held_out_predictions(preps: list, lin: Linearized, eff: TrainingEfficiency, groups: list,
                         exact: bool = True) -> np.ndarray:
    """Prediction for every row with its whole group left out of the fit (group None: fit on every row, predict
    every row). Compute parameters: the linearized refit on the other groups' THROUGHPUT rows, regimes weighted
    equally; goodput: refitted on the other wall-clock full runs. `exact` predicts the held-out rows with the full
    model at the refitted parameters (else with the linear model)."""
    meas = np.array([p.measured for p in preps], float)
    kinds = np.array([p.kind for p in preps])
    downtime = np.array([includes_downtime(p) for p in preps])
    n = np.array([p.n for p in preps], float)
    regimes = [p.row.get("regime") or "dense" for p in preps]
    out = np.full(len(preps), np.nan)
    thr = kinds == "THROUGHPUT"
    reach = np.max(np.abs(lin.jac[thr]), axis=0) if lin.jac.size and thr.any() else None
    for group in groups:
        train = np.ones(len(preps), bool)
        if group is not None:
            train[list(group)] = False
        tp = train & (kinds == "THROUGHPUT")
        count: dict = {}
        for i in np.nonzero(tp)[0]:
            count[regimes[i]] = count.get(regimes[i], 0) + 1
        w = np.array([1.0 / count[g] if tp[i] else 0.0 for i, g in enumerate(regimes)])
        u = _fit_linear(lin, tp, meas, w)
        e = set_params(eff, {**lin.values(u), **unidentified_defaults(lin, tp, reach)})
        lin_steady = np.exp(lin.logp + lin.jac @ u)
        gd = train & downtime
        held = range(len(preps)) if group is None else list(group)
        if group is None or downtime[list(group)].any():
            e = _fit_goodput_vec(lin_steady[gd], n[gd], meas[gd], e)
        if group is None:
            lin.fitted = {**lin.values(u), "goodput_base": e.goodput_base, "lost_h_per_failure": e.lost_h_per_failure}
        steady = _steady([preps[i] for i in held], e) if exact else lin_steady[list(held)]
        for j, i in enumerate(held):
            out[i] = steady[j] / (float(e.goodput(n[i])) if downtime[i] else 1.0)
    return out


# Sources that are one publisher's table at successive software releases (or one benchmark suite's rounds): they
# re-measure mostly the same recipes, so holding out one release leaves its siblings to predict it. Leave-one-family-
# out (`--by-family`) holds a whole family out together.
SOURCE_FAMILY_PREFIXES = ("megatron-bridge-", "mlperf-training-", "gaudi2-perf-", "nemo-perf-", "nemo-long-seq-")


def source_family(source_id: str) -> str:
    """The family of a training source: its publisher's table across releases, else the source itself."""
    return next((p.rstrip("-") for p in SOURCE_FAMILY_PREFIXES if source_id.startswith(p)), source_id)


def source_groups(preps: list[PreparedRow], by_family: bool = False) -> list[list[int]]:
    """Row indices by source (all rows of one paper, table or page leave together), or by source family."""
    by: dict[str, list[int]] = {}
    for i, p in enumerate(preps):
        sid = p.row.get("source_id") or f"row-{p.row['row']}"
        by.setdefault(source_family(sid) if by_family else sid, []).append(i)
    return list(by.values())


def forward_in_time(preps: list[PreparedRow], eff: TrainingEfficiency, cutoff: str) -> list[dict]:
    """Every row published in or after `cutoff` (YYYY-MM) predicted by a fit on the older rows alone: how the
    estimator does on measurements newer than anything it was fitted to (newer software, newer GPUs, newer models),
    which leave-one-source-out, holding one table out at a time beside its successors, does not show."""
    newer = [i for i, p in enumerate(preps) if (p.row.get("source_date") or "") >= cutoff]
    if not newer or len(newer) == len(preps):
        raise ValueError(f"cutoff {cutoff}: {len(newer)} of {len(preps)} rows are newer; need some on each side")
    pred = held_out_predictions(preps, linearize(preps, eff), eff, [newer])
    return [{"row": int(preps[i].row["row"]), "regime": row_regime(preps[i]), "kind": preps[i].kind,
             "source_id": preps[i].row.get("source_id", ""), "error_pct": err_pct(float(pred[i]), preps[i].measured)}
            for i in newer]


def validate(preps: list[PreparedRow], eff: TrainingEfficiency, quick: bool = False,
             by_family: bool = False) -> tuple[list[dict], dict]:
    """Per row: measured; predictions with the shipped parameters ("predicted", "error_pct"), with parameters fitted
    on every row ("fit"), leave-one-row-out ("loo") and leave-one-source-out ("loso"; with `by_family` the whole
    source family is left out). Also returns the parameters fitted on every row. `quick` predicts the
    leave-one-row-out rows with the linear model (no exact pass)."""
    res = evaluate(preps, eff)
    lin = linearize(preps, eff)
    fit = held_out_predictions(preps, lin, eff, [None])
    loso = held_out_predictions(preps, lin, eff, source_groups(preps, by_family))
    loo = held_out_predictions(preps, lin, eff, [[i] for i in range(len(preps))], exact=not quick)
    for r, p, f, a, b in zip(res, preps, fit, loso, loo):
        r.update(regime=row_regime(p), source_id=p.row.get("source_id", ""), fit=float(f), loso=float(a),
                 loo=float(b), fit_error_pct=err_pct(f, p.measured), loso_error_pct=err_pct(a, p.measured),
                 loo_error_pct=err_pct(b, p.measured), loso_log_ratio=float(np.log(a / p.measured)))
    return res, lin.fitted


def regime_table(results: list[dict]) -> list[dict]:
    """One line per (regime, row kind) plus per-regime and per-kind totals: n, in-sample and held-out errors."""
    from gpuplan.perf.error_bands import REGIMES

    lines = []
    keys = [(g, k) for g in REGIMES for k in ROW_KINDS] + [(g, "all") for g in REGIMES] + \
           [("all", k) for k in ROW_KINDS] + [("all", "all")]
    for g, k in keys:
        rows = [r for r in results if (g == "all" or r["regime"] == g) and (k == "all" or r["kind"] == k)]
        if not rows:
            continue
        shp, ins, loso, loo = (summary(r[f] for r in rows)
                               for f in ("error_pct", "fit_error_pct", "loso_error_pct", "loo_error_pct"))
        lines.append({"regime": g, "kind": k, "n": len(rows), "sources": len({r["source_id"] for r in rows}),
                      "shipped_median": shp["median_abs_pct"],
                      "in_median": ins["median_abs_pct"], "in_p90": ins["p90_abs_pct"],
                      "loso_median": loso["median_abs_pct"], "loso_p90": loso["p90_abs_pct"],
                      "loo_median": loo["median_abs_pct"],
                      "loso_bias_pct": float(np.median([r["loso_error_pct"] for r in rows]))})
    return lines


def error_bands(results: list[dict]) -> dict:
    """Per regime: n and the p10/p50/p90 of log(predicted/measured) under leave-one-source-out."""
    from gpuplan.perf.error_bands import REGIMES

    out = {}
    for g in (*REGIMES, "all"):
        x = np.array([r["loso_log_ratio"] for r in results if g == "all" or r["regime"] == g], float)
        if x.size:
            out[g] = {"n": int(x.size), "p10": round(float(np.percentile(x, 10)), 4),
                      "p50": round(float(np.percentile(x, 50)), 4), "p90": round(float(np.percentile(x, 90)), 4)}
    return out
