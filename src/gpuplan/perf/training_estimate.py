"""Training and fine-tuning estimates: FLOPs, memory, layout, step time, GPU-hours, wall time.

`estimate_training` answers one (model, workload, GPU type, count) in full, with the layout it
chose, runners-up and why the other layouts failed. `estimate_training_grid` answers many GPU
types x counts at once for the planner (arrays only). `estimate_memory` is memory alone.
Every result carries the assumptions it used; all of them can be overridden.
"""
from __future__ import annotations

import collections
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from gpuplan.catalog.records import Gpu
from gpuplan.errors import UsageError
from gpuplan.models.spec import ModelSpec
from gpuplan.perf.calibration import calibration_entry, token as calibration_token
from gpuplan.perf.efficiency import TrainingEfficiency, default_efficiency
from gpuplan.perf.layout_search import (LAYOUT_KEYS, REASONS, SIMPLER_LAYOUT_TOLERANCE, STEP_KEYS, LayoutFixed,
                                        search_layouts, validate_fixed)
from gpuplan.perf.scaleup import describe as describe_scaleup
from gpuplan.perf.training_flops import RECOMPUTE_CODES, RECOMPUTE_NAMES, training_flops
from gpuplan.perf.training_memory import GIB, MEMORY_PARTS, memory_breakdown_bytes
from gpuplan.perf.training_shape import ModelShape, model_shape
from gpuplan.perf.training_time import (ep_overlap_runs, flops_per_token, fused_moe_flags, gpu_features,
                                        inter_node_bytes_per_s, step_time_s)
from gpuplan.perf.workload import TrainingWorkload

DEFAULT_DEADLINE_DAYS = 30.0
MAX_GPUS = 131_072
ATTENTION_CONVENTIONS = ("causal", "full", "none")
FLOPS_CONVENTION = {
    "causal": "6·N_act per token (matmul weights, MoE top-k) + causal attention 6·L·a·(d_qk+d_v)/2·s",
    "full": "6·N_act per token + full (non-causal) attention 6·L·a·(d_qk+d_v)·s (PaLM/NVIDIA)",
    "none": "6·N_act per token, attention score FLOPs left out",
}


def default_counts(max_gpus: int = MAX_GPUS) -> np.ndarray:
    """GPU counts people rent: 1, 2, 4, multiples of 8 to 512, of 64 to 4096, of 512 beyond."""
    c = {1, 2, 4}
    c.update(range(8, 513, 8))
    c.update(range(576, 4097, 64))
    c.update(range(4608, 32769, 512))
    c.update(range(36864, 131073, 4096))
    return np.array(sorted(x for x in c if x <= max_gpus), dtype=np.int64)


class Layout(BaseModel):
    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    micro_batch: int
    recompute: str
    zero: int
    vp: int
    etp: int = Field(description="routed experts' tensor parallelism: tp, or 1 with the experts folded whole over "
                                 "the TP ranks (Megatron's MoE parallel folding)")
    global_batch: int = Field(description="sequences per optimizer step")
    micro_batches: int = Field(description="micro-batches per step per pipeline")


class RunnerUp(BaseModel):
    layout: Layout
    step_time_s: float
    mfu: float
    memory_per_gpu_gb: float
    gpu_hours: float
    slower_pct: float


class TrainingEstimate(BaseModel):
    model: str
    gpu: str
    n_gpus: int
    method: str
    precision: str
    tokens: float
    steps: int
    flops: float = Field(description="total model FLOPs of the run (the stated convention)")
    training_flops: float
    hardware_flops: float
    gpu_hours: float
    wall_hours: float
    wall_days: float
    step_time_s: float
    tokens_per_s: float
    mfu: float
    hfu: float
    memory_per_gpu_gb: float
    gpu_memory_gb: float
    memory: dict[str, float] = Field(description="GB per GPU by part (the fuller pipeline stage)")
    fits: bool
    memory_shortfall_gb: float
    layout: Layout
    step_breakdown_s: dict[str, float]
    assumptions: dict[str, Any]
    runners_up: list[RunnerUp]
    rejected: dict[str, int]
    notes: list[str] = Field(default_factory=list)


class MemoryEstimate(BaseModel):
    model: str
    gpu: str | None
    method: str
    layout: dict[str, Any]
    memory_per_gpu_gb: float
    memory_per_gpu_gib: float
    memory: dict[str, float]
    gpu_memory_gb: float | None
    fits: bool | None
    memory_shortfall_gb: float
    assumptions: dict[str, Any]


# ---------------------------------------------------------------------------------------------
def _model(model) -> ModelSpec:
    if isinstance(model, ModelSpec):
        return model
    from gpuplan.models import resolve_model

    return resolve_model(str(model))


def _gpu(gpu) -> Gpu:
    if isinstance(gpu, Gpu):
        return gpu
    from gpuplan.catalog.gpus import get_gpu

    return get_gpu(str(gpu))


