"""Time per training step for arrays of layouts (and GPU types) at once.

step = compute + pipeline bubble + exposed TP / EP / CP / PP communication
       + exposed data-parallel gradient reduce + optimizer update

- compute: hardware FLOPs of one micro-batch on one GPU (stage share, uneven stages pay the
  fullest stage) at the GPU's achieved efficiency (efficiency.py), times m micro-batches, split
  into dense GEMMs (slowed 1 + m_half/M for M token rows per micro-batch), routed-expert GEMMs (1 + moe_m_half/M)
  (M = tokens per expert: b·s/c·k·e/E, so expert parallelism feeds each expert more rows, 1/t of that with
  experts folded whole over the TP ranks (etp 1, which also drops the MoE block's TP collectives); times
  the load imbalance of the busiest rank) and the attention core (always the causal work the
  kernels do, at `attn_ratio` of the wide-layer GEMM efficiency whatever the hidden size, slower for heads narrower
  than 128 (`attn_dhalf`), at the bf16 peak even in FP8 runs, and on Hopper / Blackwell at `pytorch_attn_ratio` of
  that in a PyTorch-native stack);
  plus fixed costs per layer (and per MoE layer, none on NVL72 racks, and per local expert) and
  micro-batch (none of them for a MoE model on a graph-captured fused stack, `fused_moe`, on Blackwell),
  memory-bound extras (LoRA adapters, QLoRA dequantisation per micro-batch, FP8 casts, MoE permutation and
  router; a hybrid's chunked linear-attention scans at `linear_scan_bw_share` of the HBM bandwidth), and a
  distillation teacher's forward pass;
- bubble (Narayanan 2021): (p-1)/v micro-batch times (p-1 times the fullest chunk's share when v does not
  divide a stage's layers);
- TP (Megatron, formulas.md §3): per layer and micro-batch 4 collectives (6 with full
  recompute) of b·s·h·2 bytes, ring volume 2(t-1)/t, over NVLink inside a node (PCIe or the
  inter-node fabric otherwise), `tp_exposed` of it on the critical path;
- EP all-to-all: dispatch + combine per MoE layer, backward doubles it: b·s·h·2 bytes per selected expert with NCCL's
  all-to-all, per destination GPU and per remote NVLink domain with DeepEP / HybridEP (`moe_dispatcher`); peers in the
  node over NVLink, the rest over the NIC (the slower share sets the time); on the critical path, or,
  overlapped with another micro-batch's compute (`ep_overlap`), only what exceeds one micro-batch's
  compute is exposed, and never less than `ep_exposed` of it;
- CP ring attention: (c-1) K/V block exchanges per layer, each hidden behind attention on one
  block except for `cp_exposed` of it;
- PP: activations b·s·h·2/t each way per micro-batch and stage boundary; with virtual stages
  (interleaved schedule) overlapped with compute except the warm-up / cool-down chain;
- DP (ZeRO 0-2): one reduce of the stage's gradients per step, 2(n-1)/n·S, hidden behind the
  last micro-batch's backward up to `dp_overlap`; ZeRO-3 gathers weights and reduce-scatters
  gradients for every micro-batch (3(n-1)/n·S each), hidden behind that micro-batch; never less
  than `dp_exposed` of either on the critical path;
- optimizer: Adam touches ~30 bytes per sharded parameter at HBM speed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.catalog.records import Gpu
from gpuplan.perf.efficiency import TrainingEfficiency
from gpuplan.perf.scaleup import box_share, mesh
from gpuplan.perf.training_flops import (forward_flops_per_token, hardware_flops_per_token,
                                         model_flops_per_token)
from gpuplan.perf.training_memory import OPTIMIZER_BYTES, recompute_fraction
from gpuplan.perf.training_shape import ModelShape
from gpuplan.perf.workload import TrainingWorkload

# Bytes moved per token per unit of an adapted matrix's (in + out) width: 2-byte activations,
# read and written (x2), in the forward and the two backward products (x3). Physics, not fitted.
LORA_ADAPTER_BYTES_PER_DIM = 12.0
# QLoRA dequantisation per base weight and GEMM: read NF4 (0.5 B) + write bf16 (2 B) + the GEMM
# reads the bf16 copy (2 B). Physics, not fitted.
QLORA_DEQUANT_BYTES_PER_PARAM = 4.5
# MoE permutation: gather each token's k copies into expert order (read + write 2 B) and scatter
# them back with the gate-weighted sum (read + write 2 B), forward; backward twice that.
MOE_PERMUTE_BYTES_PER_DIM = 24.0
# Router logits, softmax and top-k in fp32 (read + write, forward and backward) per expert.
MOE_ROUTER_BYTES_PER_EXPERT = 24.0
# Bytes per token per unit of a linear layer's (in + out) width for fp8/fp4 casts, once for the input
# (forward) and once for the output gradient (backward). TransformerEngine fuses the cast into the kernel
# that produces the tensor (LayerNorm, activation, cast_transpose), so what remains is writing the 8-bit
# copy (1) and its transpose for the weight gradient (1), plus the scale/amax pass of current or block
# scaling amortised (0.5). An unfused cast would move 5 (amax read 2 + cast read 2 + write 1).
LOWP_CAST_BYTES_PER_DIM = 2.5
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
    bf16_ratio: np.ndarray | float = 1.0  # bf16 peak / peak at the compute precision (attention stays bf16)
    blackwell: np.ndarray | float = 0.0  # 1 on Blackwell: attention runs at `attn_blackwell` x Hopper's share
    # 1 on data-centre Hopper and Blackwell: the fastest attention kernels (cuDNN, FlashAttention-3/4) use instructions
    # FlashAttention-2, PyTorch SDPA's flash backend, lacks; a PyTorch-native stack keeps `pytorch_attn_ratio` of them
    fa2_gap: np.ndarray | float = 0.0
    # Point-to-point scale-up meshes (MI300X, Gaudi; perf/scaleup.py): bytes/s per direction of the one link to each
    # peer. A collective over g GPUs of the node moves over g - 1 of them, a point-to-point transfer over one.
    # inf on switched (NVSwitch) GPUs: any group gets scaleup_bytes_s.
    scaleup_peer_bytes_s: np.ndarray | float = np.inf


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


# A ring collective that crosses nodes pays about this per step: NCCL's tuning model charges
# max(intra-node latency, 3 x the ~1 us network post overhead) per Simple-protocol ring step
# (src/graph/tuning.cc, "inter-node rings still have to launch nsteps * net overhead").
RING_STEP_NET_US = 3.0

# NVLink domains larger than an 8-GPU node are rack-scale (GB200 / GB300 NVL72). NVIDIA's MoE playbook for them
# uses the HybridEP dispatcher and CUDA graphs over the router and MoE preprocessing, which removes the per-layer
# host sync and launch gaps; its H100 / B200 playbooks do not (Megatron-Bridge "MoE Hardware Configuration
# Reference" and "MoE Dispatcher Selection Guide", docs.nvidia.com/nemo/megatron-bridge, 2026).
RACK_SCALE_MIN_GPUS = 8

ETA_CEILING = 0.9  # the largest share of the dense peak a step's GEMMs reach (tuned cuBLAS at best ~0.8-0.9)


def arch_factors(gpus: list[Gpu]) -> np.ndarray:
    """Training efficiency of each GPU's architecture relative to Hopper (perf/data/vendor-efficiency.json):
    fitted to MLPerf and published MFU where measured, a stated pessimistic prior elsewhere."""
    from gpuplan.perf.vendor_efficiency import applied_factor

    return np.array([applied_factor(g.id, "training", g.vendor).factor for g in gpus], dtype=np.float64)


def blackwell_flags(gpus: list[Gpu]) -> np.ndarray:
    """1 for Blackwell GPUs (the RTX cards included), 0 elsewhere: their attention kernels' speed is the fitted
    `attn_blackwell`, applied when the step time is computed (not here), so that refits of it take effect on
    prepared features."""
    from gpuplan.perf.vendor_efficiency import BLACKWELL_CLASSES, arch_of

    return np.array([1.0 if arch_of(g.id, g.vendor) in BLACKWELL_CLASSES else 0.0 for g in gpus], dtype=np.float64)


def fa2_gap_flags(gpus: list[Gpu]) -> np.ndarray:
    """1 for NVIDIA's data-centre Hopper and Blackwell GPUs (sm90, sm100), where FlashAttention-2 leaves the attention
    kernels' speed behind. The RTX Blackwell cards (sm120) keep Ampere's tensor-core instructions, and there cuDNN's
    attention is no faster than FlashAttention-2 (0.88x on an RTX PRO 6000, huggingface/transformers#48163)."""
    from gpuplan.perf.vendor_efficiency import arch_of

    return np.array([1.0 if g.vendor.upper() == "NVIDIA" and arch_of(g.id, g.vendor) in ("Hopper", "Blackwell")
                     else 0.0 for g in gpus], dtype=np.float64)


def fused_moe_flags(gpus: list[Gpu]) -> np.ndarray:
    """1 where the graph-captured fused MoE stack runs (`TrainingWorkload.fused_moe`): its fused grouped-MLP kernel is
    sm100, so data-centre Blackwell only (Blackwell and not an sm120 RTX card); step_time_s reads the same from its
    features (blackwell x fa2_gap)."""
    return blackwell_flags(gpus) * fa2_gap_flags(gpus)


def gpu_features(gpus: list[Gpu], precision: str, gpus_per_node, eff: TrainingEfficiency) -> GpuFeatures:
    gpn = np.broadcast_to(np.asarray(gpus_per_node, dtype=np.float64), (len(gpus),))
    peak = np.array([g.peak_tflops(precision) for g in gpus], dtype=np.float64)
    return GpuFeatures(
        peak_flops=peak * 1e12, peak_tflops=peak,
        mem_bw_tbps=np.array([g.mem_bw_tbps for g in gpus], dtype=np.float64),
        memory_bytes=np.array([g.memory_bytes for g in gpus], dtype=np.float64),
        scaleup_bytes_s=np.array([g.nvlink_gbps / 2 * 1e9 * eff.scaleup_efficiency * box_share(g)
                                  if g.nvlink_gbps > 0 else eff.pcie_gbs * 1e9 for g in gpus], dtype=np.float64),
        scaleup_domain=np.array([nvlink_domain(g, int(n)) for g, n in zip(gpus, gpn)], dtype=np.float64),
        pcie_bytes_s=np.full(len(gpus), eff.pcie_gbs * 1e9),
        arch_factor=arch_factors(gpus),
        bf16_ratio=np.array([g.peak_tflops("bf16") if g.bf16_tflops > 0 else g.peak_tflops(precision)
                             for g in gpus], dtype=np.float64) / np.maximum(peak, 1e-9),
        blackwell=blackwell_flags(gpus),
        fa2_gap=fa2_gap_flags(gpus),
        scaleup_peer_bytes_s=np.array([m.peer_bytes_s * eff.scaleup_efficiency
                                       if (m := mesh(g.id)) and g.nvlink_gbps > 0 else np.inf for g in gpus],
                                      dtype=np.float64),
    )


def _link(group, span, feats_scaleup, feats_domain, pcie, inter, gpn, lat_in, lat_out, peer=np.inf, p2p=False):
    """Bandwidth (bytes/s) and latency (s) of a collective over `group` ranks laid out `span` apart.

    Inside the NVLink domain: NVLink; on a point-to-point mesh only the links among the group's GPUs (group - 1
    of them, one for a point-to-point transfer, `p2p`). Inside the node but beyond NVLink: PCIe. Beyond the node:
    the per-GPU inter-node fabric (never faster than PCIe on PCIe-only nodes? it is its own NIC).
    """
    extent = group * span
    in_domain = extent <= feats_domain
    in_node = extent <= gpn
    links = 1.0 if p2p else np.maximum(group - 1.0, 1.0)
    bw = np.where(in_domain, np.minimum(feats_scaleup, peer * links), np.where(in_node, pcie, inter))
    bw = np.where(group <= 1, np.inf, bw)
    lat = np.where(in_node | in_domain, lat_in, lat_out)  # an NVL72 rack is one NVLink hop across its trays
    return bw, lat


def ep_overlap_runs(pp, vp):
    """Where Megatron can run the combined 1F1B schedule (`TrainingWorkload.ep_overlap`): without pipelining or with an
    interleaved (virtual) one. Arrays broadcast."""
    return (np.asarray(pp) <= 1) | (np.asarray(vp) > 1)


def _a2a_one_way_s(token_bytes, k: int, e, e_local, nvl, inter, flex: bool):
    """Seconds for one dispatch (or combine) of a rank's tokens (`token_bytes` of hidden states) over e expert-parallel
    ranks, e_local of them (this one included) inside its NVLink domain, experts spread evenly, routing uniform (k of
    them per token). NVLink and the network run at once: the slower share sets the time.

    alltoall (NCCL): a token travels once per selected expert on another rank: k·(e_local-1)/e copies over NVLink,
    k·(e-e_local)/e over the network. flex (DeepEP / HybridEP): once per distinct destination GPU, and across domains
    once per distinct remote domain (forwarded over NVLink inside it): (e-1)·(1-(1-1/e)^k) copies over NVLink,
    (n-1)·(1-(1-1/n)^k) over the network, n = e / e_local domains."""
    kf = float(max(k, 1))
    if flex:
        n = np.maximum(e / e_local, 1.0)
        gpus = np.maximum(e - 1.0, 0.0) * (1.0 - np.power(1.0 - 1.0 / np.maximum(e, 1.0), kf))
        domains = (n - 1.0) * (1.0 - np.power(1.0 - 1.0 / n, kf))
        return np.maximum(token_bytes * gpus / nvl, token_bytes * domains / inter)
    return np.maximum(token_bytes * kf * (e_local - 1) / e / nvl, token_bytes * kf * (e - e_local) / e / inter)


def step_time_s(shape: ModelShape, wl: TrainingWorkload, feats: GpuFeatures, eff: TrainingEfficiency,
                t, p, d, c, e, b, recompute, zero, v, global_batch, gpus_per_node,
                inter_node_bytes_s, attention: str = "causal", efficiency_override=None,
                etp=None) -> dict[str, np.ndarray]:
    """Seconds per optimizer step and its parts. Layout arrays broadcast against GPU-feature arrays.

    `etp`: the routed experts' tensor-parallel size, `t` (None: split like the dense layers) or 1 (MoE parallel
    folding: the experts' e ranks are drawn from the TP x CP x DP ranks of a stage, each expert whole).
    """
    f64 = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    t, p, d, c, e, b, rc, z, v, B = (f64(x) for x in (t, p, d, c, e, b, recompute, zero, v, global_batch))
    et = t if etp is None else np.minimum(f64(etp), t)
    folded = np.where(et < t, 1.0, 0.0)
    gpn = f64(gpus_per_node)
    inter = f64(inter_node_bytes_s)
    s = float(wl.seq_len)
    L, h = shape.n_layers, float(shape.hidden)
    lps = np.ceil(L / p)
    m = B / (d * b)  # micro-batches per step and pipeline

    # Work per token in "GEMM-equivalent" FLOPs for each recompute mode (none / selective / full):
    # dense GEMMs slowed by short rows, routed experts by the few tokens each expert sees,
    # attention at its kernels' own efficiency. Always the real (causal, windowed) attention work,
    # whatever convention MFU is quoted in.
    phi = eff.memory_bound_share(h) if wl.method != "full" else 0.0
    parts_tok = compute_flops_parts(shape, wl, phi)  # (3 modes, 3 parts: other GEMMs, routed experts, attention)
    rows = s * b / c  # token rows of one micro-batch's GEMMs on this GPU
    if efficiency_override is not None:
        eta = f64(efficiency_override)
        work = _mode_parts(parts_tok, rc, wl, lps).sum(axis=-1)
    else:
        # Capped below the dense peak whatever the architecture or calibration factor says (MFU > 1 is impossible).
        fw = eff.framework_ratio(wl.precision, wl.framework)
        eta = np.minimum(eff.eta(feats.peak_tflops, feats.mem_bw_tbps, h, wl.precision) * fw * feats.arch_factor,
                         ETA_CEILING)
        dense_f = 1.0 + eff.m_half / rows
        # Routed experts: slowed by the few token rows each expert sees and by the busiest rank's excess load. An
        # expert narrower than the hidden size is not slower per FLOP on that account (with many token rows a GEMM's
        # arithmetic intensity is set by its two weight dimensions, and 768 x 2048 is compute-bound on every GPU here);
        # what fine-grained experts cost is more GEMMs per layer: moe_expert_overhead_us per local expert, below.
        # Folded (etp 1), each of a replica's t ranks dispatches its 1/t sequence-parallel share of the tokens.
        rows_e = rows * max(shape.top_k, 1) * e / max(shape.n_experts, 1) * et / t  # tokens per local expert
        expert_f = (1.0 + eff.moe_m_half / rows_e) * eff.moe_imbalance
        pt = _mode_parts(parts_tok, rc, wl, lps)
        # FlashAttention runs in 16-bit even in FP8/FP4 training: at the bf16 peak and without the
        # low-precision GEMM ratio.
        lowp = (eff.lowp_ratio.get(wl.precision, 1.0) if wl.precision in ("fp8", "fp4") else 1.0) * fw
        attn_arch = 1.0 + feats.blackwell * (eff.attn_blackwell - 1.0)  # attention kernels' speed vs Hopper's
        # Their share of eta: whatever the hidden size, slower for narrow heads; and a PyTorch-native stack on Hopper /
        # Blackwell runs FlashAttention-2 where Megatron runs cuDNN's kernels.
        attn_stack = eff.attention_framework_ratio(wl.framework, feats.fa2_gap)
        attn_slow = (np.where(feats.bf16_ratio < 1.0, lowp / feats.bf16_ratio, 1.0)
                     / (eff.attention_share(h, shape.qk_head_dim) * attn_arch * attn_stack))
        work = pt[..., 0] * dense_f + pt[..., 1] * expert_f + pt[..., 2] * attn_slow
    rate = feats.peak_flops * eta
    tokens_mb = s * b  # tokens in one micro-batch (whole sequence; CP splits it below)
    t_mb = work * tokens_mb / (t * c * p) * (lps * p / L) / rate  # fullest stage
    if wl.flash_attention:  # selective recompute of norms/activations: elementwise, memory-bound reruns
        t_mb = t_mb * np.where(rc == 1, 1.0 + eff.selective_overhead, 1.0)
    hbm = feats.mem_bw_tbps * 1e12 * 0.7
    if efficiency_override is None:
        # Fixed costs per layer and micro-batch: kernel launches and small kernels (fwd + bwd). A graph-captured fused
        # MoE stack (wl.fused_moe, on the GPUs of fused_moe_flags: its kernel is sm100, data-centre Blackwell)
        # replays the whole iteration as one CUDA graph and runs each MoE layer's experts as one kernel: none of
        # these launch costs, nor the MoE ones below, remain.
        launched = 1.0 - (feats.blackwell * feats.fa2_gap if wl.fused_moe and shape.is_moe else 0.0)
        rerun = np.where(rc == 2, 1.0 + recompute_fraction(wl, lps) / 3.0, 1.0) * launched
        t_mb = t_mb + lps * eff.layer_overhead_us * 1e-6 * rerun
        if shape.is_moe:
            # MoE layers add dozens of small kernels (router, top-k, permute) and a host sync per dispatch
            # (the all-to-all split sizes): a fixed cost per MoE layer and micro-batch. NVIDIA's NVL72 recipes
            # remove it (sync-free HybridEP dispatcher, CUDA graphs over the router and preprocessing; see
            # RACK_SCALE_MIN_GPUS), so rack-scale NVLink domains do not pay it.
            moe_fixed = np.where(feats.scaleup_domain > RACK_SCALE_MIN_GPUS, 0.0, eff.moe_layer_overhead_us)
            # The grouped GEMM runs one GEMM (and, in FP8, one quantisation) per local expert, forward and
            # backward: a fixed cost per local expert, MoE layer and micro-batch. Few local experts (large EP)
            # pay little of it; expert parallelism inside an 8-GPU node leaves 16-32 per GPU.
            local_experts = max(shape.n_experts, 1) / e
            moe_fixed = moe_fixed + local_experts * eff.moe_expert_overhead_us
            t_mb = t_mb + lps * shape.n_moe_layers / L * moe_fixed * 1e-6 * rerun
    if wl.method != "full":
        # The adapters' own kernels are memory-bound (rank-r GEMMs): each adapted matrix reads its
        # input and writes its output again, forward and twice backward.
        adapter_dims = shape.attention_io_per_layer + (shape.ffn_io_active_per_layer if wl.lora_targets == "all" else 0.0)
        adapter_bytes = LORA_ADAPTER_BYTES_PER_DIM * adapter_dims * lps * tokens_mb / (t * c)
        t_mb = t_mb + adapter_bytes / hbm
    if wl.method == "qlora":
        # NF4 base weights are dequantised to bf16 before every GEMM that uses them: forward,
        # input-gradient backward, and the forward rerun of full recompute. Per micro-batch, not
        # per token: it weighs most at small micro-batches.
        passes = np.where(rc == 2, 3.0, 2.0)
        layer_w = (shape.layer_params_nonexpert + shape.expert_params_total / max(L, 1)) * lps / t
        t_mb = t_mb + passes * QLORA_DEQUANT_BYTES_PER_PARAM * layer_w / hbm
    if wl.precision in ("fp8", "fp4"):
        # Dynamic scaling casts every GEMM input: read the 16-bit tensor for its amax, read it again
        # and write the low-precision copy, forward (activations) and backward (gradients). Memory-
        # bound, so it weighs most on narrow layers, where 8-bit GEMMs save least.
        cast_bytes = LOWP_CAST_BYTES_PER_DIM * shape.linear_io_dims_per_layer * lps * tokens_mb / (t * c)
        t_mb = t_mb + cast_bytes / hbm
    if shape.is_moe:
        # Router softmax/top-k and the token permutation / unpermutation around the experts: memory-
        # bound copies of k x h activations per token and MoE layer, forward and backward.
        moe_layers_stage = lps * shape.n_moe_layers / L
        perm_bytes = (MOE_PERMUTE_BYTES_PER_DIM * shape.top_k * (shape.moe_width or h)
                      + MOE_ROUTER_BYTES_PER_EXPERT * shape.n_experts)
        t_mb = t_mb + perm_bytes * moe_layers_stage * tokens_mb / c / hbm
    if shape.linear_scan_bytes:
        # A hybrid's linear-attention layers run their chunked scan as a chain of memory-bound kernels: forward, the
        # backward at about twice its traffic, and full recompute's rerun of the forward.
        passes = np.where(rc == 2, 4.0, 3.0)
        scan_bw = feats.mem_bw_tbps * 1e12 * eff.linear_scan_bw_share
        t_mb = t_mb + passes * shape.linear_scan_bytes * (lps / L) * tokens_mb / (t * c) / scan_bw
    if wl.teacher_forward_flops_per_token:
        # Distillation: the teacher's forward pass over the same micro-batch, sharded like the student.
        t_mb = t_mb + wl.teacher_forward_flops_per_token * tokens_mb / (t * c * p) / rate
    compute = m * t_mb
    # Interleaved, the bubble is p - 1 chunk times; the fullest chunk of an uneven split (a pinned vp that does not
    # divide the stage's layers, as Megatron's custom pipeline layouts run) sets the chunk time.
    bubble = np.where(p > 1, (p - 1) * np.ceil(lps / v) / lps * t_mb, 0.0)

    lat_in, lat_out = eff.collective_latency_us * 1e-6, eff.inter_node_latency_us * 1e-6
    peer = feats.scaleup_peer_bytes_s
    link = lambda group, span, p2p=False: _link(group, span, feats.scaleup_bytes_s, feats.scaleup_domain,  # noqa: E731
                                                feats.pcie_bytes_s, inter, gpn, lat_in, lat_out, peer, p2p)
    # Tensor parallel: ranks adjacent.
    act_bytes = tokens_mb / c * h * 2.0
    bw_tp, lat_tp = link(t, 1.0)
    # two per mixer and two per FFN (one of each per layer; a block hybrid has fewer FFNs than mixers)
    n_coll = np.where(rc == 2, 6.0, 4.0) * lps * (L + (shape.n_ffn_layers or L)) / (2 * L)
    if shape.is_moe and not shape.shared_experts:
        # Folded experts need no tensor-parallel gather / scatter around the MoE block: the sequence-parallel tokens
        # go straight to the all-to-all. A shared expert is tensor-parallel and still pays it.
        n_coll = n_coll * (1.0 - 0.5 * folded * shape.n_moe_layers / L)
    tp_one = 2.0 * (t - 1) / t * act_bytes / bw_tp + lat_tp
    tp = np.where(t > 1, eff.tp_exposed * m * n_coll * tp_one, 0.0)
    # Context parallel: K/V blocks around a ring of c ranks placed after TP.
    # Each TP rank holds its share of the KV heads (at least one: GQA replicates them beyond).
    kv_bytes = 2.0 * b * (s / c) * np.maximum(shape.n_kv_heads / t, 1.0) * shape.qk_head_dim * 2.0
    bw_cp, lat_cp = link(c, t, p2p=True)
    # Each of the c-1 ring steps sends the next K/V block while attention runs on the current one:
    # the step costs max(transfer, attention on one block); `cp_exposed` of the transfer never hides
    # (copy engines contend with the kernels, the ring synchronises every step). Backward sends
    # K/V and their gradients (x2) against 2.5x the forward attention work.
    comm_step = kv_bytes / bw_cp + lat_cp
    if efficiency_override is None:
        attn_rate = rate / attn_slow
    else:
        attn_rate = rate
    attn_fwd_tok = parts_tok[0, 2] / (3.5 if wl.flash_attention else 3.0)  # forward attention FLOPs per token
    attn_layer = attn_fwd_tok / L * tokens_mb / (t * c) / attn_rate  # forward, one layer, this GPU
    attn_step = attn_layer / c
    exposed_fwd = np.maximum(eff.cp_exposed * comm_step, comm_step - attn_step)
    exposed_bwd = np.maximum(eff.cp_exposed * 2.0 * comm_step, 2.0 * comm_step - 2.5 * attn_step)
    cp = np.where(c > 1, m * lps * (c - 1) * (exposed_fwd + exposed_bwd), 0.0)
    # Expert parallel all-to-all: e ranks taken from the data-parallel dimension (after TP and CP), or, folded, from
    # consecutive ranks (TP's included).
    # Peers inside the node are reached over NVLink, the others over this GPU's NIC; both run at
    # once, so the slower share sets the time. Dispatch + combine forward, twice that backward.
    moe_layers = lps * shape.n_moe_layers / L
    # Peers reached over NVLink: the node's, or the whole NVLink domain where it spans nodes (NVL72).
    ep_stride = np.where(folded > 0, 1.0, t * c)
    e_local = np.clip(np.floor(np.maximum(gpn, feats.scaleup_domain) / ep_stride), 1.0, e)
    nvl = np.where(e_local * ep_stride <= feats.scaleup_domain,
                   np.minimum(feats.scaleup_bytes_s, peer * np.maximum(e_local - 1.0, 1.0)), feats.pcie_bytes_s)
    # With sequence parallelism each TP rank holds and dispatches 1/t of the micro-batch's tokens.
    # LatentMoE dispatches its tokens at the latent width
    a2a = _a2a_one_way_s(act_bytes / t * (shape.moe_width or h) / h, shape.top_k, e, e_local, nvl, inter,
                         wl.moe_dispatcher == "flex")
    ep_one = 2.0 * a2a + 2 * np.where(e > e_local, lat_out, lat_in)
    # With the all-to-all overlapped with another micro-batch's (or chunk's) compute (wl.ep_overlap: Megatron's combined
    # 1F1B schedule, DeepSeek's DualPipe) it hides behind at most one micro-batch's compute, and `ep_exposed` of it
    # never hides (launch, synchronisation, contention with the GEMMs). Without (Megatron's default) the dispatch and
    # combine sit on the critical path between the router and the experts, and between the experts and the next layer.
    ep_mb = moe_layers * 2.0 * ep_one
    overlapped = ep_overlap_runs(p, v) if wl.ep_overlap else np.zeros_like(p, dtype=bool)
    ep = np.where(e > 1, m * np.where(overlapped, np.maximum(eff.ep_exposed * ep_mb, ep_mb - t_mb), ep_mb), 0.0)
    # Pipeline point-to-point, scatter-gather over t.
    bw_pp, lat_pp = link(p, t * c * d, p2p=True)
    bw_pp = np.minimum(bw_pp, np.where((t * c * d >= gpn) & (t * c * d * p > feats.scaleup_domain), inter, bw_pp))
    pp_one = act_bytes / t / bw_pp + lat_pp
    pp = np.where(p > 1, 2.0 * m * v * pp_one, 0.0)
    # The interleaved schedule (v > 1) posts its sends and receives asynchronously and overlaps them with the
    # other model chunks' compute (Megatron's overlap_p2p_comm, on by default there): what stays exposed is the
    # warm-up and cool-down chain through all p·v chunks, one hop each way per chunk boundary, or the excess of
    # the transfers over the compute. The plain 1F1B schedule's transfers block.
    pp = np.where((v > 1) & (p > 1), np.maximum(pp - compute, 2.0 * (p * v - 1.0) * pp_one), pp)

    # Data parallel gradients of the fullest stage.
    ne = lps * shape.layer_params_nonexpert / t
    emb = np.where(p > 1, shape.embed_in_params, shape.embed_in_params + shape.embed_out_params) / t
    experts = shape.expert_params_total * (lps / L) / (et * e)
    stage_params = ne + emb + experts
    if wl.method == "full":
        grad_params = stage_params
    else:
        grad_params = shape.adapter_params(wl.lora_rank, wl.lora_targets) * (lps / L) / t + 0.0 * ne
    n_dp = d * c
    g_b = float(wl.gradient_bytes)
    n_world = t * p * d * c
    # The whole job inside one NVLink domain (a node, or an NVL72 rack of 4-GPU trays): NVLink.
    # Beyond it, NCCL runs one ring per NIC: a group's ring crosses each node (rack) boundary once, so
    # its members in that node share their NICs, and the group moves `members` x one GPU's NIC rate
    # (multi-node all-reduce busbw ~ 8 x 50 GB/s on 8x400G H100 nodes), never faster than the links
    # inside the node. Routed experts reduce over their own, e times smaller group: with EP filling
    # the node it has one member per node and moves at one NIC's rate.
    local = np.maximum(gpn, feats.scaleup_domain)
    intra_bw = np.where(feats.scaleup_domain >= gpn, feats.scaleup_bytes_s, feats.pcie_bytes_s)
    lat_dp = np.where((n_world > gpn) & (n_world > feats.scaleup_domain), lat_out, lat_in)

    def group_s_per_byte(ranks, stride):
        """Seconds per byte of one rank's share in a ring all-reduce half (reduce-scatter or all-gather)."""
        members = np.clip(np.floor(local / stride), 1.0, np.maximum(ranks, 1.0))
        # On a mesh, the members inside the node reach each other over the members - 1 links among them.
        meshed = np.minimum(feats.scaleup_bytes_s, peer * np.maximum(members - 1.0, 1.0))
        node_bw = np.where(feats.scaleup_domain >= gpn, meshed, intra_bw)  # intra_bw is scaleup_bytes_s there
        bw = np.where(n_world <= feats.scaleup_domain, meshed,
                      np.where(n_world > gpn, np.minimum(node_bw, inter * members), feats.pcie_bytes_s))
        return np.where(ranks > 1, (ranks - 1) / np.maximum(ranks, 1.0), 0.0) / bw

    spb = group_s_per_byte(n_dp, t)
    if shape.is_moe:
        # Each expert shard reduces over the stage's other copies of it: t·d·c / (etp·e) ranks, e·etp (folded) or
        # t·c·e (not) apart.
        weight_s = (ne + emb) * spb + experts * group_s_per_byte(t * n_dp / (et * e),
                                                                  np.where(folded > 0, e * et, t * c * e))
    else:
        weight_s = stage_params * spb
    # Seconds per gradient byte-width, one ring pass.
    grad_s = weight_s if wl.method == "full" else grad_params * spb
    has_dp = np.where(n_dp > 1, 1.0, 0.0)
    reduce_s = 2.0 * grad_s * g_b + 2 * lat_dp * has_dp
    # `dp_exposed` of every data-parallel collective never hides, however long the compute beside it: the
    # reduction of the last gradient bucket (the embeddings and first layers finish last), the first bucket's
    # weight gather before any forward work, and the SMs NCCL takes from the overlapped GEMMs.
    hidden = lambda comm, window: np.maximum(eff.dp_exposed * comm, comm - window)  # noqa: E731
    dp_once = hidden(reduce_s, eff.dp_overlap * t_mb * (2.0 / 3.0))
    # ZeRO-3: every micro-batch gathers the weights twice (fwd, bwd) and reduce-scatters the
    # gradients, hidden behind that micro-batch's compute as far as it goes.
    # It gathers layer by layer: three ring collectives per layer, and a ring that leaves the node pays a
    # network step (RING_STEP_NET_US) for each of its n - 1 steps (NCCL has no tree for all-gather /
    # reduce-scatter): at a thousand ranks the per-layer latency, not the bandwidth, bounds FSDP.
    ring_lat = lat_dp + np.where(n_world > local, (n_dp - 1.0) * RING_STEP_NET_US * 1e-6, 0.0)
    z3_one = 2.0 * weight_s * 2.0 + grad_s * 2.0 + 3 * lps * ring_lat * has_dp
    dp_z3 = m * hidden(z3_one, eff.dp_overlap * t_mb)
    # ZeRO-2 keeps no full gradient buffer: gradients are reduce-scattered after every micro-batch,
    # updated weights all-gathered once per step.
    z2_one = grad_s * g_b + lat_dp * has_dp
    dp_z2 = m * hidden(z2_one, eff.dp_overlap * t_mb * (2.0 / 3.0)) + grad_s * 2.0
    dp = np.where(z >= 3, dp_z3, np.where(z == 2, dp_z2, dp_once))

    # Optimizer update at HBM speed on the parameters this GPU owns.
    opt_share = np.where(z >= 1, 1.0 / n_dp, 1.0)
    opt_bytes = grad_params * opt_share * eff.optimizer_bytes_per_param * OPTIMIZER_BYTES[wl.optimizer] / 12.0
    optimizer = opt_bytes / (feats.mem_bw_tbps * 1e12 * 0.7)

    total = compute + bubble + tp + cp + ep + pp + dp + optimizer
    return {"total": total, "compute": compute, "bubble": bubble, "tp": tp, "cp": cp, "ep": ep, "pp": pp,
            "dp": dp, "optimizer": optimizer, "eta": eta + 0.0 * total, "micro_batches": m + 0.0 * total}


def _mode_parts(parts_tok: np.ndarray, rc: np.ndarray, wl: TrainingWorkload, lps) -> np.ndarray:
    """Per-layout FLOP parts (..., 3) for its recompute code; partial full recompute (N of the
    stage's layers) reruns the forward of that share of layers only."""
    rci = rc.astype(np.int64)
    pt = parts_tok[rci]
    if wl.recompute_layers is None:
        return pt
    frac = np.broadcast_to(recompute_fraction(wl, lps), rci.shape)[..., None]
    partial = parts_tok[0] + frac * (parts_tok[2] - parts_tok[0])
    return np.where((rci == 2)[..., None], partial, pt)


def compute_flops_parts(shape: ModelShape, wl: TrainingWorkload, lora_phi: float = 0.0) -> np.ndarray:
    """FLOPs executed per token, shape (3, 3): rows recompute none / selective / full, columns
    (GEMMs other than routed experts, routed-expert GEMMs, attention core).

    Full training runs every GEMM three times (forward, input and weight gradients), four with
    full recompute. LoRA/QLoRA skip the frozen weights' gradients (two passes) but the memory-bound
    share of the step runs as in full training, so a share `lora_phi` of the skipped pass is kept
    (TrainingEfficiency.memory_bound_share). The attention core has
    no weights: its backward (dQ, dK, dV) runs in every method. Causal attention as the kernels run it; with
    FlashAttention the backward recomputes the scores (2.5 forward passes).
    """
    from gpuplan.perf.training_flops import attention_forward_flops_per_token

    attn_fwd = attention_forward_flops_per_token(shape, wl.attention_len, "causal")
    routed = 2.0 * shape.routed_active_params
    other = 2.0 * shape.matmul_active_params - routed
    if wl.method == "full":
        passes = np.array([3.0, 3.0, 4.0])
        extra = 0.0
    else:
        passes = np.array([2.0, 2.0, 3.0]) + lora_phi
        extra = (1.0 - lora_phi) * 6.0 * shape.adapter_params(wl.lora_rank, wl.lora_targets)
    # FlashAttention's backward recomputes the score matrix QK^T before dV, dP, dQ, dK: 5 matmuls against the
    # forward's 2, i.e. 2.5 forward passes (Dao 2022/2023), so fwd + bwd = 3.5 passes (+1 with full recompute).
    # Materialized attention keeps the scores: 3 passes, 4 when selective recompute reruns the core.
    attn_passes = np.array([3.5, 3.5, 4.5]) if wl.flash_attention else np.array([3.0, 4.0, 4.0])
    return np.stack([other * passes + extra, routed * passes, attn_fwd * attn_passes], axis=1)


def flops_per_token(shape: ModelShape, wl: TrainingWorkload, attention: str = "causal") -> tuple[float, float, float]:
    """(model FLOPs/token, forward FLOPs/token, full-recompute hardware FLOPs/token). A distillation
    teacher's forward pass counts in the model and hardware FLOPs (it is work the run pays for)."""
    kw = dict(method=wl.method, attention=attention, lora_rank=wl.lora_rank, lora_targets=wl.lora_targets)
    teacher = wl.teacher_forward_flops_per_token
    span = wl.attention_len  # packed examples: attention within one example
    return (model_flops_per_token(shape, span, **kw) + teacher,
            forward_flops_per_token(shape, span, attention),
            hardware_flops_per_token(shape, span, "full", flash_attention=wl.flash_attention, **kw) + teacher)


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
