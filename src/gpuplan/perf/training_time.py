"""Time per training step for arrays of layouts (and GPU types) at once.

step = compute + pipeline bubble + exposed TP / EP / CP / PP communication
       + exposed data-parallel gradient reduce + optimizer update

- compute: hardware FLOPs of one micro-batch on one GPU (stage share, uneven stages pay the
  fullest stage) at the GPU's achieved efficiency (efficiency.py), times m micro-batches;
- bubble (Narayanan 2021): (p-1)/v micro-batch times;
- TP (Megatron, formulas.md §3): per layer and micro-batch 4 collectives (6 with full
  recompute) of b·s·h·2 bytes, ring volume 2(t-1)/t, over NVLink inside a node (PCIe or the
  inter-node fabric otherwise), `tp_exposed` of it on the critical path;
- EP all-to-all: dispatch + combine of b·s·h·2·k·(e-1)/e per MoE layer, backward doubles it;
- CP ring attention: (c-1) K/V block exchanges per layer, mostly overlapped;
- PP: activations b·s·h·2/t each way per micro-batch and stage boundary;
- DP (ZeRO 0-2): one reduce of the stage's gradients per step, 2(n-1)/n·S, hidden behind the
  last micro-batch's backward up to `dp_overlap`; ZeRO-3 gathers weights and reduce-scatters
  gradients for every micro-batch (3(n-1)/n·S each), hidden behind that micro-batch;
- optimizer: Adam touches ~30 bytes per sharded parameter at HBM speed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.catalog.records import Gpu
from gpuplan.perf.efficiency import TrainingEfficiency
from gpuplan.perf.training_flops import (forward_flops_per_token, hardware_flops_per_token,
                                         model_flops_per_token)
from gpuplan.perf.training_memory import OPTIMIZER_BYTES
from gpuplan.perf.training_shape import ModelShape
from gpuplan.perf.workload import TrainingWorkload

# Bytes moved per token per unit of an adapted matrix's (in + out) width: 2-byte activations,
# read and written (x2), in the forward and the two backward products (x3). Physics, not fitted.
LORA_ADAPTER_BYTES_PER_DIM = 12.0
# Bytes per token per unit of a linear layer's (in + out) width for fp8/fp4 dynamic scaling:
# amax read (2) + cast read (2) + low-precision write (1) = 5, once for the input (forward) and once
# for the output gradient (backward). Fused casts (TransformerEngine) move less; this is unfused.
LOWP_CAST_BYTES_PER_DIM = 5.0
INFINIBAND_GBPS = 400.0  # per GPU, NDR rail-optimised (the common H100 cluster)
ETHERNET_GBPS = 100.0
FABRICS = {"infiniband": INFINIBAND_GBPS, "ib": INFINIBAND_GBPS, "ethernet": ETHERNET_GBPS, "eth": ETHERNET_GBPS,
           "roce": INFINIBAND_GBPS}


@dataclass(frozen=True)
class GpuFeatures:
    """Per-GPU-type numbers the time model needs, as arrays (one entry per GPU type, or broadcast)."""

    peak_flops: np.ndarray  # FLOP/s at the compute precision
    peak_tflops: np.ndarray
    mem_bw_tbps: np.ndarray
    memory_bytes: np.ndarray
    scaleup_bytes_s: np.ndarray  # unidirectional bytes/s per GPU inside its NVLink domain
    scaleup_domain: np.ndarray  # GPUs that share that domain (2 for bridged PCIe cards)
    pcie_bytes_s: np.ndarray
    arch_factor: np.ndarray | float = 1.0  # efficiency of the GPU's architecture relative to Hopper


def nvlink_domain(gpu: Gpu, gpus_per_node: int) -> int:
    """How many GPUs talk at NVLink speed: bridged PCIe cards pair up; NVL72 racks span 72."""
    ff = gpu.form_factor.lower()
    if gpu.nvlink_gbps <= 0:
        return 1
    if "nvl72" in ff:
        return max(gpus_per_node, 72)
    if "pcie" in ff or "bridge" in ff:
        return 2 if "4-way" not in ff else 4
    return gpus_per_node


def arch_factors(gpus: list[Gpu]) -> np.ndarray:
    """Training efficiency of each GPU's architecture relative to Hopper (perf/data/vendor-efficiency.json):
    fitted to MLPerf and published MFU where measured, a stated pessimistic prior elsewhere."""
    from gpuplan.perf.vendor_efficiency import applied_factor

    return np.array([applied_factor(g.id, "training", g.vendor).factor for g in gpus], dtype=np.float64)


def gpu_features(gpus: list[Gpu], precision: str, gpus_per_node, eff: TrainingEfficiency) -> GpuFeatures:
    gpn = np.broadcast_to(np.asarray(gpus_per_node, dtype=np.float64), (len(gpus),))
    peak = np.array([g.peak_tflops(precision) for g in gpus], dtype=np.float64)
    return GpuFeatures(
        peak_flops=peak * 1e12, peak_tflops=peak,
        mem_bw_tbps=np.array([g.mem_bw_tbps for g in gpus], dtype=np.float64),
        memory_bytes=np.array([g.memory_bytes for g in gpus], dtype=np.float64),
        scaleup_bytes_s=np.array([g.nvlink_gbps / 2 * 1e9 * eff.scaleup_efficiency if g.nvlink_gbps > 0
                                  else eff.pcie_gbs * 1e9 for g in gpus], dtype=np.float64),
        scaleup_domain=np.array([nvlink_domain(g, int(n)) for g, n in zip(gpus, gpn)], dtype=np.float64),
        pcie_bytes_s=np.full(len(gpus), eff.pcie_gbs * 1e9),
        arch_factor=arch_factors(gpus),
    )


def _link(group, span, feats_scaleup, feats_domain, pcie, inter, gpn, lat_in, lat_out):
    """Bandwidth (bytes/s) and latency (s) of a collective over `group` ranks laid out `span` apart.

    Inside the NVLink domain: NVLink. Inside the node but beyond NVLink: PCIe. Beyond the node:
    the per-GPU inter-node fabric (never faster than PCIe on PCIe-only nodes? it is its own NIC).
    """
    extent = group * span
    in_domain = extent <= feats_domain
    in_node = extent <= gpn
    bw = np.where(in_domain, feats_scaleup, np.where(in_node, pcie, inter))
    bw = np.where(group <= 1, np.inf, bw)
    lat = np.where(in_node, lat_in, lat_out)
    return bw, lat


def step_time_s(shape: ModelShape, wl: TrainingWorkload, feats: GpuFeatures, eff: TrainingEfficiency,
                t, p, d, c, e, b, recompute, zero, v, global_batch, gpus_per_node,
                inter_node_bytes_s, attention: str = "causal", efficiency_override=None) -> dict[str, np.ndarray]:
    """Seconds per optimizer step and its parts. Layout arrays broadcast against GPU-feature arrays."""
    f64 = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    t, p, d, c, e, b, rc, z, v, B = (f64(x) for x in (t, p, d, c, e, b, recompute, zero, v, global_batch))
    gpn = f64(gpus_per_node)
    inter = f64(inter_node_bytes_s)
    s = float(wl.seq_len)
    L, h = shape.n_layers, float(shape.hidden)
    lps = np.ceil(L / p)
    m = B / (d * b)  # micro-batches per step and pipeline

    kw = dict(method=wl.method, attention=attention, lora_rank=wl.lora_rank, lora_targets=wl.lora_targets)
    hw_tok = np.array([hardware_flops_per_token(shape, wl.seq_len, r, flash_attention=wl.flash_attention, **kw)
                       for r in ("none", "selective", "full")])
    if efficiency_override is not None:
        eta = f64(efficiency_override)
    else:
        eta = eff.eta(feats.peak_tflops, feats.mem_bw_tbps, h, wl.precision) * feats.arch_factor
        hw_tok = hw_tok + routed_expert_extra_flops(shape, wl, eff)
    if wl.method != "full":
        # LoRA/QLoRA skip the frozen weights' gradients (fewer GEMM FLOPs), but the memory-bound
        # share of the step runs as in full training: count it at full-training FLOPs.
        kw_full = dict(kw, method="full")
        full_tok = np.array([hardware_flops_per_token(shape, wl.seq_len, r, flash_attention=wl.flash_attention,
                                                      **kw_full) for r in ("none", "selective", "full")])
        phi = eff.memory_bound_share(h)
        hw_tok = (1.0 - phi) * hw_tok + phi * full_tok
    hw = hw_tok[rc.astype(np.int64)]
    if wl.method == "qlora":
        eta = eta / (1.0 + eff.qlora_overhead)
    rate = feats.peak_flops * eta
    tokens_mb = s * b  # tokens in one micro-batch (whole sequence; CP splits it below)
    flops_mb = hw * tokens_mb / (t * c * p) * (lps * p / L)  # fullest stage
    t_mb = flops_mb / rate
    if wl.flash_attention:  # selective recompute of norms/activations: elementwise, memory-bound reruns
        t_mb = t_mb * np.where(rc == 1, 1.0 + eff.selective_overhead, 1.0)
    if wl.method != "full":
        # The adapters' own kernels are memory-bound (rank-r GEMMs): each adapted matrix reads its
        # input and writes its output again, forward and twice backward.
        adapter_dims = shape.attention_io_per_layer + (shape.ffn_io_active_per_layer if wl.lora_targets == "all" else 0.0)
        adapter_bytes = LORA_ADAPTER_BYTES_PER_DIM * adapter_dims * lps * tokens_mb / (t * c)
        t_mb = t_mb + adapter_bytes / (feats.mem_bw_tbps * 1e12 * 0.7)
    if wl.precision in ("fp8", "fp4"):
        # Dynamic scaling casts every GEMM input: read the 16-bit tensor for its amax, read it again
        # and write the low-precision copy, forward (activations) and backward (gradients). Memory-
        # bound, so it weighs most on narrow layers, where 8-bit GEMMs save least.
        cast_bytes = LOWP_CAST_BYTES_PER_DIM * shape.linear_io_dims_per_layer * lps * tokens_mb / (t * c)
        t_mb = t_mb + cast_bytes / (feats.mem_bw_tbps * 1e12 * 0.7)
    compute = m * t_mb
    bubble = np.where(p > 1, (p - 1) / v * t_mb, 0.0)

    lat_in, lat_out = eff.collective_latency_us * 1e-6, eff.inter_node_latency_us * 1e-6
    link = lambda group, span: _link(group, span, feats.scaleup_bytes_s, feats.scaleup_domain,  # noqa: E731
                                     feats.pcie_bytes_s, inter, gpn, lat_in, lat_out)
    # Tensor parallel: ranks adjacent.
    act_bytes = tokens_mb / c * h * 2.0
    bw_tp, lat_tp = link(t, 1.0)
    n_coll = np.where(rc == 2, 6.0, 4.0) * lps
    tp_one = 2.0 * (t - 1) / t * act_bytes / bw_tp + lat_tp
    tp = np.where(t > 1, eff.tp_exposed * m * n_coll * tp_one, 0.0)
    # Context parallel: K/V blocks around a ring of c ranks placed after TP.
    kv_bytes = 2.0 * b * (s / c) * shape.n_kv_heads * shape.qk_head_dim * 2.0
    bw_cp, lat_cp = link(c, t)
    cp = np.where(c > 1, eff.cp_exposed * m * lps * 3.0 * ((c - 1) * kv_bytes / bw_cp + (c - 1) * lat_cp), 0.0)
    # Expert parallel all-to-all: e ranks taken from the data-parallel dimension.
    moe_layers = lps * shape.n_moe_layers / L
    bw_ep, lat_ep = link(e, t * c)
    ep_one = 2.0 * act_bytes * shape.top_k * (e - 1) / e / bw_ep + 2 * lat_ep
    ep = np.where(e > 1, eff.ep_exposed * m * moe_layers * 2.0 * ep_one, 0.0)
    # Pipeline point-to-point, scatter-gather over t.
    bw_pp, lat_pp = link(p, t * c * d)
    bw_pp = np.minimum(bw_pp, np.where(t * c * d >= gpn, inter, bw_pp))
    pp = np.where(p > 1, 2.0 * m * v * (act_bytes / t / bw_pp + lat_pp), 0.0)

    # Data parallel gradients of the fullest stage.
    ne = lps * shape.layer_params_nonexpert / t
    emb = np.where(p > 1, shape.embed_in_params, shape.embed_in_params + shape.embed_out_params) / t
    experts = shape.expert_params_total * (lps / L) / (t * e)
    stage_params = ne + emb + experts
    if wl.method == "full":
        grad_params = stage_params
    else:
        grad_params = shape.adapter_params(wl.lora_rank, wl.lora_targets) * (lps / L) / t + 0.0 * ne
    n_dp = d * c
    g_b = 4.0 if wl.fp32_grads else 2.0
    n_world = t * p * d * c
    bw_dp = np.where(n_world > gpn, inter, np.where(n_world <= feats.scaleup_domain, feats.scaleup_bytes_s,
                                                     feats.pcie_bytes_s))
    lat_dp = np.where(n_world > gpn, lat_out, lat_in)
    ring = np.where(n_dp > 1, (n_dp - 1) / n_dp, 0.0)
    has_dp = np.where(n_dp > 1, 1.0, 0.0)
    reduce_s = 2.0 * ring * grad_params * g_b / bw_dp + 2 * lat_dp * has_dp
    dp_once = np.maximum(0.0, reduce_s - eff.dp_overlap * t_mb * (2.0 / 3.0))
    # ZeRO-3: every micro-batch gathers the weights twice (fwd, bwd) and reduce-scatters the
    # gradients, hidden behind that micro-batch's compute as far as it goes.
    z3_one = (2.0 * ring * stage_params * 2.0 + ring * grad_params * 2.0) / bw_dp + 3 * lat_dp * has_dp
    dp_z3 = m * np.maximum(0.0, z3_one - eff.dp_overlap * t_mb)
    # ZeRO-2 keeps no full gradient buffer: gradients are reduce-scattered after every micro-batch,
    # updated weights all-gathered once per step.
    z2_one = ring * grad_params * g_b / bw_dp + lat_dp * has_dp
    dp_z2 = m * np.maximum(0.0, z2_one - eff.dp_overlap * t_mb * (2.0 / 3.0)) + ring * grad_params * 2.0 / bw_dp
    dp = np.where(z >= 3, dp_z3, np.where(z == 2, dp_z2, dp_once))

    # Optimizer update at HBM speed on the parameters this GPU owns.
    opt_share = np.where(z >= 1, 1.0 / n_dp, 1.0)
    opt_bytes = grad_params * opt_share * eff.optimizer_bytes_per_param * OPTIMIZER_BYTES[wl.optimizer] / 12.0
    optimizer = opt_bytes / (feats.mem_bw_tbps * 1e12 * 0.7)

    total = compute + bubble + tp + cp + ep + pp + dp + optimizer
    return {"total": total, "compute": compute, "bubble": bubble, "tp": tp, "cp": cp, "ep": ep, "pp": pp,
            "dp": dp, "optimizer": optimizer, "eta": eta + 0.0 * total, "micro_batches": m + 0.0 * total}


def routed_expert_extra_flops(shape: ModelShape, wl: TrainingWorkload, eff: TrainingEfficiency) -> np.ndarray:
    """Extra FLOP-equivalents per token (recompute none / selective / full) for routed-expert GEMMs
    narrower than the hidden size.

    The efficiency law eta = eta_max / (1 + h_half / width) is written for a layer of width h. A
    fine-grained MoE expert (DeepSeek-V2/V3, Qwen3-MoE: FFN width 768-2048 under h = 2048-7168)
    multiplies through a matrix only `expert_ffn` wide, so its GEMMs run at eta(expert_ffn): their
    FLOPs count (1 + h_half/f) / (1 + h_half/h) times. No new parameter: dense models and MoE
    experts at least as wide as h (Mixtral, gpt-oss) are unchanged.
    """
    f, h = shape.expert_ffn, float(shape.hidden)
    if shape.routed_active_params <= 0 or not 0 < f < h:
        return np.zeros(3)
    slow = (1.0 + eff.h_half / f) / (1.0 + eff.h_half / h) - 1.0
    passes = np.array([3.0, 3.0, 4.0]) if wl.method == "full" else np.array([2.0, 2.0, 3.0])  # fwd+bwd, +fwd rerun
    return 2.0 * shape.routed_active_params * passes * slow


def flops_per_token(shape: ModelShape, wl: TrainingWorkload, attention: str = "causal") -> tuple[float, float, float]:
    """(model FLOPs/token, forward FLOPs/token, full-recompute hardware FLOPs/token)."""
    kw = dict(method=wl.method, attention=attention, lora_rank=wl.lora_rank, lora_targets=wl.lora_targets)
    return (model_flops_per_token(shape, wl.seq_len, **kw), forward_flops_per_token(shape, wl.seq_len, attention),
            hardware_flops_per_token(shape, wl.seq_len, "full", flash_attention=wl.flash_attention, **kw))


def inter_node_bytes_per_s(fabric: str | float | None, eff: TrainingEfficiency) -> float:
    """'infiniband' | 'ethernet' | Gb/s per GPU -> achieved bytes/s per GPU."""
    from gpuplan.errors import UsageError

    if fabric is None:
        gbps = INFINIBAND_GBPS
    elif isinstance(fabric, (int, float)):
        gbps = float(fabric)
    else:
        key = str(fabric).strip().lower()
        if key in FABRICS:
            gbps = FABRICS[key]
        else:
            try:
                gbps = float(key.removesuffix("gbps").removesuffix("gb/s"))
            except ValueError:
                raise UsageError(f"fabric {fabric!r}: use infiniband, ethernet or Gb/s per GPU (e.g. 200)") from None
    if not np.isfinite(gbps) or gbps <= 0 or gbps > 1e5:
        raise UsageError(f"inter-node bandwidth must be in (0, 1e5] Gb/s per GPU, got {fabric!r}")
    return gbps / 8.0 * 1e9 * eff.inter_node_efficiency