def _recompute_code(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        key = value.strip().lower()
        if key not in RECOMPUTE_CODES:
            raise UsageError(f"recompute {value!r}: use none, selective or full")
        return RECOMPUTE_CODES[key]
    return int(value)


def _check_fraction(name: str, value: float | None, upper: float = 1.0) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= upper:
        raise UsageError(f"{name} must be a number in (0, {upper:g}], got {value!r}")


def _check_count(n_gpus) -> int:
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1 or n_gpus > MAX_GPUS:
        raise UsageError(f"GPU count must be a whole number in 1..{MAX_GPUS}, got {n_gpus!r}")
    return int(n_gpus)


def _check_gpn(gpus_per_node) -> int:
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, (int, np.integer)) \
            or not 1 <= gpus_per_node <= 1024:
        raise UsageError(f"gpus_per_node must be a whole number in 1..1024, got {gpus_per_node!r}")
    return int(gpus_per_node)


def _fixed(shape, wl, gpn, tp, pp, dp, cp, ep, micro_batch, recompute, zero, vp, etp=None) -> LayoutFixed:
    fixed = LayoutFixed(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, micro_batch=micro_batch,
                        recompute=_recompute_code(recompute), zero=zero, vp=vp, etp=etp)
    validate_fixed(shape, wl, fixed, gpn)
    return fixed


def _eff(efficiency_params: TrainingEfficiency | None) -> TrainingEfficiency:
    return efficiency_params or default_efficiency()


def with_model_defaults(wl: TrainingWorkload, spec: ModelSpec) -> TrainingWorkload:
    """A pre-training batch sized to the model when none is given (published recipes grow it
    with model size); a given batch is a target rounded to the layout, never refused."""
    from gpuplan.perf.workload import default_pretrain_batch_tokens

    update: dict[str, Any] = {}
    if wl.kind == "pretrain" and wl.global_batch is None and wl.default_batch_tokens is None:
        update["default_batch_tokens"] = default_pretrain_batch_tokens(spec.total_params())
    if wl.global_batch is not None and not wl.batch_flexible:
        update["batch_flexible"] = True
    return wl.model_copy(update=update) if update else wl


def adapt_to_gpu(wl: TrainingWorkload, gpu: Gpu) -> tuple[TrainingWorkload, list[str]]:
    """The workload as this GPU runs it: bf16 falls back to fp16 where there is no bf16, no
    FlashAttention-2 before Ampere; a precision the GPU cannot run at all is a usage error."""
    from gpuplan.catalog.capabilities import resolve_training

    res = resolve_training(gpu, wl.precision)
    if not res.ok:
        raise UsageError(f"{res.reason}; use bf16" + ("" if wl.precision == "fp8" else " or fp8"))
    update: dict[str, Any] = {}
    if res.precision != wl.precision:
        update["precision"] = res.precision
    if wl.flash_attention and not res.flash_attention:
        update["flash_attention"] = False
    return (wl.model_copy(update=update) if update else wl), list(res.notes)


def _steps(wl: TrainingWorkload, batch) -> np.ndarray:
    return np.ceil(wl.total_tokens / (np.asarray(batch, dtype=np.float64) * wl.seq_len))


# ---------------------------------------------------------------------------------------------
@dataclass
class TrainingGrid:
    """Arrays of shape (len(gpus), len(counts)); inf / False where no layout fits."""

    gpu_ids: list[str]
    counts: np.ndarray
    gpu_hours: np.ndarray
    wall_hours: np.ndarray
    step_time_s: np.ndarray
    tokens_per_s: np.ndarray
    mfu: np.ndarray
    fits: np.ndarray
    memory_per_gpu_gb: np.ndarray
    goodput: np.ndarray
    layout: dict[str, np.ndarray]  # each (G, K), -1 where nothing fits
    flops: float


