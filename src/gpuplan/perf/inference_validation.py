"""Serving estimates against published measurements, and the fit of the shared parameters.

Rows come from `data/inference-runs.csv` (built by scripts/build_serving_validation.py);
model shapes pinned for them from `data/inference-models.json`. Each usable row yields one
or more comparisons: output tokens/s for throughput rows, TTFT and TPOT where measured.

The fit adjusts eleven shared numbers (η_bw, η_c, a per-step overhead, a per-layer kernel
floor, the decode weight-stream latency factor, the grouped-GEMM half-efficiency token count
and large-batch share of η_c, a router/permutation time per token-expert pair, the
expert-parallel routing skew, and the speeds of vLLM and of the static-batch engine relative
to TensorRT-LLM, the reference at 1.0; the NVLink all-reduce latency and a served request's
front-end time are held at their public measurements, MEASURED) to minimise a robust (soft-L1) loss on log errors,
each regime weighted alike, so one badly-behaved deployment cannot drag every other
prediction.
Leave-one-source-out refits without every row of one source (one table or paper) and
predicts them; leave-one-family-out (SOURCE_FAMILIES) holds out a publisher's table across its
software versions together, a stricter check where those tables re-measure the same setups. Rows carry a `regime` (see `classify_regime`); per-regime leave-one-source-out
residual quantiles are shipped in data/serving-error-bands.json for the planner's bands.
"""
from __future__ import annotations

import contextlib
import csv
import functools
import json
import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from importlib import resources
from typing import Callable

import numpy as np

from gpuplan.perf.engines import Efficiency, fitted_efficiency

REFERENCE_ENGINE = "trtllm"
FITTED_ENGINES = ("vllm", "optimum-habana")
REGIMES = ("dense_throughput", "dense_latency", "moe_small_active", "moe_large", "amd", "gaudi", "blackwell",
           "long_input")
SMALL_ACTIVE_MAX = 14e9  # MoE with at most this many active parameters: Mixtral 8x7B, Qwen3-30B-A3B, gpt-oss
LATENCY_MAX_CONCURRENCY = 8
LONG_INPUT_MIN = 8192
ETA_BW_MAX = 0.95  # no kernel streams HBM at its datasheet peak; the weight stream may reach 1.0 x peak at most
LOSS_SCALE = 0.25  # log-error beyond which the loss grows linearly, not quadratically
EP_SKEW_MAX = 1.5  # largest coefficient of variation of expert popularity the fit may choose (a physical ceiling)
# One small-message all-reduce over NVLink, as published microbenchmarks time it: vLLM's custom all-reduce on H100
# 7 / 10 / 13 us at TP 2 / 4 / 6 (vllm-project/vllm PRs 24111, 24532), SGLang's on 8 A100 14 us (sgl-project/sglang
# PR 2688), NCCL on 8 H100 19-23 us up to 512 KB (ByteDance-Seed/Triton-distributed issue 57), NCCL symmetric on
# GB200 under 8 us (NVIDIA/nccl-tests issue 333). The value used is measured, not fitted (MEASURED, engines._UNFITTED:
# 8 us, the engines' one-shot kernels on 8 H100) and lies inside the range; a fitted value outside it would be
# explaining something else with the all-reduce (with InferenceX's TP8 sweep held out one fit chose 44 us).
ALLREDUCE_US_RANGE = (5.0, 25.0)


@dataclass(frozen=True)
class Comparison:
    row_id: int
    metric: str  # output_tokens_per_s | ttft_ms | tpot_ms
    group: str  # max_throughput | throughput_other | latency | assumed_input (an input length was assumed)
    measured: float
    label: str
    regime: str = ""
    source_id: str = ""


