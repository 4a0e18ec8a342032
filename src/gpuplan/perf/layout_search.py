"""Parallel layout search: every TP x PP x DP x CP x EP x micro-batch x recompute x ZeRO x
interleave combination for a GPU count, as numpy arrays, filtered by the rules a framework
enforces and by memory, ranked by step time per sequence (layouts may round a default batch
differently).

Rules (each failure is counted under its own reason):
- TP stays inside the node (`gpus_per_node`) and divides the attention heads (and KV heads, or
  is a multiple of them); TP is a power of two;
- PP stages <= layers (uneven splits are allowed: the fullest stage sets the pace); interleaved chunks
  (vp) split a stage's layers evenly, unless the user pins vp (then at least one layer per chunk);
- tp·pp·cp divides the GPU count (dp is the quotient); EP divides the experts and dp·cp, or, with the
  experts folded whole over the TP ranks (etp 1, Megatron's MoE parallel folding), tp·dp·cp;
- a user-given global batch must divide by dp·micro-batch; a default batch is rounded up to
  the nearest multiple instead (what practitioners do); with interleaved chunks (vp > 1) the micro-batches
  per step must be a multiple of pp (Megatron runs them in groups of pp), and a default batch rounds to that;
- CP splits the sequence into chunks of at least 4096 tokens (2 per rank for load balance);
- memory per GPU fits the GPU.

Several (GPU type, count) pairs are searched in one call: the layout arrays are built once per
count, memory once per layout, and time once per GPU type on the layouts that fit it.
"""
from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field

import numpy as np

from gpuplan.catalog.records import Gpu
from gpuplan.errors import UsageError
from gpuplan.perf.efficiency import TrainingEfficiency
from gpuplan.perf.training_memory import memory_breakdown_bytes
from gpuplan.perf.training_shape import ModelShape
from gpuplan.perf.training_time import gpu_features, step_time_s
from gpuplan.perf.workload import TrainingWorkload, batch_unit

REASONS = ("tp_exceeds_node", "heads_not_divisible_by_tp", "more_stages_than_layers", "batch_not_divisible",
           "experts_not_divisible", "interleave_microbatches", "zero_without_data_parallel", "memory")
TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
MICRO_BATCH_CHOICES = (1, 2, 4, 8)
# Sweeps over many (GPU type, count) pairs drop micro-batches 2 and 8: in this time model a
# larger micro-batch only trades collective latency against pipeline bubble, so 1 and 4 bracket it.
GRID_MICRO_BATCH_CHOICES = (1, 4)
MIN_CP_CHUNK = 4096
ZERO_CHOICES = (1, 2, 3)  # ZeRO-0 is never better than 1 (same traffic, more memory) unless asked for
VP_CHOICES = (1, 2, 4)
# The layout arguments of step_time_s and memory_breakdown_bytes, in their positional order; etp is a keyword.
STEP_KEYS = ("tp", "pp", "dp", "cp", "ep", "micro_batch", "recompute", "zero", "vp")
LAYOUT_KEYS = (*STEP_KEYS, "etp")
# A layout keeps this share of HBM free on top of the framework overhead: the caching allocator's
# fragmentation and NCCL's buffers (PyTorch runs near 100% end in OOMs; 90-95% is the practical ceiling).
MEMORY_HEADROOM = 0.05
# A default global batch rounded up by at most this share still counts as the recipe's batch when
# layouts are ranked (one eighth: e.g. 1,024 -> 1,152 sequences for dp 72 x micro-batch 4). The
# loss per token is flat near the recipe's batch size, so a small growth is not wasted work; a
# large one (doubling it) changes the recipe. An assumption, not fitted; see _useful_batch.
MAX_BATCH_GROWTH = 0.125
# Layouts within this share of the fastest one's time per sequence count as equally fast, and the one with the fewest
# model-parallel dimensions among them is picked (layout_complexity): 2.5%, the median spread (2.6%) of repeated
# published measurements of one training configuration (validate_training.py's repeat table) rounded down, is a
# difference the estimator cannot resolve, while every pipeline stage, tensor or context split is one more thing to
# configure, balance and debug. An assumption, not fitted.
SIMPLER_LAYOUT_TOLERANCE = 0.025


