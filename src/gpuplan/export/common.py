"""What every export shares: reading a plan file, the launch environment, torchrun, safe writing.

An export must launch exactly the plan that was priced (GPU, node count, layout, spot policy,
checkpoint cadence), so everything the orchestrator files carry is derived here from one `Plan`,
and the per-orchestrator modules only translate it into their own vocabulary.
"""
from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from gpuplan.errors import UsageError
from gpuplan.files import write_atomic  # noqa: F401  (re-exported by gpuplan.export)
from gpuplan.models.spec import LINEAR_KIND_LABELS
from gpuplan.planner.records import Plan, PlanResult

TARGETS = ("skypilot", "dstack", "k8s")
TARGET_ALIASES = {"sky": "skypilot", "kubernetes": "k8s"}
CHECKPOINT_DIR = "/checkpoints"
MASTER_PORT = 29500
SERVE_PORT = 8000
YAML_WIDTH = 1 << 16  # one command per line, however long
DEFAULT_SCRIPT = "train.py"  # the user's script for pure data-parallel plans when --script is not given
# Secrets the launched job usually needs; files reference them by name, never by value, and the launch
# commands pass each one only when it is set in the launching shell (none of them is required).
SECRET_NAMES = ("HF_TOKEN", "WANDB_API_KEY")
_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,39}[a-z0-9]$")
_INFRA_RE = re.compile(r"^(k8s|kubernetes|ssh)(/[A-Za-z0-9][A-Za-z0-9._:@-]{0,252})?$")


@dataclass(frozen=True)
class ExportOptions:
    """What the user may set on top of the plan; everything else comes from the plan itself."""

    name: str | None = None
    image: str | None = None
    # None: the launcher the layout needs (Megatron-LM for tp/pp/cp/ep > 1, else `accelerate launch` of
    # train.py with the ZeRO stage's sharding); a path: that script, started the same way.
    script: str | None = None
    script_args: tuple[str, ...] = ()
    model_id: str | None = None
    megatron_args: bool = True
    max_restarts: int = 3
    checkpoint_dir: str = CHECKPOINT_DIR
    infra: str | None = None  # SkyPilot: run on your own Kubernetes cluster / SSH node pool (k8s/CTX, ssh/POOL)
    fleet: str | None = None  # dstack: run on this existing fleet (e.g. an SSH fleet of rented nodes)

    def __post_init__(self) -> None:
        if self.name is not None and not _NAME_RE.match(self.name):
            raise UsageError(f"--name {self.name!r}: use 2-41 lowercase letters, digits or dashes, starting "
                             "with a letter (the strictest of SkyPilot, dstack and Kubernetes names)")
        if self.image is not None and (not self.image.strip() or any(c.isspace() for c in self.image)):
            raise UsageError(f"--image {self.image!r}: an image reference has no spaces")
        if self.script is not None and (not self.script.strip() or "\n" in self.script):
            raise UsageError("--script must be one path, e.g. train.py")
        if self.infra is not None and not _INFRA_RE.match(self.infra):
            raise UsageError(f"--infra {self.infra!r}: give k8s, k8s/<context> or ssh/<node-pool>")
        if self.fleet is not None and not _NAME_RE.match(self.fleet):
            raise UsageError(f"--fleet {self.fleet!r}: a dstack fleet name (lowercase letters, digits, dashes)")
        if not 0 <= self.max_restarts <= 1000:
            raise UsageError(f"--max-restarts {self.max_restarts}: give 0 to 1000")
        if not self.checkpoint_dir.startswith("/") or any(c.isspace() for c in self.checkpoint_dir):
            raise UsageError(f"checkpoint dir {self.checkpoint_dir!r}: give an absolute path without spaces")


@dataclass
class ExportResult:
    """The file text, the warnings the user must see, and how to launch it."""

    target: str
    text: str
    warnings: list[str] = field(default_factory=list)
    launch: str = ""  # '<this file>' stands for the path the text is written to
    # Further files the launch needs, written next to the main one: {file name: text}
    # (dstack: the cluster fleet a multi-node task runs on).
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class Context:
    """One plan plus everything derived from it that several sections of a file need."""

    plan: Plan
    summary: dict[str, Any]
    options: ExportOptions
    name: str
    vendor: str
    gpus_per_node: int
    warnings: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)


# ---------------------------------------------------------------- reading plans

def load_plan_result(source: str | Path, stdin_text: str | None = None) -> PlanResult:
    """A `gpuplan plan ... --json` file ('-' = stdin) as a PlanResult; any defect is one line.

    The file is checked by its values before anything is built from it (gpuplan.planfile: size and
    nesting before parsing, no NaN/Infinity, node and GPU counts, lengths, precision in range)."""
    from gpuplan.planfile import load_plan_file

    label = "stdin" if str(source) == "-" else str(source)
    return parse_plan_result(load_plan_file(source, stdin_text), label)


def parse_plan_result(data: Any, label: str = "plan") -> PlanResult:
    from pydantic import ValidationError

    if not isinstance(data, dict) or "plans" not in data:
        raise UsageError(f"{label}: not a plan result (expected an object with 'plans', as `gpuplan plan ... --json` prints)")
    try:
        return PlanResult.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UsageError(f"{label}: invalid plan at {where}: {err['msg']}") from None


def select_plan(result: PlanResult, rank: int | None = None) -> Plan:
    """The plan with this rank (default: the best one)."""
    if not result.plans:
        raise UsageError("the plan file holds no plans (every offer was rejected); nothing to export")
    if rank is None:
        return min(result.plans, key=lambda p: p.rank)
    for p in result.plans:
        if p.rank == rank:
            return p
    ranks = sorted(p.rank for p in result.plans)
    raise UsageError(f"--rank {rank}: no such plan; this file has ranks {ranks[0]}..{ranks[-1]}"
                     if ranks == list(range(ranks[0], ranks[-1] + 1)) else f"--rank {rank}: no such plan; ranks: {ranks}")


# ---------------------------------------------------------------- context

def make_context(plan: Plan, summary: dict[str, Any] | None, options: ExportOptions) -> Context:
    gpn = plan.gpus_per_node
    if gpn < 1 or abs(gpn - round(gpn)) > 1e-9:
        raise UsageError(f"plan rank {plan.rank} rents {gpn:g} GPUs per node (a fractional slice); "
                         "orchestrators schedule whole GPUs, so it cannot be exported")
    summary = dict(summary or {})
    vendor = gpu_vendor(plan.gpu)
    ctx = Context(plan=plan, summary=summary, options=options, name=options.name or default_name(plan, summary),
                  vendor=vendor, gpus_per_node=int(round(gpn)))
    if plan.workload == "train":
        lay = plan.layout
        model_parallel = lay.tp * lay.pp * lay.cp
        if model_parallel * lay.dp != plan.gpus:
            ctx.warn(f"layout tp*pp*cp*dp = {model_parallel * lay.dp} differs from the plan's {plan.gpus} GPUs; "
                     "the launcher derives data parallelism from the world size")
    if plan.pricing == "reserved":
        term = f" ({plan.offer.commitment_term_h:g} h term)" if plan.offer.commitment_term_h else ""
        ctx.warn(f"the plan prices reserved capacity{term}: buy the reservation first and point the launch at it, "
                 "or it runs (and bills) at on-demand rates")
    for w in plan.warnings:
        ctx.warn(f"plan: {w}")
    if plan.stale:
        ctx.warn(f"the price behind this plan is {plan.price_age_days} days old; check it before launching")
    return ctx