def estimate_training_grid(model, workload: TrainingWorkload, gpus, counts, inter_node_gbps_per_gpu=None,
                           gpus_per_node: int = 8, goodput: float | None = None, efficiency: float | None = None,
                           attention: str = "causal", efficiency_params: TrainingEfficiency | None = None,
                           **layout) -> TrainingGrid:
    """Best-layout GPU-hours and wall time for every GPU type x count, vectorized for the planner.

    `inter_node_gbps_per_gpu` may be one value or one per GPU type (e.g. InfiniBand vs Ethernet offers).
    """
    spec = _model(model)
    shape = model_shape(spec)
    gpus = [_gpu(g) for g in gpus]
    if not gpus:
        raise UsageError("no GPU types given")
    workload = with_model_defaults(workload, spec)
    gpn = _check_gpn(gpus_per_node)
    counts = np.atleast_1d(np.asarray(counts))
    if counts.size == 0 or not np.all(np.isfinite(counts)) or np.any(counts < 1) or np.any(counts > MAX_GPUS) \
            or np.any(counts != np.round(counts)):
        raise UsageError(f"GPU counts must be whole numbers in 1..{MAX_GPUS}")
    counts = counts.astype(np.int64)
    _check_fraction("goodput", goodput)
    _check_fraction("efficiency", efficiency)
    if attention not in ATTENTION_CONVENTIONS:
        raise UsageError(f"attention convention {attention!r}: use causal, full or none")
    eff = _eff(efficiency_params)
    fabric = inter_node_gbps_per_gpu
    if isinstance(fabric, (list, tuple, np.ndarray)):
        if len(fabric) != len(gpus):
            raise UsageError("give one inter-node bandwidth per GPU type")
        inter = np.array([inter_node_bytes_per_s(f, eff) for f in fabric])
    else:
        inter = np.full(len(gpus), inter_node_bytes_per_s(fabric, eff))
    for g in gpus:
        g.peak_tflops(workload.precision)  # raises a UsageError naming the GPU without that precision
    fixed = _fixed(shape, workload, gpn, **{k: layout.get(k) for k in LAYOUT_KEYS})
    res = _grid_search(spec, shape, workload, gpus, counts, gpn, inter, eff, fixed, attention, efficiency)
    G, K = res.step_time_s.shape
    lay = res.layouts
    bi = np.where(res.best_index >= 0, res.best_index, 0)
    batch = np.where(res.fits, lay["batch"][bi], 1)
    steps = _steps(workload, batch)
    gp = np.full((G, K), goodput) if goodput is not None else np.broadcast_to(eff.goodput(counts), (G, K)).copy()
    wall_s = np.where(res.fits, steps * res.step_time_s / gp, np.inf)
    wall_h = wall_s / 3600.0
    gpu_h = wall_h * counts[None, :]
    tok_s = np.where(res.fits, batch * workload.seq_len / res.step_time_s, 0.0)
    model_tok = flops_per_token(shape, workload, attention)[0]
    peak = np.array([g.peak_tflops(workload.precision) for g in gpus])[:, None] * 1e12
    mfu = tok_s * model_tok / (counts[None, :] * peak)
    mem_gb = np.where(res.fits, res.memory["total"][bi] / 1e9, np.inf)
    layout_arrays = {k: np.where(res.fits, lay[k][bi], -1) for k in LAYOUT_KEYS}
    return TrainingGrid(gpu_ids=[g.id for g in gpus], counts=counts, gpu_hours=gpu_h, wall_hours=wall_h,
                        step_time_s=res.step_time_s, tokens_per_s=tok_s, mfu=mfu, fits=res.fits,
                        memory_per_gpu_gb=mem_gb, goodput=gp, layout=layout_arrays,
                        flops=model_tok * workload.total_tokens)


# Layout searches of recent planner calls. The search does not depend on how many tokens are
# trained (only steps do), so re-planning the same model with another token count, budget or
# deadline (the web page, a sweep) reuses it. Results are read-only by convention.
_SEARCH_CACHE: collections.OrderedDict[tuple, Any] = collections.OrderedDict()
_SEARCH_CACHE_SIZE = 256
_SEARCH_CACHE_LOCK = threading.Lock()


def _grid_search(spec: ModelSpec, shape: ModelShape, workload: TrainingWorkload, gpus: list[Gpu], counts: np.ndarray,
                 gpn: int, inter: np.ndarray, eff: TrainingEfficiency, fixed: LayoutFixed, attention: str,
                 efficiency: float | None):
    key = (spec.model_dump_json(), workload.model_dump_json(exclude={"tokens", "epochs", "dataset_tokens"}),
           workload.batch, tuple(g.model_dump_json() for g in gpus), tuple(counts.tolist()), gpn,
           tuple(inter.tolist()), repr(eff), repr(fixed), attention, efficiency, calibration_token())
    with _SEARCH_CACHE_LOCK:
        hit = _SEARCH_CACHE.get(key)
        if hit is not None:
            _SEARCH_CACHE.move_to_end(key)
            return hit
    res = search_layouts(shape, workload, gpus, counts, gpn, inter, eff, fixed, attention, efficiency,
                         grid_mode=len(counts) * len(gpus) > 1)
    with _SEARCH_CACHE_LOCK:
        _SEARCH_CACHE[key] = res
        while len(_SEARCH_CACHE) > _SEARCH_CACHE_SIZE:
            _SEARCH_CACHE.popitem(last=False)
    return res


def _choose_count(grid: TrainingGrid, deadline_h: float) -> tuple[int, str]:
    fits = grid.fits[0]
    if not fits.any():
        return int(grid.counts[-1]), "no count up to the search limit fits in memory; showing the largest"
    wall = grid.wall_hours[0]
    ok = np.nonzero(fits & (wall <= deadline_h))[0]
    if ok.size:
        return int(grid.counts[ok[0]]), (f"smallest count (powers of two / multiples of 8) that fits and finishes "
                                         f"within {deadline_h / 24:g} days")
    gh = np.where(fits, grid.gpu_hours[0], np.inf)
    fast = int(np.argmin(np.where(fits, wall, np.inf)))
    return int(grid.counts[int(np.argmin(gh))]), (
        f"no count finishes within {deadline_h / 24:g} days (fastest: {grid.counts[fast]} GPUs, "
        f"{wall[fast] / 24:.1f} days); picked the fewest GPU-hours")