@dataclass(frozen=True)
class LayoutFixed:
    """Parts of the layout the user pinned; None = searched."""

    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    cp: int | None = None
    ep: int | None = None
    micro_batch: int | None = None
    recompute: int | None = None  # 0 none, 1 selective, 2 full
    zero: int | None = None
    vp: int | None = None
    etp: int | None = None  # routed experts' tensor parallelism: 1 (folded) or tp

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in LAYOUT_KEYS}


def validate_fixed(shape: ModelShape, wl: TrainingWorkload, fixed: LayoutFixed, gpus_per_node: int) -> None:
    """A pinned value that can never work is a usage error, said in one line."""
    for k, v in fixed.as_dict().items():
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise UsageError(f"{k} must be a whole number, got {v!r}")
        lo = 0 if k in ("recompute", "zero") else 1
        if v < lo or v > 1_000_000:
            raise UsageError(f"{k} must be in {lo}..1000000, got {v}")
    if fixed.recompute is not None and fixed.recompute > 2:
        raise UsageError(f"recompute must be 0 (none), 1 (selective) or 2 (full), got {fixed.recompute}")
    if fixed.zero is not None and fixed.zero > 3:
        raise UsageError(f"zero stage must be 0-3, got {fixed.zero}")
    if fixed.tp is not None:
        if fixed.tp > gpus_per_node:
            raise UsageError(f"tp={fixed.tp} exceeds the {gpus_per_node} GPUs of a node; keep TP inside NVLink")
        if shape.n_heads % fixed.tp:
            raise UsageError(f"tp={fixed.tp} does not divide the model's {shape.n_heads} attention heads")
        kv = shape.n_kv_heads
        if kv % fixed.tp and fixed.tp % kv:
            raise UsageError(f"tp={fixed.tp} and the model's {kv} KV heads do not divide one another")
    if fixed.pp is not None and fixed.pp > shape.n_layers:
        raise UsageError(f"pp={fixed.pp} exceeds the model's {shape.n_layers} layers")
    if fixed.cp is not None and (wl.seq_len % fixed.cp):
        raise UsageError(f"cp={fixed.cp} does not divide the sequence length {wl.seq_len}")
    if fixed.ep is not None and fixed.ep > 1:
        if not shape.is_moe:
            raise UsageError(f"ep={fixed.ep} needs a mixture-of-experts model; {shape.name} is dense")
        if shape.n_experts % fixed.ep:
            raise UsageError(f"ep={fixed.ep} does not divide the model's {shape.n_experts} experts")
    if fixed.etp is not None and fixed.etp > 1:
        if not shape.is_moe:
            raise UsageError(f"etp={fixed.etp} needs a mixture-of-experts model; {shape.name} is dense")
        if fixed.tp is not None and fixed.etp != fixed.tp:
            raise UsageError(f"etp={fixed.etp}: the experts' tensor parallelism is 1 (folded) or the tp size ({fixed.tp})")
    if fixed.vp is not None and fixed.vp > 1 and fixed.pp == 1:
        raise UsageError("an interleaved pipeline (vp > 1) needs pp > 1")
    if fixed.micro_batch is not None and wl.global_batch is not None and fixed.micro_batch > wl.global_batch:
        raise UsageError(f"micro_batch={fixed.micro_batch} exceeds the global batch of {wl.global_batch} sequences")


