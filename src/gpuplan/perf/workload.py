"""What a training job asks for: how many tokens, how long the sequences, which method and precision.

A workload is independent of the hardware: the same pre-training run is costed on every GPU
type in the catalog. Fine-tuning is given by tokens or by epochs over a data set, because that
is how people think about it.
"""
from __future__ import annotations

import math
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpuplan.errors import UsageError

Method = Literal["full", "lora", "qlora"]
TrainPrecision = Literal["bf16", "fp16", "fp8", "fp4"]
LoraTargets = Literal["attention", "all"]
Optimizer = Literal["adam", "adam8bit", "sgd"]
# The training stack. megatron: Megatron-Core / NeMo / Megatron-DeepSpeed / Primus, whose Transformer Engine layers fuse
# the FP8 casts into the neighbouring kernels (what the exports launch). pytorch: PyTorch-native stacks (torchtitan /
# FSDP2, Composer / LLM Foundry, Hugging Face Accelerate), whose FP8 (torchao float8, TE linears) casts run as kernels
# of their own.
Framework = Literal["megatron", "pytorch"]
MoeDispatcher = Literal["alltoall", "flex"]
FRAMEWORKS = get_args(Framework)
MOE_DISPATCHERS = get_args(MoeDispatcher)



def batch_unit(dp, micro_batch, pp, vp):
    """Sequences a global batch must be a whole multiple of: dp x micro-batch, and with interleaved pipeline chunks
    (vp > 1) whole groups of pp micro-batches, as Megatron's interleaved schedule runs them. Ints or numpy arrays."""
    return dp * micro_batch * (1 + (pp - 1) * (vp > 1))


MAX_TOKENS = 1e16  # 100x the largest public run (Llama 3.1: 15.6T); beyond is a typo, not a plan
MAX_SEQ_LEN = 4_194_304
DEFAULT_SEQ_LEN = 4096
# Pre-training batches sit at 2-16M tokens (Llama 2: 4M, Llama 3.1 405B: 16M); 4M is the middle.
DEFAULT_PRETRAIN_BATCH_TOKENS = 4_194_304
# Fine-tuning recipes use small batches (NVIDIA LoRA recipe: 32 x 4096 tokens).
DEFAULT_FINETUNE_BATCH_TOKENS = 131_072
MIN_PRETRAIN_BATCH_TOKENS = 1_048_576
MAX_PRETRAIN_BATCH_TOKENS = 16_777_216


def default_pretrain_batch_tokens(total_params: float) -> float:
    """The global batch published recipes use, growing with model size: 4M tokens at 8B
    (Llama 2 7B-13B: 4M; Llama 3 8B: 4M), 16M at 405B (Llama 3.1 405B's final batch), as
    4M x (N / 8e9)^(1/3) rounded to a power of two within 1M..16M (GPT-3's 0.5-3.2M for 125M-175B
    sits at the low end)."""
    if not total_params or total_params <= 0 or not math.isfinite(total_params):
        return float(DEFAULT_PRETRAIN_BATCH_TOKENS)
    t = DEFAULT_PRETRAIN_BATCH_TOKENS * (total_params / 8e9) ** (1.0 / 3.0)
    t = 2.0 ** round(math.log2(t))  # recipes use powers of two (4M, 8M, 16M): they divide by data-parallel sizes
    return float(min(MAX_PRETRAIN_BATCH_TOKENS, max(MIN_PRETRAIN_BATCH_TOKENS, t)))