# Without a GPU count or deadline, a run is sized as a team paying for it would size it, not by a planning
# deadline. Counts whose GPU-hours are within EFFICIENT_SLACK of the fewest cost about the same: the smallest of them
# that finishes within REASONABLE_WALL_DAYS. When none does, finishing sooner costs GPU-hours, and a run is allowed
# up to LONGEST_WALL_DAYS, the length of the largest published pre-training runs (Llama 3.1 405B: 30.84M H100-hours
# on 16,384 GPUs, 78 days; DeepSeek-V3: 2.79M H800-hours on 2,048, 57 days): the fewest GPU-hours among the counts
# finishing within it. When none does either, the largest count within the slack (the fastest run that wastes no
# more than that).
EFFICIENT_SLACK = 0.10
REASONABLE_WALL_DAYS = 30.0
LONGEST_WALL_DAYS = 90.0
LONG_SEQ_NOTE_TOKENS = 16_384  # from here attention is a large share of the step: the stack's kernels matter
COUNT_POLICIES = ("auto", "deadline", "efficient", "throughput")


def _choose_count_efficient(grid: TrainingGrid, wall_limit_h: float,
                            longest_h: float = LONGEST_WALL_DAYS * 24) -> tuple[int, str]:
    fits = grid.fits[0]
    if not fits.any():
        return int(grid.counts[-1]), "no count up to the search limit fits in memory; showing the largest"
    gh = np.where(fits, grid.gpu_hours[0], np.inf)
    wall = grid.wall_hours[0]
    fewest = int(grid.counts[int(np.argmin(gh))])
    near = gh <= float(gh.min()) * (1.0 + EFFICIENT_SLACK)
    in_time = near & (wall <= wall_limit_h)
    if in_time.any():
        i = int(np.nonzero(in_time)[0][0])
        return int(grid.counts[i]), (f"the smallest count within {EFFICIENT_SLACK:.0%} of the fewest GPU-hours "
                                     f"({fewest} GPUs) that finishes within {wall_limit_h / 24:g} days")
    longest = fits & (wall <= longest_h)
    if longest.any():
        gh_l = np.where(longest, gh, np.inf)
        i = int(np.nonzero(gh_l <= gh_l.min() * 1.005)[0][0])
        return int(grid.counts[i]), (
            f"no count within {EFFICIENT_SLACK:.0%} of the fewest GPU-hours ({fewest} GPUs) finishes within "
            f"{wall_limit_h / 24:g} days; the fewest GPU-hours among counts finishing within {longest_h / 24:g} days "
            f"(the length of the largest published pre-training runs); give --gpus or --deadline-days to trade "
            f"GPU-hours for wall time")
    i = int(np.nonzero(near)[0][-1])
    return int(grid.counts[i]), (
        f"no count finishes within {longest_h / 24:g} days; the largest count within {EFFICIENT_SLACK:.0%} of the "
        f"fewest GPU-hours ({fewest} GPUs); give --gpus or --deadline-days to trade GPU-hours for wall time")


def _choose_count_throughput(grid: TrainingGrid) -> tuple[int, str]:
    fits = grid.fits[0]
    if not fits.any():
        return int(grid.counts[-1]), "no count up to the search limit fits in memory; showing the largest"
    per_gpu = np.where(fits, grid.tokens_per_s[0] / grid.counts, 0.0)
    i = int(np.nonzero(per_gpu >= per_gpu.max() * 0.99)[0][0])
    return int(grid.counts[i]), "the smallest count at the highest throughput per GPU (no --tokens given)"


def _check_fused_moe(spec, shape, g, fusable: bool) -> None:
    """--fused-moe needs a MoE model and a GPU its fused grouped-MLP kernel runs on (sm100: data-centre Blackwell)."""
    if not shape.is_moe:
        raise UsageError(f"--fused-moe fuses a MoE model's routed experts; {spec.name} is dense")
    if not fusable:
        raise UsageError(f"--fused-moe: the fused grouped-MLP kernel runs on data-centre Blackwell (B200, B300, GB200, "
                         f"GB300), not {g.id}")


