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
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from gpuplan.errors import UsageError
from gpuplan.files import write_atomic  # noqa: F401  (re-exported by gpuplan.export)
from gpuplan.planner.records import Plan, PlanResult

TARGETS = ("skypilot", "dstack", "k8s")
TARGET_ALIASES = {"sky": "skypilot", "kubernetes": "k8s"}
CHECKPOINT_DIR = "/checkpoints"
MASTER_PORT = 29500
SERVE_PORT = 8000
YAML_WIDTH = 1 << 16  # one command per line, however long
DEFAULT_SCRIPT = "train.py"
# Secrets the launched job usually needs; files reference them by name, never by value.
SECRET_NAMES = ("HF_TOKEN", "WANDB_API_KEY")
_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,39}[a-z0-9]$")


@dataclass(frozen=True)
class ExportOptions:
    """What the user may set on top of the plan; everything else comes from the plan itself."""

    name: str | None = None
    image: str | None = None
    script: str = DEFAULT_SCRIPT
    script_args: tuple[str, ...] = ()
    model_id: str | None = None
    megatron_args: bool = True
    max_restarts: int = 3
    checkpoint_dir: str = CHECKPOINT_DIR

    def __post_init__(self) -> None:
        if self.name is not None and not _NAME_RE.match(self.name):
            raise UsageError(f"--name {self.name!r}: use 2-41 lowercase letters, digits or dashes, starting "
                             "with a letter (the strictest of SkyPilot, dstack and Kubernetes names)")
        if self.image is not None and (not self.image.strip() or any(c.isspace() for c in self.image)):
            raise UsageError(f"--image {self.image!r}: an image reference has no spaces")
        if not self.script.strip() or "\n" in self.script:
            raise UsageError("--script must be one path, e.g. train.py")
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
    launch: str = ""


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
    """A `gpuplan plan ... --json` file ('-' = stdin) as a PlanResult; any defect is one line."""
    label = "stdin" if str(source) == "-" else str(source)
    if str(source) == "-":
        text = stdin_text if stdin_text is not None else sys.stdin.read()
    else:
        path = Path(source)
        if path.is_dir():
            raise UsageError(f"--from {label}: is a directory, not a plan file")
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UsageError(f"--from {label}: no such file (write one with `gpuplan plan ... --json > plan.json`)") from None
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"--from {label}: cannot read it ({e.__class__.__name__})") from None
    if not text.strip():
        raise UsageError(f"--from {label}: empty; expected the JSON of `gpuplan plan ... --json`")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"--from {label}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    return parse_plan_result(data, label)


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


def model_id(ctx: Context) -> str:
    """The Hugging Face repo to serve: --model-id, else the preset's source repo, else its name."""
    if ctx.options.model_id:
        return ctx.options.model_id
    name = str(ctx.summary.get("model") or "")
    if not name:
        raise UsageError("the plan names no model; pass --model-id (a Hugging Face repo id)")
    try:
        from gpuplan.models import resolve_model

        source = resolve_model(name).source or ""
    except Exception:  # noqa: BLE001 - a model from --params has no repo; fall through
        source = ""
    m = re.match(r"https?://huggingface\.co/([^/\s]+/[^/\s]+)", source)
    if m:
        return m.group(1)
    if "/" not in name:
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
        "PRECISION": p.precision,
    }
    if lay.micro_batch is not None:
        env["MICRO_BATCH"] = lay.micro_batch
    if s.get("global_batch") is not None:
        env["GLOBAL_BATCH"] = s["global_batch"]
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


def megatron_args(ctx: Context) -> list[str]:
    """Megatron-LM style flags for the layout (the env vars carry the same for other trainers)."""
    p, lay, s = ctx.plan, ctx.plan.layout, ctx.summary
    args = ["--tensor-model-parallel-size", str(lay.tp), "--pipeline-model-parallel-size", str(lay.pp)]
    if lay.cp > 1:
        args += ["--context-parallel-size", str(lay.cp)]
    if lay.ep > 1:
        args += ["--expert-model-parallel-size", str(lay.ep)]
    if lay.tp > 1:
        args += ["--sequence-parallel"]
    if lay.micro_batch is not None:
        args += ["--micro-batch-size", str(lay.micro_batch)]
    if s.get("global_batch") is not None:
        args += ["--global-batch-size", _fmt(s["global_batch"])]
    if s.get("seq_len") is not None:
        args += ["--seq-length", _fmt(s["seq_len"])]
    prec = p.precision.lower()
    if prec == "bf16" and not supports_bf16(p.gpu):
        ctx.warn(f"{p.gpu} has no BF16 support: the training flags ask for FP16 (with loss scaling)")
        prec = "fp16"
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
    if lay.zero is not None and lay.zero >= 1:
        args += ["--use-distributed-optimizer"]
    steps = save_interval_steps(ctx)
    args += ["--save", ctx.options.checkpoint_dir, "--load", ctx.options.checkpoint_dir]
    if steps is not None:
        args += ["--save-interval", str(steps)]
    return args