def classify_regime(model, gpu=None, concurrency: int | None = None, input_len: int = 0, engine: str = "vllm") -> str:
    """The validation regime a serving request falls in, for its error band. First match wins:
    gaudi (Intel, or a static-batch engine), amd, moe_small_active (<= 14B active), moe_large,
    blackwell, long_input (>= 8k prompt), dense_latency (<= 8 in flight), dense_throughput."""
    from gpuplan.perf.engines import resolve_engine
    from gpuplan.perf.vendor_efficiency import BLACKWELL_CLASSES, infer_arch

    vendor, arch = "", ""
    if gpu:
        g = gpu
        if isinstance(gpu, str):
            from gpuplan.catalog.gpus import get_gpu

            g = get_gpu(gpu)
        vendor = g.vendor
        arch = infer_arch(g.id, g.vendor)
    if vendor == "Intel" or resolve_engine(engine).batching == "static":
        return "gaudi"
    if vendor == "AMD":
        return "amd"
    if getattr(model, "is_moe", False):
        return "moe_small_active" if float(model.active_params()) <= SMALL_ACTIVE_MAX else "moe_large"
    if arch in BLACKWELL_CLASSES:
        return "blackwell"
    if input_len >= LONG_INPUT_MIN:
        return "long_input"
    if concurrency is not None and concurrency <= LATENCY_MAX_CONCURRENCY:
        return "dense_latency"
    return "dense_throughput"


@functools.cache
def error_bands() -> dict:
    """Per-regime held-out residual quantiles of log(pred/measured) (the command in its "_source" says how they were
    held out; shipped: leave-one-family-out), or {} before the first write."""
    f = resources.files("gpuplan.perf.data").joinpath("serving-error-bands.json")
    if not f.is_file():
        return {}
    return json.loads(f.read_text(encoding="utf-8"))


def error_band(regime: str) -> dict | None:
    """{'p10', 'p50', 'p90', 'n'} of log(pred/measured) for a regime (see classify_regime), or None."""
    return error_bands().get("regimes", {}).get(regime)


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


# What makes two serving rows "the same configuration": the model, hardware, layout, precisions, engine and load.
REPEAT_KEY = ("model", "gpu", "n_gpus", "tp", "ep", "dp_attention", "precision", "kv_precision", "engine", "scenario",
              "input_len", "output_len", "concurrency", "max_num_seqs")


def serving_repeat_pairs() -> list[dict]:
    """Usable rows measuring one configuration's output throughput (REPEAT_KEY) in successive sources, paired
    (gpuplan.perf.repeatability)."""
    from gpuplan.perf.repeatability import fields_key, repeat_pairs

    def tokens_per_s(r):
        try:
            return float(r["measured_output_tokens_per_s"])
        except (TypeError, ValueError):
            return None

    return repeat_pairs(usable_rows(), key=fields_key(REPEAT_KEY),
                        value=tokens_per_s, regime=lambda r: r.get("regime") or "")


def fit_rows() -> list[dict]:
    """Rows the fit may use: usable and with every input stated by the source (a row whose
    input length had to be assumed is validated, but it does not steer the parameters), and run by
    the software its engine key stands for (a row with a `fit_note`, such as AMD's MLPerf harness
    under the 'vllm' key, is scored but does not move that engine's fitted speed)."""
    return [r for r in usable_rows() if r["input_len_assumed"] != "1" and not runs_other_software(r)]


def runs_other_software(row: dict) -> bool:
    """A row timing other software than its engine key stands for, as its `fit_note` says (AMD's MLPerf harness under
    'vllm'): scored, but neither fitted nor counted in an error band."""
    return bool(row.get("fit_note"))


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
        reg, sid = r.get("regime", ""), r.get("source_id", "")
        if x and r["scenario"] != "latency":
            group = "max_throughput" if r["scenario"] == "max_throughput" else "throughput_other"
            out.append(Comparison(rid, "output_tokens_per_s", "assumed_input" if assumed else group, x, label, reg, sid))
        for metric in ("ttft_ms", "tpot_ms"):
            v = _f(r[f"measured_{metric}"])
            if v:
                out.append(Comparison(rid, metric, "assumed_input" if assumed else "latency", v, label, reg, sid))
    return out


def served(row: dict) -> bool:
    """Whether a row's timings include a server front end (an HTTP / gRPC server with its tokeniser, e.g. `vllm bench
    serve` against `vllm serve`), as its `served` column says; an offline harness (trtllm-bench, benchmark_latency, a
    library call) has none in its timings (see Efficiency.frontend_ms)."""
    return row.get("served") == "yes"