class TrainingWorkload(BaseModel):
    """A pre-training or fine-tuning job. `global_batch` is in sequences; None = a typical size."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["pretrain", "finetune"] = "pretrain"
    method: Method = "full"
    tokens: float | None = Field(default=None, description="training tokens processed (all epochs)")
    epochs: float | None = None
    dataset_tokens: float | None = None
    seq_len: int = DEFAULT_SEQ_LEN
    global_batch: int | None = None
    batch_flexible: bool = Field(default=False, description="a given global_batch is a target the layout may round up")
    default_batch_tokens: float | None = Field(default=None, gt=0, description="tokens per step when no global_batch "
                                                                               "is given (default: by model size)")
    precision: TrainPrecision = "bf16"
    lora_rank: int = 16
    lora_targets: LoraTargets = "all"
    optimizer: Optimizer = "adam"
    fp32_grads: bool = Field(default=False, description="fp32 gradient accumulation buffers (Megatron default): 18 B/param")
    flash_attention: bool = True
    sequence_parallel: bool = True
    framework: Framework = Field(default="megatron", description="training stack: megatron (fused FP8 casts, "
                                                                 "cuDNN attention) or pytorch (torchtitan, FSDP2, "
                                                                 "Composer, Accelerate)")
    # Graph-captured fused MoE (Megatron-Bridge's MXFP8 MoE recipes on Blackwell from NeMo 26.06): the routed experts run
    # as one fused grouped-MLP kernel (Transformer Engine's CuTeDSL kernel, sm100+) and the whole iteration replays
    # as one CUDA graph (sync-free dropless dispatch into a paged stash), so no per-expert GEMM launches, no per-MoE-
    # layer host sync and no per-layer launch gaps. Counts only on Blackwell; off by default (the exported launch
    # files do not set it up).
    fused_moe: bool = Field(default=False, description="routed experts as one fused grouped-MLP kernel inside a "
                                                       "full-iteration CUDA graph (Blackwell only)")
    # The MoE token dispatcher: `flex` (DeepEP / HybridEP, what NVIDIA's MoE recipes run on most models and GPUs: a
    # token goes once per destination GPU inside an NVLink domain and once per remote domain over the network,
    # forwarded over NVLink there) or `alltoall` (Megatron's NCCL all-to-all: once per selected expert).
    moe_dispatcher: MoeDispatcher = Field(default="flex", description="MoE token dispatcher: flex (DeepEP / HybridEP, "
                                          "a copy per GPU and per remote node) or alltoall (NCCL, a copy per "
                                          "selected expert)")
    # Expert-parallel all-to-all overlap (Megatron's combined 1F1B schedule, --overlap-moe-expert-parallel-comm): one
    # micro-batch's dispatch and combine run behind an adjacent micro-batch's compute. Off by default, as in Megatron
    # and in the exported launch files: then the all-to-all sits on the critical path.
    ep_overlap: bool = Field(default=False, description="MoE: expert-parallel all-to-all overlapped with another "
                                                        "micro-batch's compute (Megatron's combined 1F1B schedule)")
    # Distillation: a frozen teacher runs a forward pass over every training token.
    teacher: str | None = Field(default=None, description="teacher model name (distillation)")
    teacher_forward_flops_per_token: float = Field(default=0.0, ge=0, description="teacher forward FLOPs per token "
                                                   "(2 x active params + attention)")
    teacher_params: float = Field(default=0.0, ge=0, description="teacher weights held in bf16 on the GPUs")
    teacher_vocab: int = Field(default=0, ge=0, description="teacher vocabulary (its logits are held per token)")
    # Partial recompute: with recompute 'full', only this many layers per pipeline stage are
    # recomputed (Megatron --recompute-num-layers, block method); None = every layer.
    recompute_layers: int | None = Field(default=None, ge=0, le=100_000)
    # Packed fine-tuning: short examples concatenated into each sequence with per-example attention masks
    # (NeMo / TRL packing, FlashAttention varlen): attention spans one example, not the sequence.
    sample_len: int | None = Field(default=None, description="mean tokens per packed example (None: one document "
                                                             "per sequence)")

    @model_validator(mode="after")
    def _check(self) -> "TrainingWorkload":
        for name in ("tokens", "epochs", "dataset_tokens"):
            v = getattr(self, name)
            if v is not None and (not math.isfinite(v) or v <= 0):
                raise ValueError(f"{name} must be a positive finite number, got {v}")
        if self.tokens is None:
            if self.epochs is None or self.dataset_tokens is None:
                raise ValueError("give tokens, or epochs and dataset_tokens")
        elif self.epochs is not None or self.dataset_tokens is not None:
            raise ValueError("give tokens, or epochs and dataset_tokens, not both")
        if self.total_tokens > MAX_TOKENS:
            raise ValueError(f"{self.total_tokens:.3g} training tokens is beyond any plan (max {MAX_TOKENS:.0e})")
        if not 1 <= self.seq_len <= MAX_SEQ_LEN:
            raise ValueError(f"seq_len must be in 1..{MAX_SEQ_LEN}, got {self.seq_len}")
        if self.global_batch is not None and not 1 <= self.global_batch <= 1e9:
            raise ValueError(f"global_batch must be a positive number of sequences, got {self.global_batch}")
        if not 1 <= self.lora_rank <= 65536:
            raise ValueError(f"lora_rank must be in 1..65536, got {self.lora_rank}")
        if self.method != "full" and self.kind == "pretrain":
            raise ValueError("LoRA/QLoRA are fine-tuning methods; use kind='finetune'")
        if self.total_tokens < self.seq_len:
            raise ValueError(f"{self.total_tokens:.3g} tokens is less than one sequence of {self.seq_len}")
        if self.sample_len is not None and not 1 <= self.sample_len <= self.seq_len:
            raise ValueError(f"sample_len must be in 1..seq_len ({self.seq_len}), got {self.sample_len}")
        return self

    @property
    def attention_len(self) -> int:
        """Tokens a sequence's attention spans: the packed example's length, else the whole sequence."""
        return self.sample_len or self.seq_len  # checked above: sample_len <= seq_len

    @property
    def total_tokens(self) -> float:
        if self.tokens is not None:
            return float(self.tokens)
        return float(self.epochs) * float(self.dataset_tokens)

    @property
    def default_global_batch(self) -> int:
        """Sequences per step when none is given: a typical token budget per step, at least 1."""
        target = DEFAULT_PRETRAIN_BATCH_TOKENS if self.kind == "pretrain" else DEFAULT_FINETUNE_BATCH_TOKENS
        if self.kind == "pretrain" and self.default_batch_tokens:
            target = self.default_batch_tokens
        target = min(target, self.total_tokens)
        return max(1, int(round(target / self.seq_len)))

    @property
    def gradient_bytes(self) -> int:
        """Bytes per gradient element: fp32 accumulation buffers (`fp32_grads`, Megatron's --bf16 default) or bf16."""
        return 4 if self.fp32_grads else 2

    @property
    def batch_fixed(self) -> bool:
        """A user-given batch is a constraint; a default one may be rounded to fit the layout."""
        return self.global_batch is not None and not self.batch_flexible

    @property
    def batch(self) -> int:
        return self.global_batch if self.global_batch is not None else self.default_global_batch


def with_teacher(wl: TrainingWorkload, teacher) -> TrainingWorkload:
    """The workload distilled from `teacher` (a ModelSpec): its forward FLOPs per token at this
    sequence length (2 x active matmul weights + causal attention) and its weights."""
    from gpuplan.perf.training_flops import forward_flops_per_token
    from gpuplan.perf.training_shape import model_shape

    shape = model_shape(teacher)
    return wl.model_copy(update={"teacher": teacher.name,
                                 "teacher_forward_flops_per_token": forward_flops_per_token(shape, wl.attention_len),
                                 "teacher_params": float(teacher.total_params()),
                                 "teacher_vocab": int(teacher.vocab_size)})


def make_workload(**kwargs) -> TrainingWorkload:
    """Build a workload; a bad field becomes one UsageError line instead of a pydantic dump."""
    try:
        return TrainingWorkload(**kwargs)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "workload"
        msg = err.get("msg", str(e)).removeprefix("Value error, ")
        raise UsageError(f"{where}: {msg}" if where != "workload" else msg) from None


def pretraining(tokens: float, seq_len: int = DEFAULT_SEQ_LEN, global_batch: int | None = None,
                precision: str = "bf16", **kw) -> TrainingWorkload:
    return make_workload(kind="pretrain", tokens=tokens, seq_len=seq_len, global_batch=global_batch,
                         precision=precision, **kw)


def finetuning(method: str = "full", tokens: float | None = None, epochs: float | None = None,
               dataset_tokens: float | None = None, seq_len: int = DEFAULT_SEQ_LEN,
               global_batch: int | None = None, precision: str = "bf16", **kw) -> TrainingWorkload:
    return make_workload(kind="finetune", method=method, tokens=tokens, epochs=epochs, dataset_tokens=dataset_tokens,
                         seq_len=seq_len, global_batch=global_batch, precision=precision, **kw)
