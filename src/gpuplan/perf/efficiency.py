"""Achieved training efficiency and whole-run goodput: a few interpretable parameters, fitted.

Compute efficiency (fraction of the dense peak the step's math runs at, before communication
and pipeline bubbles):

    eta = eta_max * lowp_ratio[precision] / (1 + h_half / h)

`h` is the hidden size: small layers waste more of the GPU (memory-bound norms/activations,
small GEMM tiles, kernel-launch gaps), and `h_half` is the width at which a layer runs at half
the ceiling `eta_max`. `lowp_ratio` is the share of eta that 8/4-bit GEMMs reach against their
own (doubled) peak. A variant that scaled the small-layer term with the GPU's FLOP/byte ratio
(penalizing H100 more than A100) fitted the published rows worse (throughput median 9.3% vs
5.2%): modern H100 software runs small models at least as efficiently as 2021-23 A100 stacks.

The time model (training_time.py) adds a few physics parameters, fitted per regime by
scripts/fit_training_efficiency.py: `m_half` (GEMM token rows at half speed) and `moe_m_half` (the same for the
routed experts' grouped GEMM, which sees b·s·k·e/E rows per expert), `attn_ratio` (attention kernels vs wide
GEMMs), `layer_overhead_us` and
`moe_layer_overhead_us` (fixed costs per layer and micro-batch), `moe_expert_overhead_us` (the same
per local expert), `moe_imbalance` (busiest expert rank / mean), the exposed shares of the TP, EP
all-to-all and CP ring communication, and `linear_scan_bw_share` (the share of HBM bandwidth a hybrid's chunked
linear-attention scans reach).

Goodput (productive share of wall time over a whole run): restarts after failures cost
`lost_h_per_failure` hours each, and the cluster fails every `gpu_h_per_failure / n_gpus` hours
(formulas.md §7: ~5e4 GPU-hours per job-killing failure), on top of a base share `goodput_base`
(evaluation, data stalls, warm-up, stragglers):

    goodput(n) = goodput_base / (1 + n * lost_h_per_failure / gpu_h_per_failure)

The numbers live in data/training-efficiency.json, written by scripts/fit_training_efficiency.py.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from importlib import resources

import numpy as np

EFFICIENCY_FILE = "training-efficiency.json"
FITTED_NAMES = ("eta_max", "h_half", "tp_exposed", "goodput_base", "lost_h_per_failure")
# Physics parameters fitted on the regime rows that inform them (scripts/fit_training_efficiency.py).
REGIME_FITTED_NAMES = ("m_half", "moe_m_half", "moe_imbalance", "ep_exposed", "attn_ratio", "attn_blackwell",
                       "cp_exposed", "dp_exposed", "layer_overhead_us", "moe_layer_overhead_us", "moe_expert_overhead_us",
                       "pytorch_fp8_ratio", "pytorch_attn_ratio", "attn_dhalf", "linear_scan_bw_share")


@dataclass(frozen=True)
class TrainingEfficiency:
    eta_max: float = 0.60
    h_half: float = 1200.0
    lowp_ratio: dict = field(default_factory=lambda: {"fp8": 0.8, "fp4": 0.7})  # formulas.md §5: FP8 ~43-45% of FP8 peak
    tp_exposed: float = 0.5  # share of tensor-parallel collectives not hidden behind GEMMs
    dp_overlap: float = 0.9  # share of the last micro-batch's backward that can hide the gradient reduce
    dp_exposed: float = 0.0  # share of every data-parallel collective that never hides
    cp_exposed: float = 0.3  # ring-attention K/V exchange mostly overlaps attention compute
    ep_exposed: float = 1.0  # MoE all-to-all on the critical path unless the framework overlaps it
    scaleup_efficiency: float = 0.8  # NCCL bus bandwidth / link bandwidth on NVLink-class fabrics
    inter_node_efficiency: float = 0.8  # same on InfiniBand/Ethernet
    pcie_gbs: float = 25.0  # GB/s per GPU between GPUs without a usable NVLink
    collective_latency_us: float = 15.0  # fixed cost per collective inside a node
    inter_node_latency_us: float = 40.0
    optimizer_bytes_per_param: float = 30.0  # Adam step traffic: grads, fp32 master, m, v read+write
    selective_overhead: float = 0.03  # re-running norms and activation functions (elementwise, no GEMMs)
    qlora_overhead: float = 0.30  # kept for old profiles; QLoRA dequantisation is now timed as memory traffic
    # GEMM rows: a matrix multiply over M token rows runs at 1 / (1 + m_half / M) of its wide-row
    # speed (tile quantisation, wave tails). Dense layers see M = tokens per micro-batch; routed
    # experts only the tokens routed to one expert, which is what makes expert parallelism pay.
    m_half: float = 256.0
    # The routed experts' grouped GEMM over M token rows per expert: one kernel tiles many small per-expert problems
    # (a tile quantisation and a tail per expert, grouped scheduling), so its rows reach half speed at their own M.
    moe_m_half: float = 256.0
    # Busiest expert-parallel rank / mean (token routing is never perfectly balanced per micro-batch).
    moe_imbalance: float = 1.15
    # Attention kernels (FlashAttention fwd + bwd, causal masking) reach this share of the wide-layer GEMMs'
    # efficiency (eta without its small-layer term: they tile heads x sequence, whatever the hidden size):
    # FA2/FA3 on H100 run 35-75 % of peak against 60-80 % for large GEMMs.
    attn_ratio: float = 0.6
    # Attention kernels on Blackwell (tcgen05 MMA with tensor memory, cuDNN 9.7+ / FlashAttention-4)
    # relative to Hopper's at the same share of the GEMMs: attention is what long sequences spend
    # their time on, and the one kernel family whose share of peak changed across the generation.
    attn_blackwell: float = 1.0
    # Fixed time per layer and micro-batch (forward + backward kernel launches, small elementwise
    # kernels, stream syncs): what keeps small models far below the curve's ceiling.
    layer_overhead_us: float = 60.0
    # Extra fixed time per MoE layer and micro-batch (router/permute kernels, the host sync for the
    # all-to-all split sizes): what keeps small-active MoE models at low MFU at small micro-batches.
    moe_layer_overhead_us: float = 300.0
    # Fixed time per local expert, MoE layer and micro-batch: the grouped GEMM launches one GEMM (and in FP8 one
    # quantisation) per expert on this GPU, forward and backward, so 16-32 local experts cost more than 2-4.
    moe_expert_overhead_us: float = 50.0
    goodput_base: float = 0.90
    lost_h_per_failure: float = 0.3
    gpu_h_per_failure: float = 5.0e4
    # FP8 in a PyTorch-native stack (torchao float8, TE linears outside Megatron) keeps this share of the low-precision
    # GEMM efficiency Megatron's fused casts keep: amax, scaling and the casts to 8 bits run as memory-bound kernels of
    # their own (formulas.md §5; the device runs in this repository measured the same gap for eager FP8).
    pytorch_fp8_ratio: float = 1.0
    # Attention in a PyTorch-native stack on Hopper and Blackwell keeps this share of the speed of Megatron's
    # (Transformer Engine's cuDNN fused attention): PyTorch's SDPA flash backend is FlashAttention-2, written for
    # Ampere's tensor-core instructions, which reaches about half of what FlashAttention-3 / cuDNN reach on H100
    # (Shah et al. 2024, FlashAttention-3, Fig. 5-6). Ampere and older run FlashAttention-2 in every stack.
    pytorch_attn_ratio: float = 1.0
    # Head width at which the attention kernels would run at half their ceiling: narrow heads (64, GPT-2 / Pythia /
    # Llama-3.2-1B) do less math per K / V tile loaded than 128-wide ones (FlashAttention-2 / -3 papers: head dim 64
    # runs 0.7-0.85x the TFLOP/s of 128). Applied relative to 128, so attn_ratio is the 128-wide heads' share.
    attn_dhalf: float = 0.0
    # Share of the HBM bandwidth a hybrid's chunked-scan kernels (Mamba-2's SSD chain, the chunked delta rule) reach
    # on the traffic ModelSpec.linear_scan_bytes_per_token counts: short kernels over chunk-sized tiles, far from a
    # streaming copy's 70%. Fitted on the Mamba-2 hybrid rows; the serving estimate times prefill's scan with it too.
    linear_scan_bw_share: float = 0.7
    source: str = "defaults"

    def eta(self, peak_tflops, mem_bw_tbps, hidden: float, precision: str) -> np.ndarray:
        """Achieved fraction of the dense peak; GPU arguments broadcast (kept for the shape of the call)."""
        ratio = self.lowp_ratio.get(precision, 1.0) if precision in ("fp8", "fp4") else 1.0
        shape = np.broadcast(np.asarray(peak_tflops), np.asarray(mem_bw_tbps)).shape
        return np.full(shape, self.eta_max * ratio / (1.0 + self.h_half / float(hidden)))

    def framework_ratio(self, precision: str, framework: str) -> float:
        """Share of the low-precision GEMM efficiency a framework keeps (1 for 16-bit math and for Megatron)."""
        return self.pytorch_fp8_ratio if framework == "pytorch" and precision in ("fp8", "fp4") else 1.0

    def attention_framework_ratio(self, framework: str, fa2_gap=1.0) -> np.ndarray:
        """Share of Megatron's attention speed a framework keeps: `pytorch_attn_ratio` for a PyTorch-native stack
        where the fastest kernels need Hopper's or Blackwell's own instructions (`fa2_gap` 1, training_time's GPU
        feature), 1 for Megatron and elsewhere."""
        ratio = self.pytorch_attn_ratio if framework == "pytorch" else 1.0
        return 1.0 + np.asarray(fa2_gap, dtype=np.float64) * (ratio - 1.0)

    def attention_share(self, hidden: float, head_dim: float) -> float:
        """Attention kernels' efficiency over eta at this width: `attn_ratio` of the wide-layer efficiency (eta's
        small-layer term taken back out: the kernels tile heads x sequence, whatever the hidden size), slowed for heads
        narrower than 128 by 1 / (1 + attn_dhalf / head_dim), counted relative to 128-wide heads."""
        width = (1.0 + self.attn_dhalf / 128.0) / (1.0 + self.attn_dhalf / max(float(head_dim), 1.0))
        return self.attn_ratio * (1.0 + self.h_half / float(hidden)) * width

    def memory_bound_share(self, hidden: float) -> float:
        """The share of a step the curve spends below its ceiling, h_half / (h + h_half): the
        memory-bound kernels (norms, activations, softmax, residuals) that make narrow layers slow.
        LoRA keeps them at full-training size while skipping the frozen weights' gradients."""
        return self.h_half / (float(hidden) + self.h_half)

    def goodput(self, n_gpus) -> np.ndarray:
        n = np.asarray(n_gpus, dtype=np.float64)
        return self.goodput_base / (1.0 + n * self.lost_h_per_failure / self.gpu_h_per_failure)

    def with_params(self, **kw) -> "TrainingEfficiency":
        return replace(self, **kw)

    def as_dict(self) -> dict:
        return asdict(self)


@lru_cache(maxsize=1)
def default_efficiency() -> TrainingEfficiency:
    """The fitted parameters shipped with the package (defaults if the file is absent)."""
    try:
        text = resources.files("gpuplan.perf.data").joinpath(EFFICIENCY_FILE).read_text()
    except (FileNotFoundError, ModuleNotFoundError):
        return TrainingEfficiency()
    data = json.loads(text)
    params = {k: v for k, v in data.get("params", {}).items() if k in TrainingEfficiency.__dataclass_fields__}
    return TrainingEfficiency(**params, source=data.get("source", EFFICIENCY_FILE))