def predict_row(row: dict, eff: Efficiency):
    from gpuplan.perf.inference_estimate import estimate_serving

    conc = row["concurrency"]
    if not served(row):
        eff = replace(eff, frontend_ms=0.0)
    return estimate_serving(
        validation_models()[row["model"]], row["gpu"], n_gpus=int(row["n_gpus"]), tp=int(row["tp"]),
        precision=row["precision"], kv_precision=row["kv_precision"] or None,
        input_len=int(row["input_len"]), output_len=int(row["output_len"]),
        concurrency=int(float(conc)) if conc else None, engine=row["engine"],
        max_num_seqs=int(row["max_num_seqs"]) if row["max_num_seqs"] else None,
        dp_attention=row["dp_attention"] == "1", efficiency=eff,
        ep=int(row["ep"]) if row.get("ep") and row["dp_attention"] != "1" else None,
        requests=int(row["num_prompts"]) if row.get("num_prompts") else None,
        fixed_lengths=bool(conc) and row.get("fixed_lengths") == "yes",
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
FRONTEND_MS_MAX = 50.0
# The shared parameters the fit moves, each inside its physical range (moe_half_tokens on a log scale), then the
# engines' speeds relative to the reference engine.
_RANGES = {
    "eta_bw": (0.3, ETA_BW_MAX), "eta_c": (0.15, 1.0), "allreduce_latency_us": ALLREDUCE_US_RANGE,
    "step_overhead_ms": (0.0, 10.0), "latency_factor": (0.5, 1.0 / ETA_BW_MAX), "moe_half_tokens": (0.0, math.log(512.0)),
    "moe_pair_overhead_ns": (0.0, 200.0), "layer_overhead_us": (0.0, 200.0), "ep_hot_excess": (0.0, EP_SKEW_MAX),
    "frontend_ms": (0.0, FRONTEND_MS_MAX), "moe_gemm_ratio": (0.1, 1.0),
}
_LOG_SCALED = frozenset({"moe_half_tokens"})
ENGINE_FACTOR_RANGE = (0.2, 2.0)
_NAMES = tuple(_RANGES) + tuple(f"f_{e}" for e in FITTED_ENGINES)
_N_CORE = len(_RANGES)


def _to_params(z: np.ndarray, base: Efficiency) -> Efficiency:
    """Unconstrained vector -> parameters in their physical ranges (_RANGES)."""
    sig = lambda v, lo, hi: lo + (hi - lo) / (1 + math.exp(-v))  # noqa: E731
    factors = dict(base.engine_factor)
    factors[REFERENCE_ENGINE] = 1.0
    for i, e in enumerate(FITTED_ENGINES):
        factors[e] = sig(z[_N_CORE + i], *ENGINE_FACTOR_RANGE)
    factors.pop("sglang", None)  # no usable rows: it runs at the mean of the continuous-batching ones
    core = {n: sig(z[i], *_RANGES[n]) for i, n in enumerate(_RANGES)}
    core.update({n: math.exp(core[n]) for n in _LOG_SCALED})
    return replace(base, **core, engine_factor=factors, source="fitted")


def _loss(eff: Efficiency, rows: list[dict], comps: list[Comparison]) -> float:
    pred = predictions(eff, rows)
    per_regime: dict[str, int] = {}
    for c in comps:
        per_regime[c.regime] = per_regime.get(c.regime, 0) + 1
    total = 0.0
    for c in comps:
        w = 1.0 / math.sqrt(per_regime[c.regime])  # regimes weigh alike, not by their row counts
        p = pred.get((c.row_id, c.metric), float("nan"))
        if not (p > 0 and math.isfinite(p)):
            total += 25.0 * w
            continue
        r = math.log(p / c.measured) / LOSS_SCALE
        total += w * 2 * (math.sqrt(1 + r * r) - 1)  # soft-L1
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


def _from_params(eff: Efficiency) -> np.ndarray:
    logit = lambda v, lo, hi: math.log(max(1e-6, (v - lo)) / max(1e-6, (hi - v)))  # noqa: E731
    value = lambda n: math.log(max(getattr(eff, n), 1.0001)) if n in _LOG_SCALED else getattr(eff, n)  # noqa: E731
    z = [logit(value(n), *_RANGES[n]) for n in _RANGES]
    z += [logit(eff.engine_factor.get(e, 1.0), *ENGINE_FACTOR_RANGE) for e in FITTED_ENGINES]
    return np.clip(np.asarray(z, dtype=float), -6, 6)


# Parameters set from direct public measurements (engines._UNFITTED says which), not fitted: the front end is the gap
# between a client's and the engine's TTFT, measured outright, while a fit would take it from whichever served rows'
# TTFTs the model misses most (MoE prefill), and move it tens of milliseconds with one source held out. The all-reduce
# is a microbenchmark of the engines' own kernels; fitted, it soaked up other misses: refitted on the sources
# published before 2025-09 it chose 19 us, and predicting the newer ones came out at 24.6 % / 78.7 % median / p90
# against 18.4 % / 62.6 % with it held (better at every cutoff from 2025-03 to 2026-01).
MEASURED = frozenset({"frontend_ms", "allreduce_latency_us"})


def unidentified(rows: list[dict]) -> set[str]:
    """Parameters (names of _NAMES) that no comparison of `rows` depends on: an engine's speed without a row of that
    engine, the front-end time without a served row that measures TTFT. A fit holds them where it starts."""
    engines = {r["engine"] for r in rows}
    out = {f"f_{e}" for e in FITTED_ENGINES if e not in engines}
    if not any(served(r) and _f(r["measured_ttft_ms"]) for r in rows):
        out.add("frontend_ms")
    return out


def _unfitted_for(eff: Efficiency, names: set[str]) -> Efficiency:
    """`eff` with the named parameters at their unfitted defaults (what is assumed without data)."""
    from gpuplan.perf.engines import _UNFITTED

    factors = dict(eff.engine_factor)
    kw = {}
    for n in names:
        if n.startswith("f_"):
            factors[n[2:]] = _UNFITTED["engine_factor"].get(n[2:], 1.0)
        else:
            kw[n] = _UNFITTED[n]
    return replace(eff, engine_factor=factors, **kw)


# The search the shipped fit runs (scripts/fit_serving_efficiency.py) and every held-out refit repeats: FIT_ITERS
# Nelder-Mead steps from mid-range, then up to FIT_RESTARTS searches from the best point with a fresh, smaller simplex,
# stopping once one gains less than 0.1 % of the loss. Converged: on the two largest MoE-large sources held out, 150
# steps x 4 and 300 x 8 end within 0.01 % of its loss and 0.1 point of its held-out median. A shorter search is not:
# 100 steps without restarts stopped 2.6 loss units (12 %) short on inferencex-870's fold and its held-out median
# moved 5 points (14.7 % -> 19.8 % at 250 steps, 17.9 % converged), so it scored the search, not the estimator.
FIT_ITERS, FIT_RESTARTS = 300, 4


def fit(rows: list[dict] | None = None, start: Efficiency | None = None, iters: int = FIT_ITERS,
        restarts: int = FIT_RESTARTS) -> Efficiency:
    """Nelder-Mead on the robust loss, then up to `restarts` further searches from the best point with a fresh,
    smaller simplex (Nelder-Mead collapses early in 12 dimensions); they stop once one gains less than 0.1 % of the
    loss. Parameters the rows cannot inform (`unidentified`) stay at their start."""
    rows = rows if rows is not None else fit_rows()
    comps = comparisons(rows)
    base = start or fitted_efficiency()
    z0 = _from_params(base) if start is not None and start.source == "fitted" else np.zeros(len(_NAMES))
    pinned = unidentified(rows) | MEASURED
    free = np.asarray([i for i, n in enumerate(_NAMES) if n not in pinned], dtype=int)
    held = np.asarray([i for i, n in enumerate(_NAMES) if n in pinned], dtype=int)
    z0[held] = _from_params(base)[held]  # what the rows cannot inform stays at the start's value

    def full(x: np.ndarray) -> np.ndarray:
        z = z0.copy()
        z[free] = x
        return z

    f = lambda x: _loss(_to_params(full(x), base), rows, comps)  # noqa: E731
    best = _nelder_mead(f, z0[free], iters=iters)
    f_best = f(best)
    for _ in range(max(0, restarts)):
        nxt = _nelder_mead(f, best, step=0.3, iters=iters)
        f_nxt = f(nxt)
        gain = f_best - f_nxt
        if gain > 0:
            best, f_best = nxt, f_nxt
        if gain < 1e-3 * abs(f_best):
            break
    return _to_params(full(best), base)


def errors(eff: Efficiency, rows: list[dict] | None = None) -> list[dict]:
    """One line per comparison: measured, predicted, signed error."""
    rows = rows if rows is not None else usable_rows()
    pred = predictions(eff, rows)
    out = []
    for c in comparisons(rows):
        p = pred[(c.row_id, c.metric)]
        out.append(dict(row_id=c.row_id, metric=c.metric, group=c.group, label=c.label, measured=c.measured,
                        regime=c.regime, source_id=c.source_id,
                        predicted=p, error=p / c.measured - 1 if p == p else float("nan")))
    return out


# Sources that are the same publisher's table for the same harness at another software version: a
# re-measurement of mostly the same configurations, so not independent of each other. Leave-one-family-out
# holds such a family out whole (a stricter check than leave-one-source-out; sources not listed are their own family).
SOURCE_FAMILIES = {
    "trtllm-perf-v1.0": "trtllm-bench-pytorch", "trtllm-perf-v1.2": "trtllm-bench-pytorch",
    "trtllm-perf-v0.14": "trtllm-bench-engine", "trtllm-perf-v0.17": "trtllm-bench-engine",
    "amd-rocm-perf-2025-04": "amd-rocm-perf", "amd-rocm-perf-2025-07": "amd-rocm-perf", "amd-rocm-perf-2025-10": "amd-rocm-perf",
    "amd-rocm-perf-2025-11": "amd-rocm-perf",
    "intel-gaudi2-perf-1.18": "intel-gaudi-perf", "intel-gaudi3-perf-1.18": "intel-gaudi-perf",
    "mlperf-inference-v4.0": "mlperf-inference", "mlperf-inference-v4.1": "mlperf-inference",
    "mlperf-inference-v5.1": "mlperf-inference",
    "gpustack-gpt-oss-20b-h100": "gpustack-perf-lab", "gpustack-gpt-oss-20b-a100": "gpustack-perf-lab",
}


def source_family(source_id: str) -> str:
    return SOURCE_FAMILIES.get(source_id, source_id)


FactorsWithout = Callable[[list[dict]], "dict | None"]


def leave_one_source_out(start: Efficiency, iters: int = FIT_ITERS, restarts: int = FIT_RESTARTS,
                         by_family: bool = False, factors_without: FactorsWithout | None = None,
                         jobs: int = 1) -> list[dict]:
    """Refit without every row of one source (or, with `by_family`, of one source family), then predict
    those rows. Refits search from mid-range with the shipped fit's search (FIT_ITERS, FIT_RESTARTS), as the full fit
    does (the full fit's values would carry the held-out rows into their own prediction); a parameter the remaining
    rows cannot inform (`unidentified`: the held-out source was its only evidence) is held at its unfitted default.
    Rows outside the fit set (an input length assumed) are predicted by the refit without their source too.
    `factors_without(held rows)` may return architecture factors fitted without the vendor rows that the held-out
    source also published (vendor_efficiency.using_factors), None where it published none. `jobs` > 1 runs the
    refits in that many processes (each about two minutes on one core)."""
    key = (lambda r: source_family(r["source_id"])) if by_family else (lambda r: r["source_id"])
    rows = fit_rows()
    folds = []
    for sid in sorted({key(r) for r in usable_rows()}):
        held = [r for r in usable_rows() if key(r) == sid]
        folds.append(_Fold.of([r for r in rows if key(r) != sid], held, factors_without))
    return _run_folds(start, folds, iters, restarts, jobs)


@dataclass(frozen=True)
class _Fold:
    """One held-out check: the rows refitted on, the rows predicted, and the architecture factors both use (None:
    the shipped ones)."""
    train: list[dict]
    held: list[dict]
    factors: dict | None

    @classmethod
    def of(cls, train: list[dict], held: list[dict], factors_without: FactorsWithout | None) -> _Fold:
        return cls(train, held, factors_without(held) if factors_without else None)


def _run_folds(start: Efficiency, folds: list[_Fold], iters: int, restarts: int, jobs: int) -> list[dict]:
    args = [(start, f, iters, restarts) for f in folds]
    if jobs <= 1 or len(folds) < 2:
        return [e for a in args for e in _refit_and_predict(*a)]
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(max_workers=min(jobs, len(folds)), mp_context=ctx) as pool:
        return [e for part in pool.map(_refit_and_predict, *zip(*args)) for e in part]


def _refit_and_predict(start: Efficiency, fold: _Fold, iters: int, restarts: int) -> list[dict]:
    """The held-out check's one step: refit on the fold's training rows alone (what they cannot inform at its
    unfitted default, see `unidentified`), then the errors of that refit on its held rows; both under its factors."""
    from gpuplan.perf.vendor_efficiency import using_factors

    with using_factors(fold.factors) if fold.factors is not None else contextlib.nullcontext():
        eff = fit(fold.train, start=_unfitted_for(start, unidentified(fold.train)), iters=iters, restarts=restarts)
        return errors(eff, fold.held)


def forward_in_time(start: Efficiency, cutoff: str, iters: int = FIT_ITERS, restarts: int = FIT_RESTARTS,
                    factors_without: FactorsWithout | None = None) -> list[dict]:
    """Every row whose source is dated `cutoff` (YYYY-MM) or later, predicted by a refit on the older sources' rows
    alone (the same refit leave-one-source-out runs for each held-out source): how the estimator does on measurements
    newer than anything it was fitted to. A source dated by its year only counts as that year's January."""
    newer = [r for r in usable_rows() if _month(r.get("source_date", "")) >= cutoff]
    older = [r for r in fit_rows() if _month(r.get("source_date", "")) < cutoff]
    if not newer or not older:
        raise ValueError(f"cutoff {cutoff}: {len(newer)} newer and {len(older)} older rows; need some on each side")
    return _run_folds(start, [_Fold.of(older, newer, factors_without)], iters, restarts, 1)


def _month(date: str) -> str:
    """'2025-10 or later' -> '2025-10'; '2025' -> '2025-01'."""
    d = (date or "").strip()[:7]
    return d if len(d) == 7 else (d[:4] + "-01" if len(d) >= 4 else "")


def _q(v: list[float], q: float) -> float:
    return float(np.quantile(np.asarray(v), q)) if v else float("nan")


def summarize_regimes(errs: list[dict]) -> dict[str, dict]:
    """Per regime and metric family: n, median and p90 absolute % error; plus 'all'."""
    out: dict[str, dict] = {}
    keys = [(r, m) for r in REGIMES + ("all",) for m in ("throughput", "ttft", "tpot", "all")]
    for reg, fam in keys:
        e = [abs(x["error"]) for x in errs if x["error"] == x["error"] and x["group"] != "assumed_input"
             and (reg == "all" or x["regime"] == reg)
             and (fam == "all" or x["metric"].startswith({"throughput": "output", "ttft": "ttft", "tpot": "tpot"}[fam]))]
        if e:
            out.setdefault(reg, {})[fam] = {"n": len(e), "median_ape": 100 * float(np.median(e)),
                                            "p90_ape": 100 * _q(e, 0.9)}
    return out


def residual_bands(errs: list[dict]) -> dict[str, dict]:
    """Per regime: p10/p50/p90 of log(pred/measured) over its comparisons (stated inputs only). A row with a `fit_note`
    is left out as well: it times other software than its engine key stands for (AMD's MLPerf harness, not stock
    vLLM), and a band is the spread around an estimate for the engine the plan names."""
    other_software = {int(r["row_id"]) for r in usable_rows() if runs_other_software(r)}
    out = {}
    for reg in REGIMES + ("all",):
        v = [math.log(1 + x["error"]) for x in errs if x["error"] == x["error"] and x["error"] > -1
             and x["group"] != "assumed_input" and x["row_id"] not in other_software
             and (reg == "all" or x["regime"] == reg)]
        if v:
            out[reg] = {"p10": round(_q(v, 0.1), 4), "p50": round(_q(v, 0.5), 4), "p90": round(_q(v, 0.9), 4), "n": len(v)}
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
