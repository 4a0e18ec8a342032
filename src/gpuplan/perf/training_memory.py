"""Memory per GPU during training, for arrays of layouts at once.

Model states follow the ZeRO / Megatron accounting (formulas.md §2.1): bf16 weights (2 B),
gradients (2 B, or 4 B with fp32 accumulation buffers), Adam fp32 master + m + v (12 B),
sharded over the data-parallel ranks by ZeRO stage (1 = distributed optimizer: optimizer states;
2: + gradients; 3: + weights). Experts are split over the expert-parallel ranks (and the TP ranks,
unless folded whole over them: etp 1) and sharded over the expert-data-parallel ranks (t·d·c/(etp·e)).

Activations follow Korthikanti et al. 2022 (formulas.md §2.2) in the SwiGLU-general form
`s·b·h·(18 + 4F/h)/t` per layer with sequence parallelism, divided by context parallelism;
FlashAttention (default) removes the `5·a·s/h` score term; with it, selective recompute
rebuilds the norms and the FFN activation instead (`6/t + (8 + 2F/h)/t`). Pipeline 1F1B: the first stage holds
min(p, m) micro-batches of its layers (about L layers' worth), times `1 + (p-1)/(p·v)` when
interleaved. The last stage holds the fp32 logits. The larger of the two stages is reported.
"""
from __future__ import annotations

import numpy as np

from gpuplan.perf.training_shape import ModelShape
from gpuplan.perf.workload import TrainingWorkload
from gpuplan.units import GIB
# CUDA context + cuBLAS/cuDNN workspaces + allocator fragmentation (single GPU), plus NCCL
# communicator buffers when there is more than one GPU. The cookbook sees ~5 GiB it cannot
# attribute in Megatron-DeepSpeed; gpu_poor uses 0.65 GiB of context on consumer cards.
OVERHEAD_SINGLE_GPU_GIB = 1.5
OVERHEAD_MULTI_GPU_GIB = 3.0
OPTIMIZER_BYTES = {"adam": 12.0, "adam8bit": 6.0, "sgd": 8.0}
# QLoRA: NF4 weights (0.5 B) + double-quantized block constants (~0.127 bit/param) for the
# transformer layers; embeddings and output layer stay bf16.
QLORA_BYTES_PER_PARAM = 0.52
LOGITS_BYTES = 4.0  # fp32 logits per vocab entry per token (formulas.md §2.2)

MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "logits", "teacher", "overhead")


