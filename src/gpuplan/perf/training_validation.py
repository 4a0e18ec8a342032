"""Training estimates against published runs (data/training-runs.csv, built by
scripts/build_training_validation.py).

Row kinds and what is compared:
- FULL: whole-run GPU-hours, predicted from model, tokens, GPU and count (the planner's default
  count when the paper gives none), layout searched, goodput included.
- THROUGHPUT: seconds per step at the stated layout (unstated parts searched). Where the source
  gives TFLOP/s per GPU instead of a step time, the step time is derived with the source's own
  FLOP formula (Megatron 96·B·s·L·h²·(1 + s/6h + V/16Lh) when it counts recompute).
- PROJECTION: steady-state GPU-hours the authors projected from measured throughput (no goodput).

Rows are "prepared" once (shape, workload, candidate layouts that fit memory), so refitting the
efficiency parameters only re-runs the vectorized step-time model: cheap enough for
leave-one-out refits.
"""
from __future__ import annotations

import csv
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
from gpuplan.perf.layout_search import LAYOUT_KEYS, LayoutFixed, _select, enumerate_layouts
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


def row_model(row) -> ModelSpec:
    ref = row["model_ref"]
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
        return Gpu(id=row["gpu_id"], vendor="Google", memory_gb=float(row["gpu_memory_gb"]),
                   mem_bw_tbps=float(row["gpu_mem_bw_tbps"]), bf16_tflops=float(row["gpu_peak_tflops"]),
                   nvlink_gbps=float(row["gpu_nvlink_gbps"]), form_factor="TPU (validation only)")
    return get_gpu(row["gpu_id"])


def row_workload(row) -> TrainingWorkload:
    tokens = _f(row, "tokens") or 1e12
    method = row.get("method") or "full"
    return make_workload(kind="pretrain" if method == "full" else "finetune", method=method, tokens=tokens,
                         seq_len=_i(row, "seq_len") or 2048, global_batch=_i(row, "global_batch"),
                         precision=row["precision"] or "bf16", flash_attention=bool(_i(row, "flash_attention")),
                         batch_flexible=row["row_type"] == "FULL")


def row_fixed(row) -> LayoutFixed:
    return LayoutFixed(tp=_i(row, "tp"), pp=_i(row, "pp"), dp=_i(row, "dp"), cp=_i(row, "cp"),
                       ep=_i(row, "ep") if (_i(row, "ep") or 1) > 1 else None,
                       micro_batch=_i(row, "micro_batch"), recompute=_i(row, "recompute"),
                       vp=_i(row, "vp") if (_i(row, "vp") or 1) > 1 else None)


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


def prepare_row(row, eff: TrainingEfficiency | None = None) -> PreparedRow | None:
    """Inputs and candidate layouts for one row, or None when the row cannot be predicted."""
    if row["use"] != "1":
        return None
    eff = eff or default_efficiency()
    kind = row["row_type"]
    spec = row_model(row)
    shape = model_shape(spec)
    gpu = row_gpu(row)
    wl = row_workload(row)
    gpn = 8
    inter = inter_node_bytes_per_s(_f(row, "inter_node_gbps") or 400.0, eff)
    n = _i(row, "gpu_count")
    note = ""
    if kind == "THROUGHPUT":
        measured = measured_step_time_s(row, shape)
    else:
        measured = _f(row, "gpu_hours")
    if not measured or (kind == "THROUGHPUT" and not n):
        return None
    if n is None:  # the planner default: smallest count finishing within 30 days
        from gpuplan.perf.training_estimate import estimate_training

        est = estimate_training(spec, wl, gpu, None, inter_node_gbps_per_gpu=_f(row, "inter_node_gbps") or 400.0,
                                efficiency_params=eff, n_runners_up=0)
        n = est.n_gpus
        note = "count: planner default"
    fixed = row_fixed(row) if kind != "FULL" else LayoutFixed()
    lay = enumerate_layouts(shape, wl, [n], gpn, fixed)
    valid = lay["reason"] < 0
    mem = memory_breakdown_bytes(shape, wl, lay["tp"], lay["pp"], lay["dp"], lay["cp"], lay["ep"], lay["micro_batch"],
                                 lay["recompute"], lay["zero"], lay["vp"], global_batch=lay["batch"])["total"]
    ok = valid & (mem <= gpu.memory_bytes)
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


def steady_state(prep: PreparedRow, eff: TrainingEfficiency) -> tuple[float, dict]:
    """Best step time over the prepared layouts and that layout."""
    lay = prep.layouts
    res = step_time_s(prep.shape, prep.wl, prep.feats, eff, *(lay[k] for k in LAYOUT_KEYS), lay["batch"],
                      prep.gpn, prep.inter)
    i = int(np.argmin(res["total"]))
    return float(res["total"][i]), {k: int(lay[k][i]) for k in (*LAYOUT_KEYS, "batch")}


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
    n_params = _f(row, "active_params") or float(row["total_params"])
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
