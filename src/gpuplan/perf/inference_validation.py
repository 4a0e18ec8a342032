"""Serving estimates against published measurements, and the fit of the shared parameters.

Rows come from `data/inference-runs.csv` (built by scripts/build_serving_validation.py);
model shapes pinned for them from `data/inference-models.json`. Each usable row yields one
or more comparisons: output tokens/s for throughput rows, TTFT and TPOT where measured.

The fit adjusts five shared numbers (η_bw, η_c, the TP all-reduce latency, a per-step
overhead and vLLM's speed relative to TensorRT-LLM, the reference engine at 1.0) to
minimise a robust (soft-L1) loss on log errors, so one badly-behaved deployment cannot
drag every other prediction. Leave-one-out refits without each row and predicts it.
"""
from __future__ import annotations

import csv
import functools
import json
import math
from dataclasses import dataclass, replace
from importlib import resources

import numpy as np

from gpuplan.perf.engines import Efficiency, fitted_efficiency

REFERENCE_ENGINE = "trtllm"
FITTED_ENGINES = ("vllm",)
LOSS_SCALE = 0.25  # log-error beyond which the loss grows linearly, not quadratically


@dataclass(frozen=True)
class Comparison:
    row_id: int
    metric: str  # output_tokens_per_s | ttft_ms | tpot_ms
    group: str  # max_throughput | throughput_other | latency | assumed_input (an input length was assumed)
    measured: float
    label: str


@functools.cache
def validation_models() -> dict:
    from gpuplan.models.spec import ModelSpec

    text = resources.files("gpuplan.perf.data").joinpath("inference-models.json").read_text(encoding="utf-8")
    return {k: ModelSpec(**v) for k, v in json.loads(text)["models"].items()}


@functools.cache
def validation_rows() -> tuple[dict, ...]:
    text = resources.files("gpuplan.perf.data").joinpath("inference-runs.csv").read_text(encoding="utf-8")
    return tuple(csv.DictReader(text.splitlines()))


def usable_rows() -> list[dict]:
    return [r for r in validation_rows() if r["use"] == "yes"]


def fit_rows() -> list[dict]:
    """Rows the fit may use: usable and with every input stated by the source (a row whose
    input length had to be assumed is validated, but it does not steer the parameters)."""
    return [r for r in usable_rows() if r["input_len_assumed"] != "1"]


def _f(v: str) -> float | None:
    return float(v) if v not in ("", None) else None


def comparisons(rows: list[dict] | None = None) -> list[Comparison]:
    out = []
    for r in rows if rows is not None else usable_rows():
        rid = int(r["row_id"])
        label = f"{r['model']} {r['gpu']}x{r['n_gpus']} tp{r['tp']} {r['precision']} {r['engine']} {r['input_len']}/{r['output_len']}"
        if r["concurrency"]:
            label += f" c{r['concurrency']}"
        assumed = r["input_len_assumed"] == "1"
        x = _f(r["measured_output_tokens_per_s"])
        if x and r["scenario"] != "latency":
            group = "max_throughput" if r["scenario"] == "max_throughput" else "throughput_other"
            out.append(Comparison(rid, "output_tokens_per_s", "assumed_input" if assumed else group, x, label))
        for metric in ("ttft_ms", "tpot_ms"):
            v = _f(r[f"measured_{metric}"])
            if v:
                out.append(Comparison(rid, metric, "assumed_input" if assumed else "latency", v, label))
    return out


def predict_row(row: dict, eff: Efficiency):
    from gpuplan.perf.inference_estimate import estimate_serving

    conc = row["concurrency"]
    return estimate_serving(
        validation_models()[row["model"]], row["gpu"], n_gpus=int(row["n_gpus"]), tp=int(row["tp"]),
        precision=row["precision"], kv_precision=row["kv_precision"] or None,
        input_len=int(row["input_len"]), output_len=int(row["output_len"]),
        concurrency=int(float(conc)) if conc else None, engine=row["engine"],
        max_num_seqs=int(row["max_num_seqs"]) if row["max_num_seqs"] else None,
        dp_attention=row["dp_attention"] == "1", efficiency=eff,
    )


def predictions(eff: Efficiency, rows: list[dict] | None = None) -> dict[tuple[int, str], float]:
    out = {}
    for r in rows if rows is not None else usable_rows():
        est = predict_row(r, eff)
        for metric in ("output_tokens_per_s", "ttft_ms", "tpot_ms"):
            v = getattr(est, metric)
            out[(int(r["row_id"]), metric)] = float(v) if v else float("nan")
    return out