@lru_cache(maxsize=None)
def _vendor_of(gpu_id: str) -> str:
    from gpuplan.catalog.gpus import get_gpu

    try:
        return get_gpu(gpu_id).vendor.lower()
    except Exception:  # noqa: BLE001 - an id the catalog lost still exports, as NVIDIA's default
        return ""


def gpu_vendor(gpu_id: str) -> str:
    """nvidia | amd | intel | google; ids the catalog does not know are read from their prefix."""
    v = _vendor_of(gpu_id)
    if v:
        return v
    g = gpu_id.upper()
    if g.startswith("MI"):
        return "amd"
    if g.startswith("GAUDI"):
        return "intel"
    if g.startswith("TPU"):
        return "google"
    return "nvidia"


def default_name(plan: Plan, summary: dict[str, Any]) -> str:
    """'<model>-<workload>', cut to a name every orchestrator accepts."""
    model = str(summary.get("model") or "model")
    base = re.sub(r"[^a-z0-9]+", "-", f"{model}-{plan.workload}".lower()).strip("-")
    if not base or not base[0].isalpha():
        base = f"gp-{base}".strip("-")
    base = base[:41].rstrip("-")
    return base if len(base) >= 2 else "gpuplan-job"


_HF_REPO_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _preset_id(name: str) -> str | None:
    try:
        from gpuplan.models.presets import resolve_preset_id

        return resolve_preset_id(name)
    except Exception:  # noqa: BLE001 - a name the presets cannot read is simply not a preset
        return None


def model_spec(ctx: Context):
    """The plan's ModelSpec (preset, config.json path or --params), or None when it cannot be rebuilt."""
    name = str(ctx.summary.get("model") or "")
    if not name:
        return None
    try:
        from gpuplan.models import resolve_model

        return resolve_model(name)
    except Exception:  # noqa: BLE001 - a model from --params or a lost config.json: no spec
        return None


def base_model_id(ctx: Context) -> str | None:
    """The Hugging Face repo of the plan's model as published (the base checkpoint for presets)."""
    name = str(ctx.summary.get("model") or "")
    if _HF_REPO_RE.match(name) and not name.startswith((".", "/")) and not name.endswith(".json"):
        return name
    pid = _preset_id(name)
    if pid:
        from gpuplan.models.presets import preset_record

        rec = preset_record(pid)
        if rec.get("hf_id"):
            return str(rec["hf_id"])
    spec = model_spec(ctx)
    m = re.match(r"https?://huggingface\.co/([^/\s]+/[^/\s]+)", (spec.source if spec else "") or "")
    return m.group(1) if m else None


def model_id(ctx: Context) -> str:
    """The Hugging Face repo to serve: --model-id; a repo id the plan was made for; the chat/instruct
    checkpoint of the preset (data/serving.json); else the preset's own repo."""
    if ctx.options.model_id:
        return ctx.options.model_id
    name = str(ctx.summary.get("model") or "")
    if not name:
        raise UsageError("the plan names no model; pass --model-id (a Hugging Face repo id)")
    if _HF_REPO_RE.match(name) and not name.startswith((".", "/")) and not name.endswith(".json"):
        return name  # planned for an exact repo (e.g. an -Instruct one): serve exactly that
    pid = _preset_id(name)
    instruct = data_map("serving")["instruct_hf_id"].get(pid or "")
    if instruct:
        return instruct
    base = base_model_id(ctx)
    if base:
        return base
    ctx.warn(f"model {name!r} has no Hugging Face repo on record; the files serve {name!r}: "
             "pass --model-id org/repo")
    return name


# ---------------------------------------------------------------- launch environment

def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}" if math.isfinite(v) else str(v)
    return str(v)


def train_env(ctx: Context) -> dict[str, str]:
    """The layout and run settings as environment variables (all strings, for every orchestrator)."""
    p, lay, s = ctx.plan, ctx.plan.layout, ctx.summary
    env: dict[str, Any] = {
        "MODEL": s.get("model", ""),
        "NNODES": p.nodes, "GPUS_PER_NODE": ctx.gpus_per_node, "WORLD_SIZE_GPUS": p.gpus,
        "TP_SIZE": lay.tp, "PP_SIZE": lay.pp, "CP_SIZE": lay.cp, "DP_SIZE": lay.dp, "EP_SIZE": lay.ep,
        "ETP_SIZE": lay.tp if lay.etp is None else lay.etp, "VP_SIZE": lay.vp,
        "PRECISION": p.precision,
    }
    if lay.micro_batch is not None:
        env["MICRO_BATCH"] = lay.micro_batch
    if global_batch(ctx) is not None:
        env["GLOBAL_BATCH"] = global_batch(ctx)
    if s.get("seq_len") is not None:
        env["SEQ_LEN"] = s["seq_len"]
    if s.get("tokens") is not None:
        env["TRAIN_TOKENS"] = int(float(s["tokens"]))
    if s.get("method"):
        env["METHOD"] = s["method"]
    if s.get("method") in ("lora", "qlora") and s.get("lora_rank"):
        env["LORA_RANK"] = s["lora_rank"]
    env["RECOMPUTE"] = lay.recompute or "none"
    if lay.zero is not None:
        env["ZERO_STAGE"] = lay.zero
    if p.checkpoint_interval_min is not None:
        env["CHECKPOINT_INTERVAL_MIN"] = round(p.checkpoint_interval_min, 1)
        steps = save_interval_steps(ctx)
        if steps is not None:
            env["SAVE_INTERVAL_STEPS"] = steps
    env["CHECKPOINT_DIR"] = ctx.options.checkpoint_dir
    return {k: _fmt(v) for k, v in env.items() if v != ""}