def _divisors(n: int) -> np.ndarray:
    r = np.arange(1, int(np.sqrt(n)) + 1)
    small = r[n % r == 0]
    return np.unique(np.concatenate([small, n // small]))


def enumerate_layouts(shape: ModelShape, wl: TrainingWorkload, counts, gpus_per_node: int,
                      fixed: LayoutFixed = LayoutFixed(), grid_mode: bool = False) -> dict[str, np.ndarray]:
    """All candidate layouts for each count, with a structural rejection code (-1 = valid)."""
    counts = np.atleast_1d(np.asarray(counts, dtype=np.int64))
    tp_opts = [fixed.tp] if fixed.tp else [t for t in TP_CHOICES]
    cp_opts = [fixed.cp] if fixed.cp else [c for c in (1, 2, 4, 8, 16, 32, 64)
                                           if c == 1 or (wl.seq_len % (2 * c) == 0 and wl.seq_len / c >= MIN_CP_CHUNK)]
    # (count index, t, c, p) triples: a loop over counts and the few t, c values, never over layouts.
    rows = []
    for i, n in enumerate(counts):
        for t in tp_opts:
            for c in cp_opts:
                if n % (t * c):
                    continue
                ps = _divisors(int(n // (t * c)))
                if fixed.pp:
                    ps = ps[ps == fixed.pp]
                if fixed.dp:
                    ps = ps[(n // (t * c)) // ps == fixed.dp]
                # Beyond the layer count a stage would be empty: keep one such p as the counted failure.
                over = ps[ps > shape.n_layers]
                ps = np.concatenate([ps[ps <= shape.n_layers], over[:1]])
                if ps.size:
                    rows.append(np.stack([np.full(ps.size, i), np.full(ps.size, t), np.full(ps.size, c), ps], axis=1))
    if not rows:
        return {k: np.zeros(0, dtype=np.int64) for k in ("count_idx", "n", *LAYOUT_KEYS, "reason", "batch")}
    tcp = np.concatenate(rows).astype(np.int64)

    if shape.is_moe:
        e_all = _divisors(shape.n_experts)
        if grid_mode:  # no EP, one node's worth, and the widest power of two up to 64
            pow2 = e_all[(e_all & (e_all - 1)) == 0]
            e_all = np.unique([1, pow2[pow2 <= 8].max(), pow2[pow2 <= 64].max()])
        e_opts = np.array([fixed.ep] if fixed.ep else e_all, dtype=np.int64)
    else:
        e_opts = np.array([1], dtype=np.int64)
    b_opts = np.array([fixed.micro_batch] if fixed.micro_batch else
                      (GRID_MICRO_BATCH_CHOICES if grid_mode else MICRO_BATCH_CHOICES), dtype=np.int64)
    rc_default = (0, 1, 2)
    r_opts = np.array([fixed.recompute] if fixed.recompute is not None else rc_default, dtype=np.int64)
    z_opts = np.array([fixed.zero] if fixed.zero is not None else ZERO_CHOICES, dtype=np.int64)
    v_opts = np.array([fixed.vp] if fixed.vp else VP_CHOICES, dtype=np.int64)
    # Folded experts (1) or split over TP like the dense layers (0); folding only means something with TP > 1.
    f_opts = np.array(([1] if fixed.etp == 1 else [0] if fixed.etp else [0, 1]) if shape.is_moe else [0],
                      dtype=np.int64)

    # Cartesian product of the triples with the small option lists, by index arithmetic.
    sizes = [len(tcp), len(e_opts), len(b_opts), len(r_opts), len(z_opts), len(v_opts), len(f_opts)]
    idx = np.indices(sizes).reshape(len(sizes), -1)
    ci, t, c, p = (tcp[idx[0], k] for k in range(4))
    e, b, r, z, v = e_opts[idx[1]], b_opts[idx[2]], r_opts[idx[3]], z_opts[idx[4]], v_opts[idx[5]]
    f = f_opts[idx[6]]
    n = counts[ci]
    d = n // (t * c * p)
    # Interleaving only with a pipeline, and only when each chunk keeps whole layers: the stage's layers split
    # evenly, or, for a vp the user pinned (Megatron's custom pipeline layouts split 61 layers over 16 chunks), at
    # least one layer per chunk, the fullest chunk setting the pace.
    lps = np.ceil(shape.n_layers / p)
    keep = (v == 1) | ((p > 1) & ((lps % v == 0) | ((lps >= v) if fixed.vp else False)))
    if fixed.etp != 1:
        keep &= (f == 0) | (t > 1)  # with TP 1, folding changes nothing: keep one copy
    if fixed.etp and fixed.etp > 1:
        keep &= t == fixed.etp
    et = np.where(f == 1, 1, t)
    # Without data-parallel ranks to shard over (dp x cp = 1, and no expert-data-parallel copies), ZeRO's stages are
    # one layout: keep ZeRO-1.
    shards = (d * c > 1) | (t * d * c > et * e)
    if fixed.zero is None:
        keep &= (z == 1) | shards
    ci, t, c, p, e, b, r, z, v, n, d, f, et, shards = (
        a[keep] for a in (ci, t, c, p, e, b, r, z, v, n, d, f, et, shards))

    B = wl.batch
    if wl.batch_fixed:
        batch = np.full(n.shape, B, dtype=np.int64)
    else:  # interleaving needs whole groups of pp micro-batches: a default batch rounds to them too
        unit = batch_unit(d, b, p, v)
        batch = -(-B // unit) * unit
    reason = np.full(n.shape, -1, dtype=np.int64)

    def mark(mask, code):
        reason[(reason < 0) & mask] = code

    mark(t > gpus_per_node, 0)
    kv = shape.n_kv_heads
    mark((shape.n_heads % t != 0) | ((kv % t != 0) & (t % kv != 0)), 1)
    mark(p > shape.n_layers, 2)
    mark(batch % (d * b) != 0, 3)
    if not wl.batch_fixed:
        mark(b > np.maximum(B // np.maximum(d, 1), 1) * 2, 3)  # micro-batch far above the per-replica batch
    if shape.is_moe:
        mark((t * d * c) % (et * e) != 0, 4)
    # Megatron's interleaved schedule runs the micro-batches in groups of pp: their count must be a multiple of it.
    mark(batch % batch_unit(d, b, p, v) != 0, 5)
    # ZeRO-2 or -3 asked for by name means sharded gradients (and weights): a layout with no data-parallel ranks to
    # shard them over would only wear the label (8 GPUs in an 8-stage pipeline "at ZeRO-3").
    if fixed.zero is not None and fixed.zero >= 2:
        mark(~shards, 6)
    return {"count_idx": ci, "n": n, "tp": t, "pp": p, "dp": d, "cp": c, "ep": e, "micro_batch": b,
            "recompute": r, "zero": z, "vp": v, "etp": et, "reason": reason, "batch": batch}


@dataclass
class SearchResult:
    """Per (GPU type, count): the best layout's arrays; plus, for single searches, runners-up."""

    step_time_s: np.ndarray  # (G, K) inf where nothing fits
    fits: np.ndarray
    best_index: np.ndarray  # index into `layouts` (-1 where nothing fits)
    min_memory_bytes: np.ndarray  # smallest memory of any structurally valid layout, (K,)
    min_memory_index: np.ndarray
    layouts: dict[str, np.ndarray]
    memory: dict[str, np.ndarray]
    rejected: list[list[dict[str, int]]] = field(default_factory=list)  # per GPU per count
    ranked: list[list[np.ndarray]] = field(default_factory=list)  # per GPU per count: valid indices by time
    parts: dict[str, np.ndarray] | None = None  # step-time parts for the last GPU evaluated (single search)


def search_layouts(shape: ModelShape, wl: TrainingWorkload, gpus: list[Gpu], counts, gpus_per_node: int,
                   inter_node_bytes_s, eff: TrainingEfficiency, fixed: LayoutFixed = LayoutFixed(),
                   attention: str = "causal", efficiency_override: float | None = None,
                   keep_ranked: int = 0, overhead_gib: float | None = None, grid_mode: bool = False) -> SearchResult:
    """Best layout for every (GPU type, count). `keep_ranked` > 0 keeps that many runners-up."""
    counts = np.atleast_1d(np.asarray(counts, dtype=np.int64))
    K, G = len(counts), len(gpus)
    lay, mem = _layouts_and_memory(shape, wl, counts, gpus_per_node, fixed, grid_mode, bool(keep_ranked), overhead_gib)
    valid = lay["reason"] < 0
    total_mem = mem["total"]
    feats = gpu_features(gpus, wl.precision, gpus_per_node, eff)
    inter = np.broadcast_to(np.asarray(inter_node_bytes_s, dtype=np.float64), (G,))

    ci = lay["count_idx"]
    # Smallest memory of a structurally valid layout per count (for "short by X GB").
    min_mem = np.full(K, np.inf)
    min_mem_idx = np.full(K, -1, dtype=np.int64)
    if valid.any():
        vi = np.nonzero(valid)[0]
        order = vi[np.lexsort((total_mem[vi], ci[vi]))]
        first = np.unique(ci[order], return_index=True)
        min_mem[first[0]] = total_mem[order[first[1]]]
        min_mem_idx[first[0]] = order[first[1]]

    complexity = layout_complexity(lay)
    best_t = np.full((G, K), np.inf)
    best_i = np.full((G, K), -1, dtype=np.int64)
    rejected, ranked = [], []
    parts = None
    for g in range(G):  # a few dozen GPU types at most; each evaluates its fitting layouts at once
        fit = valid & (total_mem <= feats.memory_bytes[g] * (1.0 - MEMORY_HEADROOM))
        idx = np.nonzero(fit)[0]
        if idx.size:
            sub = {k: lay[k][idx] for k in LAYOUT_KEYS}
            one = _select(feats, g)
            res = step_time_s(shape, wl, one, eff, *(sub[k] for k in STEP_KEYS), lay["batch"][idx],
                              gpus_per_node, inter[g], attention=attention, efficiency_override=efficiency_override,
                              etp=sub["etp"])
            tt = np.broadcast_to(res["total"], idx.shape)
            score = tt / _useful_batch(lay["batch"][idx], wl)
            groups, garg = _preferred_per_group(ci[idx], score, complexity[idx])
            best_t[g, groups] = tt[garg]
            best_i[g, groups] = idx[garg]
            if keep_ranked:
                parts = {k: np.full(len(total_mem), np.nan) for k in res}
                for k, a in res.items():
                    parts[k][idx] = np.broadcast_to(a, idx.shape)
        if keep_ranked:
            per_count_rej, per_count_rank = [], []
            for k in range(K):
                in_k = ci == k
                rej = {name: int(np.sum(in_k & (lay["reason"] == code))) for code, name in enumerate(REASONS[:-1])}
                rej["memory"] = int(np.sum(in_k & valid & (total_mem > feats.memory_bytes[g] * (1.0 - MEMORY_HEADROOM))))
                per_count_rej.append(rej)
                if idx.size:
                    sel = idx[ci[idx] == k]
                    tt_k = parts["total"][sel] / _useful_batch(lay["batch"][sel], wl)  # as the best above
                    rank = preference_order(np.zeros(sel.size, dtype=np.int64), tt_k, complexity[sel])
                    per_count_rank.append(sel[rank][:keep_ranked])
                else:
                    per_count_rank.append(np.zeros(0, dtype=np.int64))
            rejected.append(per_count_rej)
            ranked.append(per_count_rank)
    return SearchResult(step_time_s=best_t, fits=np.isfinite(best_t), best_index=best_i, min_memory_bytes=min_mem,
                        min_memory_index=min_mem_idx, layouts=lay, memory=mem, rejected=rejected, ranked=ranked,
                        parts=parts)


# Layouts and their memory depend on the model, workload, counts and node size only, not on the
# GPU type or the network: the planner's groups (one per network speed) share them.
_LAYOUT_CACHE: "collections.OrderedDict[tuple, tuple]" = collections.OrderedDict()
_LAYOUT_CACHE_SIZE = 64
_LAYOUT_CACHE_LOCK = threading.Lock()
_LAYOUT_IN_FLIGHT: dict[tuple, threading.Lock] = {}  # key -> the lock of the search filling it


def _layouts_and_memory(shape, wl, counts, gpus_per_node, fixed, grid_mode, keep_invalid, overhead_gib):
    key = (repr(shape), wl.model_dump_json(exclude={"tokens", "epochs", "dataset_tokens"}), wl.batch,
           tuple(counts.tolist()), gpus_per_node, repr(fixed), grid_mode, keep_invalid, overhead_gib)
    with _LAYOUT_CACHE_LOCK:
        hit = _LAYOUT_CACHE.get(key)
        if hit is not None:
            _LAYOUT_CACHE.move_to_end(key)
            return hit
        gate = _LAYOUT_IN_FLIGHT.setdefault(key, threading.Lock())
    # Single flight: concurrent requests for one key wait for the first to fill the cache.
    with gate:
        try:
            with _LAYOUT_CACHE_LOCK:
                hit = _LAYOUT_CACHE.get(key)
            if hit is not None:
                return hit
            return _layouts_and_memory_uncached(key, shape, wl, counts, gpus_per_node, fixed, grid_mode,
                                                keep_invalid, overhead_gib)
        finally:
            with _LAYOUT_CACHE_LOCK:
                if _LAYOUT_IN_FLIGHT.get(key) is gate:
                    del _LAYOUT_IN_FLIGHT[key]


def _layouts_and_memory_uncached(key, shape, wl, counts, gpus_per_node, fixed, grid_mode, keep_invalid, overhead_gib):
    lay = enumerate_layouts(shape, wl, counts, gpus_per_node, fixed, grid_mode=grid_mode)
    if not keep_invalid:  # sweeps: structurally invalid layouts need neither memory nor time
        keep = lay["reason"] < 0
        lay = {k: a[keep] for k, a in lay.items()}
    mem = memory_breakdown_bytes(shape, wl, *(lay[k] for k in STEP_KEYS), global_batch=lay["batch"],
                                 overhead_gib=overhead_gib, etp=lay["etp"])
    with _LAYOUT_CACHE_LOCK:
        _LAYOUT_CACHE[key] = (lay, mem)
        while len(_LAYOUT_CACHE) > _LAYOUT_CACHE_SIZE:
            _LAYOUT_CACHE.popitem(last=False)
    return lay, mem


def _useful_batch(batch: np.ndarray, wl: TrainingWorkload) -> np.ndarray:
    """Sequences per step that count when layouts are ranked (time per useful sequence).

    A default batch is rounded up to each layout's dp x micro-batch, so layouts differ in batch:
    ranking by step time favoured whichever rounded up least (an 8B model on a 72-GPU NVL72 rack
    took PP8 x DP9 at 1,044 sequences over pure DP72 at 1,152), ranking by time per sequence would
    favour doubling the batch to amortise communication. Growth up to MAX_BATCH_GROWTH counts as
    useful work; beyond it the extra sequences count as waste."""
    return np.minimum(batch, wl.batch * (1.0 + MAX_BATCH_GROWTH))


def layout_complexity(lay: dict) -> np.ndarray:
    """Model-parallel dimensions a layout adds to plain data parallelism, each one more thing to configure, balance and
    debug: a pipeline counts twice (stage balance, schedule, bubble), interleaving, tensor, context and expert
    parallelism once each. ZeRO stage, recompute and micro-batch are flags, not counted."""
    return (2 * (lay["pp"] > 1) + (lay["vp"] > 1) + (lay["tp"] > 1) + (lay["cp"] > 1)
            + (lay["ep"] > 1)).astype(np.int64)


def _preference_rank(keys: np.ndarray, score: np.ndarray, complexity: np.ndarray) -> np.ndarray:
    """Per layout, within its run of equal (sorted) keys: complexity plus the relative excess over the group's best
    score (< SIMPLER_LAYOUT_TOLERANCE < 1, so it only orders equally complex layouts) for the layouts within the
    tolerance, inf for the rest. The smallest rank of a group is its pick."""
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    gmin = np.repeat(np.minimum.reduceat(score, starts), np.diff(np.r_[starts, keys.size]))
    excess = score / gmin - 1.0
    return np.where(excess <= SIMPLER_LAYOUT_TOLERANCE, complexity + excess, np.inf)


def preference_order(keys: np.ndarray, score: np.ndarray, complexity: np.ndarray) -> np.ndarray:
    """Positions sorted by group key (sorted keys), then by preference within a group: the layouts within
    SIMPLER_LAYOUT_TOLERANCE of the group's best score first, simplest first and faster among equals; then the rest,
    fastest first. The first of each group is the layout picked."""
    score = np.asarray(score, dtype=np.float64)
    if not score.size:
        return np.zeros(0, dtype=np.int64)
    return np.lexsort((score, _preference_rank(keys, score, complexity), keys))


def _preferred_per_group(keys: np.ndarray, score: np.ndarray, complexity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group keys, position of each group's pick): the first of preference_order per run of equal (sorted) keys, in
    linear time for the planner's sweeps."""
    rank = _preference_rank(keys, score, complexity)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    rmin = np.repeat(np.minimum.reduceat(rank, starts), np.diff(np.r_[starts, keys.size]))
    pos = np.flatnonzero(rank == rmin)
    grp = np.searchsorted(starts, pos, side="right") - 1
    _, first = np.unique(grp, return_index=True)
    return keys[starts], pos[first]


def _select(feats, g):
    from gpuplan.perf.training_time import GpuFeatures

    return GpuFeatures(**{k: getattr(feats, k)[g] for k in feats.__dataclass_fields__})