# ---------------------------------------------------------------- fitting ----------
_NAMES = ("eta_bw", "eta_c", "allreduce_latency_us", "step_overhead_ms") + tuple(f"f_{e}" for e in FITTED_ENGINES)


def _to_params(z: np.ndarray, base: Efficiency) -> Efficiency:
    """Unconstrained vector -> parameters in their physical ranges."""
    sig = lambda v, lo, hi: lo + (hi - lo) / (1 + math.exp(-v))  # noqa: E731
    factors = dict(base.engine_factor)
    factors[REFERENCE_ENGINE] = 1.0
    for i, e in enumerate(FITTED_ENGINES):
        factors[e] = sig(z[4 + i], 0.2, 2.0)
    factors.pop("sglang", None)  # no usable rows: it runs at the mean of the fitted ones
    return replace(base, eta_bw=sig(z[0], 0.3, 1.0), eta_c=sig(z[1], 0.15, 1.0),
                   allreduce_latency_us=sig(z[2], 1.0, 200.0), step_overhead_ms=sig(z[3], 0.0, 20.0),
                   engine_factor=factors, source="fitted")


def _loss(eff: Efficiency, rows: list[dict], comps: list[Comparison]) -> float:
    pred = predictions(eff, rows)
    total = 0.0
    for c in comps:
        p = pred.get((c.row_id, c.metric), float("nan"))
        if not (p > 0 and math.isfinite(p)):
            total += 25.0
            continue
        r = math.log(p / c.measured) / LOSS_SCALE
        total += 2 * (math.sqrt(1 + r * r) - 1)  # soft-L1
    return total


def _nelder_mead(f, x0: np.ndarray, step: float = 0.6, iters: int = 400, tol: float = 1e-6) -> np.ndarray:
    n = len(x0)
    pts = [x0] + [x0 + step * np.eye(n)[i] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) < tol * (1 + abs(vals[0])):
            break
        c = np.mean(pts[:-1], axis=0)
        xr = c + (c - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = c + 2 * (c - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (pts[-1] - c)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0]] + [pts[0] + 0.5 * (p - pts[0]) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    return pts[int(np.argmin(vals))]


def fit(rows: list[dict] | None = None, start: Efficiency | None = None, iters: int = 400) -> Efficiency:
    rows = rows if rows is not None else fit_rows()
    comps = comparisons(rows)
    base = start or fitted_efficiency()
    z0 = np.zeros(len(_NAMES))
    best = _nelder_mead(lambda z: _loss(_to_params(z, base), rows, comps), z0, iters=iters)
    # A restart from the optimum escapes Nelder-Mead's occasional early collapse.
    best = _nelder_mead(lambda z: _loss(_to_params(z, base), rows, comps), best, step=0.3, iters=iters)
    return _to_params(best, base)


def errors(eff: Efficiency, rows: list[dict] | None = None) -> list[dict]:
    """One line per comparison: measured, predicted, signed error."""
    rows = rows if rows is not None else usable_rows()
    pred = predictions(eff, rows)
    out = []
    for c in comparisons(rows):
        p = pred[(c.row_id, c.metric)]
        out.append(dict(row_id=c.row_id, metric=c.metric, group=c.group, label=c.label, measured=c.measured,
                        predicted=p, error=p / c.measured - 1 if p == p else float("nan")))
    return out


def leave_one_out(start: Efficiency | None = None, iters: int = 400) -> list[dict]:
    """Refit without each row, then predict that row's comparisons (rows outside the fit
    set are predicted by the full fit, which never saw them)."""
    rows = fit_rows()
    out = []
    full = fit(rows, start=start, iters=iters)
    out.extend(errors(full, [r for r in usable_rows() if r not in rows]))
    for r in rows:
        rest = [x for x in rows if x is not r]
        eff = fit(rest, start=start, iters=iters)
        out.extend(errors(eff, [r]))
    return out


def summarize(errs: list[dict]) -> dict[str, dict]:
    """Median and max absolute % error by group."""
    out = {}
    for g in ("max_throughput", "throughput_other", "latency", "assumed_input", "all_stated_inputs"):
        e = [abs(x["error"]) for x in errs
             if (x["group"] == g or (g == "all_stated_inputs" and x["group"] != "assumed_input")) and x["error"] == x["error"]]
        if e:
            out[g] = {"n": len(e), "median_abs_pct": 100 * float(np.median(e)), "max_abs_pct": 100 * max(e),
                      "within_30pct": sum(v <= 0.30 for v in e)}
    return out