def global_batch(ctx: Context) -> int | None:
    """The plan's global batch (sequences), rounded up as the layout search rounded it: to a multiple of micro batch x
    data parallel, which trainers require, and with interleaved stages of whole groups of pp micro-batches, which
    Megatron's interleaved schedule requires (the planner's batch is per request, not per layout)."""
    try:
        gb = int(round(float(ctx.summary["global_batch"])))
    except (KeyError, TypeError, ValueError):
        return None
    from gpuplan.perf.workload import batch_unit

    lay = ctx.plan.layout
    unit = max(1, batch_unit(lay.dp, lay.micro_batch or 1, lay.pp, lay.vp))
    rounded = max(unit, -(-gb // unit) * unit)
    if rounded != gb:
        interleaved = lay.pp > 1 and lay.vp > 1
        what = "micro batch x data parallel" + (" x pipeline stages (interleaved)" if interleaved else "")
        ctx.warn(f"global batch {gb} is not a multiple of {what} = {unit}: the files use {rounded} sequences")
    return rounded


def save_interval_steps(ctx: Context) -> int | None:
    """The checkpoint interval in optimizer steps, from the plan's own step time (tokens per step and
    expected wall time); Megatron-style trainers count saves in steps, not minutes."""
    p, s = ctx.plan, ctx.summary
    try:
        tokens, gb, seq = float(s["tokens"]), float(s["global_batch"]), float(s["seq_len"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (p.checkpoint_interval_min and tokens > 0 and gb > 0 and seq > 0 and p.wall_hours > 0):
        return None
    steps_total = tokens / (gb * seq)
    step_s = p.wall_hours * 3600 / steps_total
    return max(1, int(p.checkpoint_interval_min * 60 / step_s))


def serve_layout(ctx: Context) -> tuple[int, int, int]:
    """(tensor parallel, engine processes per node, nodes): a node runs replicas_per_node data-parallel
    copies of the model, so one orchestrator replica = one node of the plan."""
    p = ctx.plan
    tp = max(1, p.gpus_per_replica or p.layout.tp)
    if tp > ctx.gpus_per_node:
        raise UsageError(f"plan rank {p.rank} shards a replica over {tp} GPUs but a node has {ctx.gpus_per_node}; "
                         "multi-node serving replicas are not exported")
    per_node = max(1, ctx.gpus_per_node // tp)
    return tp, per_node, p.nodes


def serve_max_len(ctx: Context) -> int | None:
    """The longest request the plan was sized for: its input + output lengths (the engine refuses longer)."""
    s = ctx.summary
    try:
        n = int(s["input_len"]) + int(s["output_len"])
    except (KeyError, TypeError, ValueError):
        return None
    return n if n > 0 else None


def serve_command(ctx: Context) -> tuple[str, str]:
    """(engine, command line) for an OpenAI-compatible server on SERVE_PORT, at the plan's precision,
    context length, memory share and batch limits."""
    tp, per_node, _ = serve_layout(ctx)
    s, a = ctx.summary, ctx.plan.assumptions
    engine = str(s.get("engine") or "vllm").lower()
    model = model_id(ctx)
    weights = str(ctx.plan.precision or s.get("precision") or "bf16").lower()
    kv = str(s.get("kv_precision") or "").lower()
    spec = model_spec(ctx)
    native = (spec.native_precision if spec else "bf16").lower()
    max_len = serve_max_len(ctx)
    if max_len and spec and max_len > spec.max_seq_len:
        ctx.warn(f"requests of {max_len} tokens exceed {spec.name}'s {spec.max_seq_len}-token context: "
                 f"the engine is capped there")
        max_len = spec.max_seq_len
    if weights == "bf16" and not supports_bf16(ctx.plan.gpu):
        ctx.warn(f"{ctx.plan.gpu} has no BF16 support: the engine runs in FP16")
        weights = "fp16"
    if engine == "trtllm":
        ctx.warn("TensorRT-LLM needs an engine build step; the files serve with vLLM at the same layout")
        engine = "vllm"
    if ctx.vendor == "intel" and engine != "vllm":
        ctx.warn(f"{engine} has no Intel Gaudi build; the files serve with vLLM (Gaudi plugin)")
        engine = "vllm"
    prequantized = weights == native and weights in ("fp8", "int8", "int4", "fp4")
    if weights in ("int4", "int8", "fp4") and not prequantized and not ctx.options.model_id:
        ctx.warn(f"{weights} weights need a pre-quantized checkpoint (AWQ/GPTQ/NVFP4): point --model-id at one")
    # Activations/unquantized layers: bf16 unless the GPU lacks it.
    dtype = "float16" if (weights == "fp16" or not supports_bf16(ctx.plan.gpu)) else "bfloat16"
    online_fp8 = weights == "fp8" and not prequantized  # quantize a 16-bit checkpoint at load time
    # A repo whose tokenizer or model class is its own code (data/serving.json remote_code) loads only with it allowed.
    pid = _preset_id(str(s.get("model") or ""))
    remote_code = bool(pid) and pid in data_map("serving").get("remote_code", {})
    if remote_code:
        ctx.warn(f"{model} loads its own tokenizer code: the launch passes --trust-remote-code (it runs that repo's code)")
    mem = a.get("memory_fraction")
    mem = float(mem) if isinstance(mem, (int, float)) and 0.1 <= float(mem) <= 0.99 else None
    seqs = a.get("max_num_seqs")
    batched = a.get("max_num_batched_tokens")
    if engine == "sglang":
        parts = ["python3", "-m", "sglang.launch_server", "--model-path", shlex.quote(model), "--host", "0.0.0.0",
                 "--port", str(SERVE_PORT), "--tp", str(tp)]
        if per_node > 1:
            parts += ["--dp", str(per_node)]
        parts += ["--dtype", dtype]
        if remote_code:
            parts += ["--trust-remote-code"]
        if online_fp8:
            parts += ["--quantization", "fp8"]
        if kv == "fp8":
            parts += ["--kv-cache-dtype", "fp8_e5m2"]
        if max_len:
            parts += ["--context-length", str(max_len)]
        if mem:
            parts += ["--mem-fraction-static", f"{mem:g}"]
        if isinstance(seqs, int) and seqs > 0:
            parts += ["--max-running-requests", str(seqs)]
        return engine, " ".join(parts)
    parts = ["vllm", "serve", shlex.quote(model), "--host", "0.0.0.0", "--port", str(SERVE_PORT),
             "--tensor-parallel-size", str(tp)]
    if per_node > 1:
        parts += ["--data-parallel-size", str(per_node)]
    parts += ["--dtype", dtype]
    if remote_code:
        parts += ["--trust-remote-code"]
    if online_fp8:
        parts += ["--quantization", "fp8"]
    if kv == "fp8":
        parts += ["--kv-cache-dtype", "fp8"]
    if max_len:
        parts += ["--max-model-len", str(max_len)]
    if mem:
        parts += ["--gpu-memory-utilization", f"{mem:g}"]
    if isinstance(seqs, int) and seqs > 0:
        parts += ["--max-num-seqs", str(seqs)]
    if isinstance(batched, int) and batched > 0 and (not max_len or batched >= max_len):
        parts += ["--max-num-batched-tokens", str(batched)]
    return "vllm", " ".join(parts)


def serve_setup(ctx: Context, engine: str) -> tuple[str | None, list[str]]:
    """(image, install lines) for the engine on this GPU vendor: ROCm and Gaudi builds run in their
    vendor's image (the pip wheels are CUDA builds); NVIDIA may pip-install on the host."""
    image = ctx.options.image or default_image(ctx, engine)
    if ctx.vendor == "intel":
        ctx.warn(data_map("serving")["gaudi_note"])
        return image, []
    if ctx.vendor != "nvidia":
        return image, []
    return None, ["pip install vllm" if engine == "vllm" else "pip install 'sglang[all]'"]


# ---------------------------------------------------------------- network

def fabric(ctx: Context) -> str:
    """The inter-node fabric the plan assumed (its assumptions, else the offer's own network)."""
    f = str(ctx.plan.assumptions.get("fabric") or "").lower()
    if not f:
        try:
            from gpuplan.planner.network import offer_network

            f = offer_network(ctx.plan.offer).fabric
        except Exception:  # noqa: BLE001 - an offer the network table cannot read: pessimistic
            f = "unknown"
    return f


def fast_fabric(ctx: Context) -> str | None:
    """The RDMA-class fabric a multi-node training plan relies on, or None (one node, serving, TCP)."""
    if ctx.plan.workload != "train" or ctx.plan.nodes <= 1:
        return None
    f = fabric(ctx)
    return f if f in data_map("network")["fast_fabrics"] else None


def network_env(ctx: Context) -> dict[str, str]:
    """NCCL/RCCL settings for the fabric of a multi-node training plan ({} for one node)."""
    if ctx.plan.workload != "train" or ctx.plan.nodes <= 1:
        return {}
    m = data_map("network")
    f = fast_fabric(ctx) or "tcp"
    env = dict(m["nccl_env"][f])
    if f in ("infiniband", "roce"):
        env.update(m["provider_nccl_env"].get(ctx.plan.provider, {}))
    env.update(m["nccl_debug_env"])
    return env


def network_notes(ctx: Context) -> list[str]:
    """What the user must know about the fabric (one note per fact), for multi-node training plans."""
    if ctx.plan.workload != "train" or ctx.plan.nodes <= 1:
        return []
    m = data_map("network")
    f = fast_fabric(ctx)
    gbps = ctx.plan.assumptions.get("fabric_gbps_per_node")
    speed = f" at {float(gbps):,.0f} Gb/s per node" if isinstance(gbps, (int, float)) else ""
    notes = []
    if f is None:
        ctx.warn(f"the plan runs {ctx.plan.nodes} nodes over {fabric(ctx)} (TCP){speed}: gradient sync is "
                 "slow and the plan's time assumes exactly that")
        notes.append(m["fabric_notes"]["tcp"])
    else:
        notes.append(f"the plan assumed {f}{speed}; " + m["fabric_notes"][f])
    if ctx.plan.provider in m["provider_notes"]:
        notes.append(m["provider_notes"][ctx.plan.provider])
    return notes


# ---------------------------------------------------------------- training launchers

def model_parallel(ctx: Context) -> bool:
    lay = ctx.plan.layout
    return max(lay.tp, lay.pp, lay.cp, lay.ep) > 1


def megatron_pretraining(ctx: Context) -> bool:
    """Pre-training timed on Megatron's stack (the default framework) of a model whose shape the template knows: the
    Megatron-LM template runs it as timed even without model parallelism (distributed optimizer = ZeRO-1). Plan files
    that do not say `kind` keep the accelerate launch they had."""
    s = ctx.summary
    return (str(s.get("kind") or "").lower() == "pretrain" and str(s.get("framework") or "megatron") == "megatron"
            and ctx.vendor in ("nvidia", "amd") and model_spec(ctx) is not None)


def fine_tuning(ctx: Context) -> bool:
    """Whether the plan fine-tunes a published model (LoRA / QLoRA, or full fine-tuning over a data set's epochs) rather
    than pre-training; plan files from before the summary said so count LoRA and QLoRA."""
    s = ctx.summary
    return str(s.get("kind") or "").lower() == "finetune" or str(s.get("method") or "").lower() in ("lora", "qlora")


def zero_stage(ctx: Context) -> int:
    z = ctx.plan.layout.zero
    return int(z) if z is not None else 0


def _precision(ctx: Context) -> str:
    prec = ctx.plan.precision.lower()
    if prec == "bf16" and not supports_bf16(ctx.plan.gpu):
        ctx.warn(f"{ctx.plan.gpu} has no BF16 support: the training flags ask for FP16 (with loss scaling)")
        prec = "fp16"
    return prec


@dataclass
class TrainLaunch:
    """How one node starts its share of the training: what to install once, what to run, what to set."""

    kind: str  # megatron | accelerate | script
    setup: list[str]
    run: list[str]
    env: dict[str, str]
    image: str | None
    notes: list[str]


def training_image(ctx: Context, kind: str) -> str | None:
    images = data_map("images")
    if ctx.vendor == "nvidia" and ctx.plan.gpu in images["cuda12_gpus"]:
        return images["cuda12"]
    if kind == "megatron":
        return images["megatron"].get(ctx.vendor) or images["train"].get(ctx.vendor)
    return images["train"].get(ctx.vendor)


def cross_node_ep(ctx: Context) -> bool:
    """Whether the plan's expert-parallel group leaves its NVLink domain (the node, or an NVL72 rack, as the planner
    recorded it): its ranks are consecutive when the experts are folded over TP (etp 1), otherwise tp x cp apart."""
    lay = ctx.plan.layout
    stride = 1 if lay.experts_folded else lay.tp * lay.cp
    domain = max(int(ctx.plan.assumptions.get("nvlink_domain_gpus") or 0), int(ctx.gpus_per_node or 1))
    return lay.ep * stride > domain


def megatron_args(ctx: Context) -> list[str]:
    """Megatron-LM flags for the layout, precision, ZeRO stage and checkpoints (the env vars carry the same
    for other trainers)."""
    lay, s = ctx.plan.layout, ctx.summary
    args = ["--tensor-model-parallel-size", str(lay.tp), "--pipeline-model-parallel-size", str(lay.pp)]
    if lay.cp > 1:
        args += ["--context-parallel-size", str(lay.cp)]
    if lay.ep > 1:
        args += ["--expert-model-parallel-size", str(lay.ep)]
    if lay.experts_folded:  # experts whole on their EP ranks (MoE parallel folding)
        args += ["--expert-tensor-parallel-size", str(lay.etp)]
    if lay.ep > 1 and cross_node_ep(ctx):
        fix = ("install DeepEP in the image and pass --moe-token-dispatcher-type flex --moe-enable-deepep"
               if ctx.vendor == "nvidia" else "switch to your Megatron fork's tuned dispatcher if it has one")
        ctx.warn(f"expert parallelism (EP{lay.ep}) leaves the NVLink domain: the plan times its all-to-all as DeepEP / "
                 "HybridEP run it (one copy of a token per remote node, not overlapped); the file launches NCCL's "
                 "all-to-all (a copy per selected expert), which published A/B pairs ran 1.3-1.4x slower per step "
                 "(XTuner's Qwen3-235B on 256 H800, torchtitan's DeepSeek-V3 on 256 B200; `gpuplan estimate train "
                 "--moe-dispatcher alltoall` times it): " + fix)
    args += _pipeline_split_args(ctx)
    if lay.tp > 1:
        args += ["--sequence-parallel"]
    if lay.micro_batch is not None:
        args += ["--micro-batch-size", str(lay.micro_batch)]
    if global_batch(ctx) is not None:
        args += ["--global-batch-size", str(global_batch(ctx))]
    if s.get("seq_len") is not None:
        args += ["--seq-length", _fmt(s["seq_len"])]
    prec = _precision(ctx)
    if prec == "fp16":
        args += ["--fp16"]
    elif prec in ("bf16", "fp8", "fp4"):
        args += ["--bf16"]
    if prec == "fp8":
        args += ["--fp8-format", "hybrid"]
    elif prec == "fp4":
        ctx.warn("FP4 training flags depend on your framework version; the files pass --bf16 and PRECISION=fp4")
    rec = (lay.recompute or "none").lower()
    if rec == "full":
        args += ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]
    elif rec == "selective":
        args += ["--recompute-granularity", "selective"]
    z = zero_stage(ctx)
    fsdp = data_map("training")["megatron"]["fsdp_strategy"].get(str(z))
    if fsdp:
        # ZeRO-2/3: Megatron-FSDP shards gradients (and, for 3, parameters) as the plan's memory assumed.
        args += ["--use-megatron-fsdp", "--data-parallel-sharding-strategy", fsdp, "--use-distributed-optimizer",
                 "--no-gradient-accumulation-fusion", "--ckpt-format", "fsdp_dtensor"]
    elif z >= 1:
        args += ["--use-distributed-optimizer"]  # ZeRO-1: optimizer state sharded over data parallel
    # The data-parallel overlap the plan times: Megatron's default runs the gradient reduction after the backward and
    # the weight gather before the forward, both exposed; with these it buckets them behind the compute.
    args += ["--overlap-grad-reduce"] + (["--overlap-param-gather"] if z >= 1 else [])
    args += _gradient_dtype_args(ctx, prec)
    steps = save_interval_steps(ctx)
    args += ["--save", ctx.options.checkpoint_dir, "--load", ctx.options.checkpoint_dir]
    if steps is not None:
        args += ["--save-interval", str(steps)]
    return args


def _pipeline_split_args(ctx: Context) -> list[str]:
    """The plan's pipeline: its interleaved chunks (vp), and layer counts that do not split evenly over the stages,
    which Megatron-LM refuses without a split (the plan's fullest stage holds ceil(layers / pp)). Even splits use the
    long-standing per-chunk flag; uneven ones core_v0.15.0's explicit layout (chunk k of stage s is entry k * pp + s,
    the embedding before the first, the loss after the last), or the first / last stage sizes on forks without it."""
    lay = ctx.plan.layout
    p, v = int(lay.pp), int(lay.vp or 1)
    m = model_spec(ctx)
    if p <= 1 or m is None:
        if p > 1 and v > 1:
            ctx.warn(f"the model's layer count is unknown: set --num-layers-per-virtual-pipeline-stage for the plan's "
                     f"{v} interleaved chunks per stage")
        return []
    n = int(m.n_layers)
    per_stage, rest = divmod(n, p)
    if not rest and v == 1:
        return []
    if not rest and per_stage % v == 0:
        return ["--num-layers-per-virtual-pipeline-stage", str(per_stage // v)]
    if ctx.vendor == "nvidia":
        base, extra = divmod(n, p * v)
        chunks = [f"t*{base + (k < extra)}" for k in range(p * v)]
        return ["--pipeline-model-parallel-layout", "E" + "|".join(chunks) + "L"]
    if v == 1:  # the first p - 1 stages hold ceil(n / p) layers, the last the remainder
        full = -(-n // p)
        last = n - full * (p - 1)
        if last >= 1:
            return ["--decoder-last-pipeline-num-layers", str(last)]
        first = (n - full * (p - 2)) // 2
        return ["--decoder-first-pipeline-num-layers", str(first),
                "--decoder-last-pipeline-num-layers", str(n - full * (p - 2) - first)]
    ctx.warn(f"{n} layers do not split into {p} stages x {v} interleaved chunks evenly, and this vendor's Megatron "
             f"fork may not take --pipeline-model-parallel-layout: the file runs without interleaving (a larger "
             f"pipeline bubble than the plan timed); add the layout flag if your image has it")
    return []


def _gradient_dtype_args(ctx: Context, prec: str) -> list[str]:
    """Gradient buffers and reduction in the precision the plan's memory and time assumed. Under --bf16 Megatron-LM
    keeps fp32 gradient buffers and reduces in fp32 unless told otherwise (arguments.py: 2 bytes more per parameter
    and twice the data-parallel traffic); the plans assume bf16 gradients, as NVIDIA's tuned recipes set them
    (Megatron-Bridge perf_recipes: ddp.grad_reduce_in_fp32 = False). A plan from `--fp32-grads` keeps the default."""
    if prec not in ("bf16", "fp8", "fp4") or str(ctx.summary.get("gradient_bytes", 2)).strip() in ("4", "4.0"):
        return []
    if ctx.vendor == "nvidia":
        return ["--grad-reduce-in-bf16"]  # Megatron-LM core_v0.12.0 and later
    ctx.warn("the plan assumes bf16 gradient buffers; this vendor's Megatron fork may not take --grad-reduce-in-bf16 "
             "(NVIDIA Megatron-LM core_v0.12.0+), so the file keeps Megatron's fp32 buffers: 2 bytes more per "
             "parameter than the plan's memory and twice its data-parallel traffic; add the flag if your image has it")
    return []


def megatron_model_args(ctx: Context) -> list[str] | None:
    """Megatron-LM architecture flags for the plan's model, or None when its shape is unknown. A linear-attention
    hybrid is refused: pretrain_gpt.py builds softmax attention in every layer."""
    m = model_spec(ctx)
    if m is None:
        return None
    if m.n_linear_attention_layers:
        kind = LINEAR_KIND_LABELS[m.linear_attention_kind]
        raise UsageError(f"the plan's model {m.name!r} is a {kind} hybrid and the template launches Megatron-LM's "
                         "pretrain_gpt.py, which builds softmax attention in every layer: pass --script (your hybrid "
                         "entry point, e.g. Megatron-LM's pretrain_hybrid.py with --hybrid-layer-pattern) to launch it")
    s = ctx.summary
    seq = int(float(s.get("seq_len") or min(m.max_seq_len, 4096)))
    args = ["--num-layers", str(m.n_layers), "--hidden-size", str(m.hidden_size),
            "--num-attention-heads", str(m.n_heads), "--kv-channels", str(m.head_dim),
            "--max-position-embeddings", str(seq),
            "--position-embedding-type", "rope", "--attention-dropout", "0.0", "--hidden-dropout", "0.0"]
    if m.n_kv_heads < m.n_heads:
        args += ["--group-query-attention", "--num-query-groups", str(m.n_kv_heads)]
    if m.q_lora_rank or m.kv_lora_rank:
        args += ["--multi-latent-attention", "--kv-lora-rank", str(m.kv_lora_rank)]
        if m.q_lora_rank:
            args += ["--q-lora-rank", str(m.q_lora_rank)]
        if m.qk_nope_head_dim:
            args += ["--qk-head-dim", str(m.qk_nope_head_dim)]
        if m.qk_rope_head_dim:
            args += ["--qk-pos-emb-head-dim", str(m.qk_rope_head_dim)]
        if m.v_head_dim:
            args += ["--v-head-dim", str(m.v_head_dim)]
    if m.n_experts:
        args += ["--num-experts", str(m.n_experts), "--moe-router-topk", str(max(1, m.n_active_experts)),
                 "--moe-ffn-hidden-size", str(m.expert_ffn_size or m.ffn_size)]
        # What the estimate assumes of a tuned MoE recipe: an all-to-all dispatcher (Megatron's default is all-gather)
        # with the router in fp32, and on NVIDIA one grouped GEMM over the local experts and TE's fused permutation (the
        # ROCm fork's support for both is not documented: not passed there, and said so).
        args += ["--moe-token-dispatcher-type", "alltoall", "--moe-router-dtype", "fp32"]
        if ctx.vendor == "nvidia":
            args += ["--moe-grouped-gemm", "--moe-permute-fusion"]
        else:
            ctx.warn("the estimate times the experts as one grouped GEMM; the file does not pass --moe-grouped-gemm on "
                     "this vendor's Megatron fork (support not documented): add it if your image has it")
        if m.n_shared_experts and m.shared_expert_ffn_size:
            args += ["--moe-shared-expert-intermediate-size", str(m.n_shared_experts * m.shared_expert_ffn_size)]
        if getattr(m, "moe_layer_step", 1) > 1:  # e.g. Llama 4 Maverick: every 2nd layer carries the experts
            mask = m.moe_layer_mask()
            args += ["--moe-layer-freq", "[" + ",".join("1" if x else "0" for x in mask) + "]"]
        elif m.n_dense_layers:
            args += ["--moe-layer-freq", f"([0]*{m.n_dense_layers}+[1]*{m.n_layers - m.n_dense_layers})"]
    args += ["--ffn-hidden-size", str(m.ffn_size)]
    if m.gated_ffn:
        args += ["--swiglu", "--normalization", "RMSNorm"]
    if not m.tied_embeddings:
        args += ["--untie-embeddings-and-output-weights"]
    args += ["--disable-bias-linear"]
    if m.qkv_bias:
        args += ["--add-qkv-bias"]
    if m.sliding_window:
        ctx.warn(f"{m.name} uses sliding-window attention, which the Megatron flags do not set")
    return args


def _megatron_training_args(ctx: Context) -> list[str]:
    """Schedule and optimizer: the run length from the plan's tokens; common hyperparameters, each
    overridable from the environment (LR, MIN_LR, WARMUP_FRACTION is fixed at 1%)."""
    s = ctx.summary
    args: list[str] = []
    try:
        samples = int(float(s["tokens"]) / float(s["seq_len"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        samples = 0
    if samples > 0:
        args += ["--train-samples", str(samples), "--lr-decay-samples", str(samples),
                 "--lr-warmup-samples", str(max(1, samples // 100))]
    else:
        ctx.warn("the plan gives no token count and sequence length: set --train-samples in the Megatron command")
    args += ["--lr", "${LR:-3.0e-4}", "--min-lr", "${MIN_LR:-3.0e-5}", "--lr-decay-style", "cosine",
             "--weight-decay", "0.1", "--clip-grad", "1.0", "--adam-beta1", "0.9", "--adam-beta2", "0.95",
             "--log-interval", "10", "--eval-interval", "1000", "--eval-iters", "10", "--exit-signal-handler"]
    return args


def _q(parts: list[str]) -> str:
    """Shell words; ${VAR...} and "$VAR" stay expandable, everything else is quoted."""
    out = []
    for a in parts:
        if "$" in a:  # an orchestrator or user variable: double quotes keep it expandable
            out.append('"' + a.replace('"', '\\"') + '"')
        else:
            out.append(shlex.quote(a))
    return " ".join(out)


def _torchrun(ctx: Context, nnodes: str, nproc: str, node_rank: str, master_addr: str, master_port: str) -> list[str]:
    parts = ["torchrun", f"--nnodes={nnodes}", f"--nproc-per-node={nproc}"]
    if ctx.plan.nodes > 1:
        parts += [f"--node-rank={node_rank}", f"--master-addr={master_addr}", f"--master-port={master_port}"]
    else:
        parts += ["--standalone"]
    return parts


def torchrun_command(ctx: Context, nnodes: str, nproc: str, node_rank: str, master_addr: str,
                     master_port: str = str(MASTER_PORT), script: str | None = None) -> str:
    """One torchrun line for a user's script; Megatron-style flags follow when the layout is model parallel
    (orchestrator expressions such as "$SKYPILOT_NODE_RANK" are passed through)."""
    script_args = list(ctx.options.script_args)
    if ctx.options.megatron_args and model_parallel(ctx):
        script_args = megatron_args(ctx) + script_args
    parts = _torchrun(ctx, nnodes, nproc, node_rank, master_addr, master_port)
    return " ".join(parts + [shlex.quote(script or ctx.options.script or DEFAULT_SCRIPT)]
                    + [shlex.quote(a) for a in script_args])


def _accelerate_command(ctx: Context, node_rank: str, master_addr: str, master_port: str,
                        script: str) -> tuple[list[str], list[str], list[str]]:
    """(command words, python packages, notes) for a pure data-parallel plan: `accelerate launch` with
    the sharding of the plan's ZeRO stage."""
    m = data_map("training")["accelerate"]
    p = ctx.plan
    z = zero_stage(ctx)
    total = p.nodes * ctx.gpus_per_node
    parts = ["accelerate", "launch", "--num_machines", str(p.nodes), "--num_processes", str(total)]
    if p.nodes > 1:
        parts += ["--machine_rank", node_rank, "--main_process_ip", master_addr, "--main_process_port", master_port]
    deps = list(m["python_deps"])
    fsdp = m["fsdp_strategy"].get(str(z))
    if fsdp:
        parts += ["--use_fsdp", "--fsdp_version", "1", "--fsdp_sharding_strategy", fsdp,
                  "--fsdp_auto_wrap_policy", "TRANSFORMER_BASED_WRAP", "--fsdp_state_dict_type", "SHARDED_STATE_DICT"]
        how = f"ZeRO-{z} = FSDP {fsdp}"
    elif z == 1:
        parts += ["--use_deepspeed", "--zero_stage", "1"]
        if p.nodes > 1:
            parts += ["--deepspeed_multinode_launcher", "standard"]
        deps += m["deepspeed_deps"]
        how = "ZeRO-1 = DeepSpeed stage 1 (FSDP cannot shard only the optimizer state)"
    else:
        if total > 1:
            parts += ["--multi_gpu"]
        how = "no ZeRO = DDP"
    prec = _precision(ctx)
    mixed = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}.get(prec, "bf16")
    if prec == "fp4":
        ctx.warn("FP4 training depends on your framework; `accelerate launch` runs bf16 mixed precision")
    if prec == "fp8" and ctx.vendor != "nvidia":
        mixed = "bf16"
        ctx.warn(f"accelerate's FP8 needs NVIDIA TransformerEngine; on {ctx.vendor} it launches bf16")
    if mixed == "fp8" and ctx.summary.get("framework", "megatron") == "megatron":  # timed for Megatron's stack
        ctx.warn("the plan timed FP8 with Megatron's fused casts; accelerate runs TransformerEngine linears whose casts "
                 "are kernels of their own, so expect slower FP8 steps than planned (`gpuplan estimate train "
                 "--framework pytorch` gives the figure)")
    parts += ["--mixed_precision", mixed, script] + list(ctx.options.script_args)
    notes = [f"pure data parallel: `accelerate launch` shards as the plan assumed ({how}); {script} must train "
             "through Accelerate (HF Trainer, TRL and Accelerate loops do), which takes the sharding from the launcher"]
    return parts, deps, notes


def train_launch(ctx: Context, node_rank: str, master_addr: str, master_port: str = str(MASTER_PORT),
                 nnodes: str | None = None, nproc: str | None = None) -> TrainLaunch:
    """The launcher the plan's layout needs, with the fabric's checks (see _train_launch)."""
    return _fabric_checks(ctx, _train_launch(ctx, node_rank, master_addr, master_port, nnodes, nproc))


def _train_launch(ctx: Context, node_rank: str, master_addr: str, master_port: str = str(MASTER_PORT),
                  nnodes: str | None = None, nproc: str | None = None) -> TrainLaunch:
    """The launcher the plan's layout needs: Megatron-LM for model parallelism and for pre-training timed on Megatron's
    stack (the default framework), accelerate (FSDP/DeepSpeed at the ZeRO stage) for other pure data parallelism;
    the user's --script is kept and started the same way."""
    p = ctx.plan
    nnodes = nnodes or str(p.nodes)
    nproc = nproc or str(ctx.gpus_per_node)
    script = ctx.options.script
    notes: list[str] = []
    env: dict[str, str] = {}
    pip_prefix = "PIP_CONSTRAINT= " if ctx.vendor == "nvidia" else ""  # NGC images pin pip globally
    req = "if [ -f requirements.txt ]; then pip install -r requirements.txt; fi"
    if ctx.vendor == "intel":
        ctx.warn("Intel Gaudi: the launch lines are PyTorch/CUDA-style; on Gaudi use optimum-habana "
                 "(gaudi_spawn.py) or Intel's Megatron-DeepSpeed fork with the same layout")
    mp = model_parallel(ctx)
    if mp or (script is None and megatron_pretraining(ctx)):
        fsdp = zero_stage(ctx) >= 2
        if not fsdp:
            env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"  # TP/SP communication overlap
        if script is not None:
            run = [torchrun_command(ctx, nnodes, nproc, node_rank, master_addr, master_port)]
            return TrainLaunch("script", [req], run, env, training_image(ctx, "megatron"), notes)
        if ctx.summary.get("framework") == "pytorch":
            raise UsageError("the plan was timed for a PyTorch-native stack (--framework pytorch) and the template "
                             "launches Megatron-LM: pass --script (your torchtitan / FSDP2 entry point) to launch it")
        if fine_tuning(ctx):
            raise UsageError(f"the plan fine-tunes {ctx.summary.get('model') or 'the model'} "
                             f"({ctx.summary.get('method') or 'full'}) with model parallelism, and the template "
                             "launches Megatron-LM's pretrain_gpt.py, which trains every weight from random "
                             "initialisation: pass --script (your fine-tuning entry point, e.g. a NeMo / "
                             "Megatron-Bridge LoRA or SFT recipe, which takes the layout flags) to launch it")
        mcfg = data_map("training")["megatron"]
        arch = megatron_model_args(ctx)
        if arch is None:
            raise UsageError(f"the plan's model {ctx.summary.get('model')!r} has no known shape for the Megatron-LM "
                             "template; pass --script (your Megatron-style entry point) to launch it")
        amd = ctx.vendor == "amd"
        mdir = mcfg["amd_dir"] if amd else mcfg["dir"]
        tokenizer = base_model_id(ctx)
        setup = []
        if amd:
            setup.append(f'if [ ! -f {mdir}/pretrain_gpt.py ]; then echo "{mdir}/pretrain_gpt.py missing: '
                         'run in the rocm/megatron-lm image" >&2; exit 2; fi')
        else:
            setup.append(f"if [ ! -d {mdir} ]; then git clone --depth 1 --branch {mcfg['ref']} {mcfg['repo']} {mdir}; fi")
        setup.append(f"{pip_prefix}pip install {' '.join(mcfg['python_deps'])}")
        data_args = ["--data-path", "$DATA_PATH", "--split", "99,1,0"]
        if tokenizer:
            data_args += ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", tokenizer]
        else:
            ctx.warn("no Hugging Face tokenizer on record for this model: set --tokenizer-model in the command")
        words = (_torchrun(ctx, nnodes, nproc, node_rank, master_addr, master_port) + [f"{mdir}/pretrain_gpt.py"]
                 + arch + megatron_args(ctx) + _megatron_training_args(ctx) + data_args
                 + list(ctx.options.script_args))
        if "--ckpt-format" not in words:
            words += ["--ckpt-format", "torch_dist"]
        check = ('if [ -z "${DATA_PATH:-}" ]; then echo "set DATA_PATH to your Megatron-preprocessed dataset prefix '
                 '(tools/preprocess_data.py output, on storage every node reads)" >&2; exit 2; fi')
        run = [check, _q(words)]
        env["DATA_PATH"] = ""
        env["MEGATRON_DIR"] = mdir
        etp = f", etp={p.layout.etp}" if p.layout.experts_folded else ""
        what = (f"model parallel (tp={p.layout.tp}, pp={p.layout.pp}, cp={p.layout.cp}, ep={p.layout.ep}{etp})" if mp
                else f"pure data parallel (dp={p.layout.dp}, ZeRO-{zero_stage(ctx)}) pre-training, timed on Megatron's "
                     "stack")
        release = "(AMD ROCm fork in the image)" if amd else mcfg["ref"]
        notes.append(f"{what}: Megatron-LM {release} pretrain_gpt.py with the "
                     "plan's layout; set DATA_PATH before launching, LR/MIN_LR to change the schedule; the model "
                     "flags give the shape the plan was timed on, other architecture settings (RoPE base, QK-norm) "
                     "stay Megatron's defaults: add your model's with --arg")
        if amd and zero_stage(ctx) >= 2:
            ctx.warn("Megatron-FSDP (ZeRO-2/3) flags are from NVIDIA Megatron-LM core_v0.15.0; check that the "
                     "ROCm fork in rocm/megatron-lm accepts --use-megatron-fsdp, or launch with --script")
        return TrainLaunch("megatron", setup, run, env, training_image(ctx, "megatron"), notes)
    words, deps, anotes = _accelerate_command(ctx, node_rank, master_addr, master_port, script or DEFAULT_SCRIPT)
    notes += anotes
    setup = [f"{pip_prefix}pip install {' '.join(shlex.quote(d) for d in deps)}", req]
    return TrainLaunch("script" if script else "accelerate", setup, [_q(words)], env, training_image(ctx, "train"),
                       notes)


def _fabric_checks(ctx: Context, launch: TrainLaunch) -> TrainLaunch:
    """EFA: warn (export and job log) when the image may lack the aws-ofi-nccl plugin NCCL needs for EFA."""
    if fast_fabric(ctx) == "efa":
        m = data_map("network")
        launch.setup.append(m["efa_plugin_check"])
        if not ctx.options.image:
            ctx.warn(m["efa_image_warning"])
    return launch


def launch_env(ctx: Context, launch: TrainLaunch) -> dict[str, str]:
    """Everything a training node's environment carries: layout, run settings, launcher, fabric."""
    env = train_env(ctx)
    env.update(launch.env)
    env.update(network_env(ctx))
    return env


# ---------------------------------------------------------------- data maps, images

@lru_cache(maxsize=None)
def data_map(name: str) -> dict[str, Any]:
    text = resources.files("gpuplan.export").joinpath("data", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def supports_bf16(gpu_id: str) -> bool:
    return gpu_id not in data_map("gpu_features")["no_bf16"]


def default_image(ctx: Context, engine: str | None = None) -> str | None:
    """The vendor's image: ROCm builds on AMD, Habana on Gaudi, CUDA on NVIDIA (CUDA 12 for Volta)."""
    if ctx.plan.workload == "serve":
        return data_map("images")["serve"].get(engine or "vllm", {}).get(ctx.vendor)
    return training_image(ctx, "megatron" if model_parallel(ctx) and ctx.options.script is None else "train")


TARGET_TOOLS = {"skypilot": "SkyPilot", "dstack": "dstack", "k8s": "Kubernetes"}


def supported_targets(provider: str, multi_node: bool = False) -> list[str]:
    """The export targets that can provision on this provider (Kubernetes: any cluster there); for a
    multi-node plan dstack also needs a backend that runs multi-node tasks."""
    out = []
    sky = data_map("skypilot")
    if provider in sky["clouds"] or provider in sky.get("kubernetes_providers", {}):
        out.append("skypilot")
    backend = data_map("dstack")["backends"].get(provider)
    if backend and (not multi_node or backend in data_map("network")["dstack"]["multinode_backends"]):
        out.append("dstack")
    return out + ["k8s"]


def unsupported_provider(ctx: Context, target: str, escape: str, what: str | None = None,
                         reason: str = "") -> UsageError:
    """One line: this orchestrator cannot reach the provider (or run this plan there); which targets can,
    and how to use this one anyway on machines rented there (`escape`)."""
    p = ctx.plan
    others = [t for t in supported_targets(p.provider, p.workload == "train" and p.nodes > 1) if t != target]
    how = " or ".join(f"`gpuplan export {t}`{' (a Kubernetes cluster there)' if t == 'k8s' else ''}" for t in others)
    what = what or "provision on"
    reason = f": {reason}" if reason else ""
    return UsageError(f"{TARGET_TOOLS[target]} cannot {what} {p.provider_name} ({p.provider}){reason}; export plan "
                      f"rank {p.rank} with {how}, or {escape}")


def clean_region(region: str) -> str | None:
    """A single region name an orchestrator can pin, or None ('us-east-2/us-west-2', 'US', '')."""
    r = (region or "").strip()
    return r if re.fullmatch(r"[a-z][a-z0-9-]*[a-z0-9]", r) else None


# ---------------------------------------------------------------- text and files

class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (run scripts) as literal blocks, never folds long
    command lines, and repeats shared sub-documents instead of writing YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_representer(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=YAML_WIDTH)


def dump_yaml_all(docs: list[Any]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                         width=YAML_WIDTH)


def header(ctx: Context, tool: str, launch: str, notes: list[str]) -> str:
    """Comment lines saying what plan this is, what it costs, how to launch, and what to watch."""
    p = ctx.plan
    try:
        from gpuplan import __version__
    except ImportError:  # pragma: no cover
        __version__ = "?"
    region = p.region or "any region"
    lines = [
        f"{tool} file generated by gpuplan {__version__} from plan rank {p.rank} "
        f"({p.workload}, model {ctx.summary.get('model', '?')})",
        f"{p.provider_name} {p.instance_type}: {p.nodes} node(s) x {ctx.gpus_per_node} {p.gpu} = {p.gpus} GPUs, "
        f"{p.pricing.replace('_', '-')}, {region}",
        f"expected ${p.cost_usd:,.0f} (p90 ${p.cost_p90_usd:,.0f}) over {p.wall_hours:,.1f} h; "
        f"price as of {p.offer.as_of.isoformat()} ({p.confidence})",
        f"launch: {launch}",
    ]
    lines += [f"NOTE: {n}" for n in notes]
    lines += [f"WARNING: {w}" for w in ctx.warnings]
    return "".join(f"# {line}\n" for line in lines)


def optional_secret_flags(flag: str) -> str:
    """Shell words passing each secret only when it is set in the launching shell: a missing
    WANDB_API_KEY or HF_TOKEN never fails the launch (SkyPilot and dstack both refuse a declared secret
    without a value, so the files declare none and the launch line adds the ones that exist)."""
    return " ".join(f"${{{k}:+{flag} {k}}}" for k in SECRET_NAMES)