def torchrun_command(ctx: Context, nnodes: str, nproc: str, node_rank: str, master_addr: str,
                     master_port: str = str(MASTER_PORT)) -> str:
    """One torchrun line; the arguments are orchestrator expressions (e.g. "$SKYPILOT_NODE_RANK")."""
    script_args = list(ctx.options.script_args)
    if ctx.options.megatron_args:
        script_args = megatron_args(ctx) + script_args
    parts = ["torchrun", f"--nnodes={nnodes}", f"--nproc-per-node={nproc}"]
    if ctx.plan.nodes > 1:
        parts += [f"--node-rank={node_rank}", f"--master-addr={master_addr}", f"--master-port={master_port}"]
    else:
        parts += ["--standalone"]
    parts += [shlex.quote(ctx.options.script)] + [shlex.quote(a) for a in script_args]
    return " ".join(parts)


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


def serve_command(ctx: Context) -> tuple[str, str]:
    """(engine, command line) for an OpenAI-compatible server on SERVE_PORT."""
    tp, per_node, _ = serve_layout(ctx)
    s = ctx.summary
    engine = str(s.get("engine") or "vllm").lower()
    model = model_id(ctx)
    weights = str(ctx.plan.precision or s.get("precision") or "bf16").lower()
    kv = str(s.get("kv_precision") or "").lower()
    max_len = None
    if s.get("input_len") and s.get("output_len"):
        max_len = int(s["input_len"]) + int(s["output_len"])
    if weights == "bf16" and not supports_bf16(ctx.plan.gpu):
        ctx.warn(f"{ctx.plan.gpu} has no BF16 support: the engine runs in FP16")
        weights = "fp16"
    if engine == "trtllm":
        ctx.warn("TensorRT-LLM needs an engine build step; the files serve with vLLM at the same layout")
        engine = "vllm"
    if weights in ("int4", "int8", "fp4"):
        ctx.warn(f"{weights} weights need a pre-quantized checkpoint (AWQ/GPTQ/NVFP4): point --model-id at one")
    if engine == "sglang":
        parts = ["python3", "-m", "sglang.launch_server", "--model-path", shlex.quote(model), "--host", "0.0.0.0",
                 "--port", str(SERVE_PORT), "--tp", str(tp)]
        if per_node > 1:
            parts += ["--dp", str(per_node)]
        if weights == "fp8":
            parts += ["--quantization", "fp8"]
        if kv == "fp8":
            parts += ["--kv-cache-dtype", "fp8_e5m2"]
        if max_len:
            parts += ["--context-length", str(max_len)]
        return engine, " ".join(parts)
    parts = ["vllm", "serve", shlex.quote(model), "--host", "0.0.0.0", "--port", str(SERVE_PORT),
             "--tensor-parallel-size", str(tp)]
    if per_node > 1:
        parts += ["--data-parallel-size", str(per_node)]
    if weights == "fp8":
        parts += ["--quantization", "fp8"]
    elif weights in ("bf16", "fp16"):
        parts += ["--dtype", "bfloat16" if weights == "bf16" else "float16"]
    if kv == "fp8":
        parts += ["--kv-cache-dtype", "fp8"]
    if max_len:
        parts += ["--max-model-len", str(max_len)]
    return "vllm", " ".join(parts)


# ---------------------------------------------------------------- data maps, images

@lru_cache(maxsize=None)
def data_map(name: str) -> dict[str, Any]:
    text = resources.files("gpuplan.export").joinpath("data", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def supports_bf16(gpu_id: str) -> bool:
    return gpu_id not in data_map("gpu_features")["no_bf16"]


def default_image(ctx: Context, engine: str | None = None) -> str | None:
    images = data_map("images")
    table = images["serve"].get(engine or "vllm", {}) if ctx.plan.workload == "serve" else images["train"]
    return table.get(ctx.vendor)


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