def estimate_training(model, workload: TrainingWorkload, gpu, n_gpus: int | None = None, *,
                      tp: int | None = None, pp: int | None = None, dp: int | None = None, cp: int | None = None,
                      ep: int | None = None, micro_batch: int | None = None, recompute=None, zero: int | None = None,
                      vp: int | None = None, etp: int | None = None, inter_node_gbps_per_gpu=None,
                      gpus_per_node: int = 8, goodput: float | None = None, efficiency: float | None = None,
                      deadline_days: float | None = None, attention: str = "causal",
                      overhead_gib: float | None = None, efficiency_params: TrainingEfficiency | None = None,
                      n_runners_up: int = 5, count_policy: str = "auto") -> TrainingEstimate:
    """GPU-hours, wall time, MFU, memory and layout for one model, workload, GPU type and count.

    Without `n_gpus`: with `deadline_days`, the smallest count that fits and finishes within it
    (else the fewest GPU-hours); without, a count the workload would sensibly use (`_choose_count_efficient`: about
    the fewest GPU-hours, in at most REASONABLE_WALL_DAYS where that costs little, else LONGEST_WALL_DAYS).
    `count_policy` "throughput" picks the highest throughput per GPU (step-time questions).
    Layout parts given are pinned.
    """
    if count_policy not in COUNT_POLICIES:
        raise UsageError(f"count policy {count_policy!r}: use one of {', '.join(COUNT_POLICIES)}")
    spec = _model(model)
    shape = model_shape(spec)
    g = _gpu(gpu)
    workload, capability_notes = adapt_to_gpu(with_model_defaults(workload, spec), g)
    fusable = bool(fused_moe_flags([g])[0])
    if workload.fused_moe:
        _check_fused_moe(spec, shape, g, fusable)
    if workload.ep_overlap and not shape.is_moe:
        raise UsageError(f"--ep-overlap hides a MoE model's expert-parallel all-to-all; {spec.name} is dense")
    gpn = _check_gpn(gpus_per_node)
    _check_fraction("goodput", goodput)
    _check_fraction("efficiency", efficiency)
    if attention not in ATTENTION_CONVENTIONS:
        raise UsageError(f"attention convention {attention!r}: use causal, full or none")
    if overhead_gib is not None and (not math.isfinite(overhead_gib) or not 0 <= overhead_gib <= 1000):
        raise UsageError(f"overhead_gib must be in 0..1000, got {overhead_gib!r}")
    if deadline_days is not None and (not math.isfinite(deadline_days) or not 0 < deadline_days <= 36500):
        raise UsageError(f"deadline must be in (0, 36500] days, got {deadline_days!r}")
    g.peak_tflops(workload.precision)
    eff = _eff(efficiency_params)
    inter = inter_node_bytes_per_s(inter_node_gbps_per_gpu, eff)
    layout_args = dict(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, micro_batch=micro_batch, recompute=recompute,
                       zero=zero, vp=vp, etp=etp)
    fixed = _fixed(shape, workload, gpn, **layout_args)
    notes: list[str] = list(capability_notes)
    deadline_h = (deadline_days or DEFAULT_DEADLINE_DAYS) * 24
    if n_gpus is None:
        grid = estimate_training_grid(spec, workload, [g], default_counts(), inter_node_gbps_per_gpu, gpn, goodput,
                                      efficiency, attention, eff, **{**layout_args,
                                                                     "recompute": fixed.recompute})
        policy = count_policy if count_policy != "auto" else ("deadline" if deadline_days else "efficient")
        if policy == "deadline":
            n, why = _choose_count(grid, deadline_h)
        elif policy == "throughput":
            n, why = _choose_count_throughput(grid)
        else:
            n, why = _choose_count_efficient(grid, REASONABLE_WALL_DAYS * 24)
        notes.append(f"{n} GPUs: {why}")
    else:
        n = _check_count(n_gpus)

    # The same layout space as the planner's sweep (grid_mode), so `estimate train` and `plan train`
    # agree for the same GPU, count and fabric.
    res = search_layouts(shape, workload, [g], [n], gpn, inter, eff, fixed, attention, efficiency,
                         keep_ranked=n_runners_up + 1, overhead_gib=overhead_gib, grid_mode=True)
    lay, mem = res.layouts, res.memory
    rejected = res.rejected[0][0] if res.rejected else {r: 0 for r in REASONS}
    fits = bool(res.fits[0, 0])
    if fits:
        i = int(res.best_index[0, 0])
    elif res.min_memory_index[0] >= 0:
        i = int(res.min_memory_index[0])
    else:
        reasons = ", ".join(f"{k} {v}" for k, v in rejected.items() if v)
        hint = ""
        if rejected.get("zero_without_data_parallel"):  # only marked where a ZeRO-2/3 is pinned
            hint = (f"; ZeRO-{fixed.zero} shards over data-parallel ranks and these pinned parts leave none "
                    f"(drop --zero, or give more GPUs)")
        raise UsageError(f"no valid parallel layout for {n} x {g.id} with the pinned parts "
                         f"({reasons or 'tp·pp·cp does not divide the GPU count'}){hint}")
    feats = gpu_features([g], workload.precision, gpn, eff)
    from gpuplan.perf.layout_search import _select

    one = _select(feats, 0)
    fa2_gap = float(one.fa2_gap) > 0.0 and efficiency is None
    attn_stack = float(eff.attention_framework_ratio(workload.framework, float(fa2_gap)))

    def time_of(idx):
        idx = np.atleast_1d(idx)
        return step_time_s(shape, workload, one, eff, *(lay[k][idx] for k in STEP_KEYS), lay["batch"][idx],
                           gpn, inter, attention=attention, efficiency_override=efficiency, etp=lay["etp"][idx])

    parts = time_of(i)
    step = float(parts["total"][0])
    batch = int(lay["batch"][i])
    steps = int(_steps(workload, batch))
    gp = float(goodput) if goodput is not None else float(eff.goodput(n))
    wall_s = steps * step / gp
    model_tok, _, _ = flops_per_token(shape, workload, attention)
    rc_name = RECOMPUTE_NAMES[int(lay["recompute"][i])]
    from gpuplan.perf.training_flops import hardware_flops_per_token

    hw_tok = hardware_flops_per_token(shape, workload.attention_len, rc_name, workload.method, attention,
                                      workload.flash_attention, workload.lora_rank, workload.lora_targets)
    hw_tok += workload.teacher_forward_flops_per_token
    peak = g.peak_tflops(workload.precision) * 1e12
    tok_s = batch * workload.seq_len / step
    mfu = tok_s * model_tok / (n * peak)
    hfu = tok_s * hw_tok / (n * peak)
    total_mem = float(mem["total"][i])
    shortfall = max(0.0, (total_mem - g.memory_bytes) / 1e9)
    if not fits:
        notes.append(f"does not fit: the leanest layout needs {total_mem / 1e9:.1f} GB per GPU, "
                     f"{shortfall:.1f} GB more than the {g.memory_gb:g} GiB ({g.memory_bytes / 1e9:.1f} GB) of a {g.id}")
    if not workload.batch_fixed and batch != workload.batch:
        groups = " x pp (interleaved stages run micro-batches in groups of pp)" if int(lay["vp"][i]) > 1 else ""
        notes.append(f"global batch rounded from {workload.batch} to {batch} sequences to divide dp x "
                     f"micro-batch{groups}")
    if int(lay["etp"][i]) < int(lay["tp"][i]):
        notes.append(f"experts folded over the TP ranks (ETP1, Megatron's --expert-tensor-parallel-size 1): each expert "
                     f"whole on one of the EP{int(lay['ep'][i])} ranks, drawn from TP x CP x DP")

    def layout_of(idx) -> Layout:
        return Layout(**{k: (RECOMPUTE_NAMES[int(lay[k][idx])] if k == "recompute" else int(lay[k][idx]))
                         for k in LAYOUT_KEYS},
                      global_batch=int(lay["batch"][idx]),
                      micro_batches=int(lay["batch"][idx] // (lay["dp"][idx] * lay["micro_batch"][idx])))

    runners = []
    if fits and res.ranked and len(res.ranked[0][0]) > 1:
        others = res.ranked[0][0][1:]
        rt = time_of(others)["total"]
        for j, idx in enumerate(others):
            st = float(rt[j])
            b_j = int(lay["batch"][idx])
            steps_j = _steps(workload, b_j)
            runners.append(RunnerUp(
                layout=layout_of(idx), step_time_s=st,
                mfu=float(b_j * workload.seq_len / st * model_tok / (n * peak)),
                memory_per_gpu_gb=float(mem["total"][idx] / 1e9),
                gpu_hours=float(steps_j * st / gp * n / 3600), slower_pct=100.0 * (st * steps_j / (step * steps) - 1)))
        faster = min(runners, key=lambda r: r.slower_pct, default=None)
        if faster is not None and faster.slower_pct < 0:
            notes.append(f"layout: the simplest of those within {SIMPLER_LAYOUT_TOLERANCE:.1%} of the fastest; "
                         f"{faster.layout.tp}x{faster.layout.pp}x{faster.layout.dp} (TP x PP x DP"
                         f"{f', VP{faster.layout.vp}' if faster.layout.vp > 1 else ''}) is {-faster.slower_pct:.1f}% "
                         "faster as modelled, a difference below the spread of repeated measurements, with more "
                         "parallel dimensions to set up")

    gib = lambda x: float(x) / 1e9  # noqa: E731
    assumptions = {
        "efficiency": float(parts["eta"][0]),
        "efficiency_source": "user" if efficiency is not None else eff.source,
        "efficiency_params": {k: v for k, v in eff.as_dict().items() if k != "source"},
        "goodput": gp,
        "goodput_source": "user" if goodput is not None else
        f"goodput_base {eff.goodput_base:.3g} / (1 + n x {eff.lost_h_per_failure:.3g} h lost per failure / "
        f"{eff.gpu_h_per_failure:.3g} GPU-h between failures)",
        "peak_tflops": g.peak_tflops(workload.precision),
        "precision": workload.precision,
        "flops_convention": FLOPS_CONVENTION[attention],
        "attention_convention": attention,
        "model_flops_per_token": model_tok,
        "seq_len": workload.seq_len,
        "global_batch": batch,
        "global_batch_tokens": batch * workload.seq_len,
        "optimizer": workload.optimizer,
        "gradient_bytes": workload.gradient_bytes,
        "flash_attention": workload.flash_attention,
        "sequence_parallel": workload.sequence_parallel,
        "framework": workload.framework,
        "framework_fp8_ratio": eff.framework_ratio(workload.precision, workload.framework),
        "framework_attention_ratio": attn_stack,
        "fabric": {"inter_node_gbps_per_gpu": inter / eff.inter_node_efficiency * 8 / 1e9,
                   "gpus_per_node": gpn, "nvlink_gbps": g.nvlink_gbps,
                   "nvlink_domain": int(feats.scaleup_domain[0]),
                   "scaleup_link": describe_scaleup(g, int(lay["tp"][i])) if int(lay["tp"][i]) > 1 else None},
        "framework_overhead_gib": float(mem["overhead"][i]) / GIB,
        "params": spec.total_params(),
        "active_params": spec.active_params(),
        "calibration": None if efficiency is not None else calibration_entry(g.id, "training", g.vendor),
    }
    if workload.teacher:
        assumptions["teacher"] = workload.teacher
        assumptions["teacher_forward_flops_per_token"] = workload.teacher_forward_flops_per_token
        assumptions["teacher_params"] = workload.teacher_params
        notes.append(f"distillation from {workload.teacher}: its forward pass "
                     f"({workload.teacher_forward_flops_per_token:.3g} FLOPs/token) is in the FLOPs, time and MFU; "
                     f"its bf16 weights in memory")
    if assumptions["framework_fp8_ratio"] < 1.0:
        notes.append(f"{workload.framework} stack: its FP8 casts run as kernels of their own, so the 8-bit GEMMs keep "
                     f"{assumptions['framework_fp8_ratio']:.0%} of Megatron's efficiency (fitted on torchtitan and "
                     f"LLM Foundry rows)")
    elif workload.precision in ("fp8", "fp4") and efficiency is None:
        notes.append(f"{workload.precision.upper()} timed for a Megatron-class stack (casts fused into Transformer "
                     f"Engine kernels); on torchtitan, FSDP2 or Accelerate the 8-bit GEMMs keep about "
                     f"{eff.framework_ratio(workload.precision, 'pytorch'):.0%} of that: --framework pytorch")
    if attn_stack < 1.0:
        notes.append(f"{workload.framework} stack on {g.id}: attention runs PyTorch SDPA's FlashAttention-2, "
                     f"{attn_stack:.0%} of the speed of the cuDNN / FlashAttention-3 kernels Megatron runs (fitted on "
                     f"torchtitan and LLM Foundry rows); long sequences feel it most")
    elif fa2_gap and workload.seq_len >= LONG_SEQ_NOTE_TOKENS:  # fa2_gap is already off under a given efficiency
        notes.append(f"attention timed for cuDNN fused attention (Megatron / Transformer Engine); a PyTorch stack "
                     f"running FlashAttention-2 on {g.id} keeps about "
                     f"{float(eff.attention_framework_ratio('pytorch')):.0%} of its speed, which a "
                     f"{workload.seq_len:,}-token sequence feels: --framework pytorch")
    if workload.fused_moe:
        assumptions["fused_moe"] = True
        notes.append("graph-captured fused MoE stack (--fused-moe): the whole iteration replays as one CUDA graph and "
                     "each MoE layer's experts run as one fused grouped-MLP kernel, so no per-expert, per-MoE-layer or "
                     "per-layer launch costs are counted (NVIDIA's Megatron-Bridge MXFP8 MoE recipes on Blackwell "
                     "from NeMo 26.06); the exported launch files do not set this up")
    elif shape.is_moe and efficiency is None and fusable:
        notes.append(f"MoE on {g.id} timed as Megatron's eager step runs it, with launches per layer and local expert; "
                     "NVIDIA's MXFP8 MoE recipes from NeMo 26.06 capture the step in one CUDA graph with a fused "
                     "grouped-MLP kernel, which --fused-moe times")
    if shape.is_moe:
        ep_i, pp_i, vp_i = int(lay["ep"][i]), int(lay["pp"][i]), int(lay["vp"][i])
        overlapped = workload.ep_overlap and bool(ep_overlap_runs(pp_i, vp_i))
        assumptions["moe_dispatcher"] = workload.moe_dispatcher
        assumptions["ep_overlap"] = overlapped
        if ep_i > 1 and efficiency is None:
            if workload.ep_overlap and not overlapped:
                notes.append("--ep-overlap not counted: Megatron's combined 1F1B schedule needs PP 1 or an interleaved "
                             "pipeline (--vp > 1)")
            notes.append(f"EP{ep_i} all-to-all timed as "
                         + ("NCCL's (a copy per selected expert; --moe-dispatcher alltoall)"
                            if workload.moe_dispatcher == "alltoall"
                            else "DeepEP / HybridEP run it (a copy per GPU and per remote node; NCCL's, what the "
                                 "exported files launch, is --moe-dispatcher alltoall)")
                         + (", overlapped with another micro-batch (--ep-overlap)" if overlapped else
                            ", on the critical path as Megatron runs it by default; --ep-overlap times the combined "
                            "1F1B overlap"))
    if workload.recompute_layers is not None:
        assumptions["recompute_layers"] = workload.recompute_layers
    if workload.sample_len:
        assumptions["sample_len"] = workload.sample_len
        notes.append(f"packed examples of {workload.sample_len:,} tokens: attention runs within each example "
                     f"(per-example masks), not across the {workload.seq_len:,}-token sequence")
    if workload.method != "full":
        assumptions["lora_rank"] = workload.lora_rank
        assumptions["lora_targets"] = workload.lora_targets
        assumptions["adapter_params"] = shape.adapter_params(workload.lora_rank, workload.lora_targets)
    flops = model_tok * workload.total_tokens
    return TrainingEstimate(
        model=spec.name, gpu=g.id, n_gpus=n, method=workload.method, precision=workload.precision,
        tokens=workload.total_tokens, steps=steps, flops=flops, training_flops=flops,
        hardware_flops=hw_tok * workload.total_tokens,
        gpu_hours=n * wall_s / 3600, wall_hours=wall_s / 3600, wall_days=wall_s / 86400, step_time_s=step,
        tokens_per_s=tok_s, mfu=mfu, hfu=hfu, memory_per_gpu_gb=total_mem / 1e9, gpu_memory_gb=g.memory_gb,
        memory={k: gib(mem[k][i]) for k in MEMORY_PARTS}, fits=fits, memory_shortfall_gb=shortfall,
        layout=layout_of(i), step_breakdown_s={k: float(v[0]) for k, v in parts.items()
                                               if k not in ("eta", "micro_batches", "total")},
        assumptions=assumptions, runners_up=runners[:n_runners_up], rejected=rejected, notes=notes)


def estimate_memory(model, workload: TrainingWorkload, gpu=None, n_gpus: int = 1, *, tp: int = 1, pp: int = 1,
                    cp: int = 1, ep: int = 1, micro_batch: int = 1, recompute="none", zero: int = 0, vp: int = 1,
                    gpus_per_node: int = 8, overhead_gib: float | None = None, etp: int | None = None) -> MemoryEstimate:
    """Memory per GPU for one explicit layout (dp = n_gpus / (tp·pp·cp)); no search, no time."""
    spec = _model(model)
    shape = model_shape(spec)
    g = _gpu(gpu) if gpu is not None else None
    n = _check_count(n_gpus)
    gpn = _check_gpn(gpus_per_node)
    rc = _recompute_code(recompute)
    fixed = LayoutFixed(tp=tp, pp=pp, cp=cp, ep=ep, micro_batch=micro_batch, recompute=rc, zero=zero, vp=vp, etp=etp)
    validate_fixed(shape, workload, fixed, max(gpn, tp if isinstance(tp, int) else 1))
    if n % (tp * pp * cp):
        raise UsageError(f"tp x pp x cp = {tp * pp * cp} does not divide {n} GPUs")
    d = n // (tp * pp * cp)
    et = tp if etp is None else etp
    if shape.is_moe and (tp * d * cp) % (et * ep):
        raise UsageError(f"ep={ep} x etp={et} does not divide tp x dp x cp = {tp * d * cp}" if et == 1 else
                         f"ep={ep} does not divide dp x cp = {d * cp} (with etp=1, the experts folded over TP, "
                         f"it need only divide tp x dp x cp)")
    if overhead_gib is not None and (not math.isfinite(overhead_gib) or not 0 <= overhead_gib <= 1000):
        raise UsageError(f"overhead_gib must be in 0..1000, got {overhead_gib!r}")
    B = workload.batch
    if workload.batch_fixed and B % (d * micro_batch):
        raise UsageError(f"global batch {B} does not divide by dp x micro-batch = {d * micro_batch}")
    batch = B if workload.batch_fixed else -(-B // (d * micro_batch)) * d * micro_batch
    mem = memory_breakdown_bytes(shape, workload, tp, pp, d, cp, ep, micro_batch, rc, zero, vp, global_batch=batch,
                                 overhead_gib=overhead_gib, etp=et)
    total = float(mem["total"])
    shortfall = max(0.0, (total - g.memory_bytes) / 1e9) if g else 0.0
    return MemoryEstimate(
        model=spec.name, gpu=g.id if g else None, method=workload.method,
        layout={"tp": tp, "pp": pp, "dp": d, "cp": cp, "ep": ep, "etp": et, "micro_batch": micro_batch,
                "recompute": RECOMPUTE_NAMES[rc], "zero": zero, "vp": vp, "global_batch": batch},
        memory_per_gpu_gb=total / 1e9, memory_per_gpu_gib=total / GIB,
        memory={k: float(mem[k]) / 1e9 for k in MEMORY_PARTS},
        gpu_memory_gb=g.memory_gb if g else None, fits=(total <= g.memory_bytes) if g else None,
        memory_shortfall_gb=shortfall,
        assumptions={"precision": workload.precision, "optimizer": workload.optimizer,
                     "gradient_bytes": workload.gradient_bytes, "seq_len": workload.seq_len,
                     "flash_attention": workload.flash_attention, "sequence_parallel": workload.sequence_parallel,
                     "framework_overhead_gib": float(mem["overhead"]) / GIB,
                     "params": spec.total_params(), "active_params": spec.active_params()})


def model_shape_of(model) -> ModelShape:
    return model_shape(_model(model))


__all__ = ["TrainingEstimate", "MemoryEstimate", "TrainingGrid", "Layout", "RunnerUp", "estimate_training",
           "estimate_training_grid", "estimate_memory", "default_counts", "training_flops"]