def recompute_fraction(wl: TrainingWorkload, layers_per_stage) -> np.ndarray:
    """Share of a stage's layers that full recompute reruns: all, or `recompute_layers` of them."""
    lps = np.asarray(layers_per_stage, dtype=np.float64)
    if wl.recompute_layers is None:
        return np.ones_like(lps)
    return np.minimum(float(wl.recompute_layers), lps) / np.maximum(lps, 1.0)


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def memory_breakdown_bytes(shape: ModelShape, wl: TrainingWorkload, t, p, d, c, e, b, recompute, zero, v,
                           global_batch=None, overhead_gib: float | None = None, etp=None) -> dict[str, np.ndarray]:
    """Bytes per GPU of the worse pipeline stage, by part, plus 'total'. Layout args are arrays.

    recompute: 0 none, 1 selective, 2 full. zero: 0-3. v: interleaved chunks per GPU (1 = plain 1F1B).
    etp: the routed experts' tensor-parallel size, t (None) or 1 (folded: each expert whole on its EP rank).
    """
    t, p, d, c, e, b, rc, z, v = (_arr(x) for x in (t, p, d, c, e, b, recompute, zero, v))
    et = t if etp is None else np.minimum(_arr(etp), t)
    B = _arr(wl.batch if global_batch is None else global_batch)
    L = shape.n_layers
    h = float(shape.hidden)
    s_local = wl.seq_len / c
    lps = np.ceil(L / p)  # layers on the fullest stage
    stage_frac = lps / L
    multi_stage = p > 1

    # ---- model states -------------------------------------------------------------------
    layer_ne = lps * shape.layer_params_nonexpert
    emb_first = shape.embed_in_params + np.where(multi_stage, 0.0, shape.embed_out_params)
    emb_last = np.where(multi_stage, shape.embed_out_params if not shape.tied else shape.embed_in_params,
                        shape.embed_in_params + shape.embed_out_params)
    experts = shape.expert_params_total * stage_frac / (et * e)
    dp_shard = d * c
    ep_shard = np.maximum(t * dp_shard / (et * e), 1.0)  # expert-data-parallel copies of each expert shard
    g_b = float(wl.gradient_bytes)
    o_b = OPTIMIZER_BYTES[wl.optimizer]

    def states(emb):
        ne = (layer_ne + emb) / t
        if wl.method == "full":
            w = 2.0 * (ne / np.where(z >= 3, dp_shard, 1.0) + experts / np.where(z >= 3, ep_shard, 1.0))
            g = g_b * (ne / np.where(z >= 2, dp_shard, 1.0) + experts / np.where(z >= 2, ep_shard, 1.0))
            o = o_b * (ne / np.where(z >= 1, dp_shard, 1.0) + experts / np.where(z >= 1, ep_shard, 1.0))
            return w, g, o
        layer_b = QLORA_BYTES_PER_PARAM if wl.method == "qlora" else 2.0
        base = (layer_b * (layer_ne / t + experts) + 2.0 * emb / t) / np.where(z >= 3, dp_shard, 1.0)
        adapters = shape.adapter_params(wl.lora_rank, wl.lora_targets) * stage_frac / t
        w = base + 2.0 * adapters
        g = g_b * adapters / np.where(z >= 2, dp_shard, 1.0)
        o = o_b * adapters / np.where(z >= 1, dp_shard, 1.0)
        return w, g, o

    w1, g1, o1 = states(emb_first)
    w2, g2, o2 = states(emb_last)

    # ---- activations ------------------------------------------------------------------------
    sbh = s_local * b * h
    t_sp = t if wl.sequence_parallel else np.ones_like(t)
    parallel = (8.0 + 4.0 * shape.ffn_act / h) / t
    per_layer_stored = sbh * (10.0 / t_sp + parallel)
    if not wl.flash_attention:
        scores = sbh * 5.0 * shape.n_heads * s_local / (h * t)
        per_layer_stored = per_layer_stored + np.where(rc == 0, scores, 0.0)
    else:
        # FlashAttention already recomputes the scores, so "selective" here means Megatron-core's
        # module recompute of the norms and the FFN activation: their outputs (4 of the 10
        # non-parallel bytes, 2F/h of the 4F/h) are rebuilt instead of stored.
        selective = sbh * (6.0 / t_sp + (8.0 + 2.0 * shape.ffn_act / h) / t)
        per_layer_stored = np.where(rc == 1, selective, per_layer_stored)
    full_rc = rc == 2
    frac = recompute_fraction(wl, lps)  # partial recompute: the other layers store their activations
    per_layer = np.where(full_rc, frac * 2.0 * sbh / t_sp + (1.0 - frac) * per_layer_stored, per_layer_stored)
    working = np.where(full_rc, per_layer_stored, 0.0)  # one layer rebuilt during its backward
    m = np.maximum(np.floor(B / (d * b)), 1.0)
    in_flight = np.minimum(p, m)
    interleave = np.where((v > 1) & multi_stage, 1.0 + (p - 1) / (p * v), 1.0)
    act_first = per_layer * lps * in_flight * interleave + working
    act_last = per_layer * lps + working
    logits = LOGITS_BYTES * s_local * b * shape.vocab / t
    logits_first = np.where(multi_stage, 0.0, logits)

    n_gpus = t * p * d * c
    if overhead_gib is None:
        ovh = np.where(n_gpus > 1, OVERHEAD_MULTI_GPU_GIB, OVERHEAD_SINGLE_GPU_GIB) * GIB
    else:
        ovh = np.full_like(n_gpus, overhead_gib * GIB)

    # Distillation: the frozen teacher's bf16 weights, split like the student's (TP x PP; ZeRO-3
    # also over data-parallel ranks), and its fp32 logits next to the student's on the last stage.
    teacher = 2.0 * wl.teacher_params / (t * p * np.where(z >= 3, dp_shard, 1.0))
    teacher_logits = LOGITS_BYTES * s_local * b * wl.teacher_vocab / t
    teacher_first = teacher + np.where(multi_stage, 0.0, teacher_logits)
    teacher_last = teacher + teacher_logits

    first = w1 + g1 + o1 + act_first + logits_first + teacher_first + ovh
    last = w2 + g2 + o2 + act_last + logits + teacher_last + ovh
    use_first = first >= last
    pick = lambda a, b_: np.where(use_first, a, b_)  # noqa: E731
    return {
        "weights": pick(w1, w2), "gradients": pick(g1, g2), "optimizer": pick(o1, o2),
        "activations": pick(act_first, act_last), "logits": pick(logits_first, logits),
        "teacher": pick(teacher_first, teacher_last) + 0.0 * first,
        "overhead": ovh + 0.0 * first, "total": np.maximum(first, last),
    }
