"""Plan files (`gpuplan plan ... --json > plan.json`) read back and checked by their VALUES.

A plan file is user input: it may be hand-edited, truncated or hostile. Pydantic checks its shape;
this module checks what an export would launch before anything is generated:

- refused before parsing: more than MAX_PLAN_BYTES (read at most that much, never the whole of a
  huge file or an endless device), non-UTF-8 text, JSON nested deeper than MAX_DEPTH;
- refused while parsing: NaN, Infinity, -Infinity, numbers that overflow to infinity (1e999) and
  integers too long to convert;
- refused after parsing: node and GPU counts outside 1..MAX_NODES / 1..MAX_GPUS (or disagreeing
  with each other), a non-positive or absurd sequence length, token count, batch or input/output
  length, an unknown precision, a checkpoint interval under MIN_CHECKPOINT_MIN minutes or beyond
  the plan's own horizon, negative or non-finite times and costs, layouts with zero or negative
  parallelism.

Every defect is one UsageError line naming the field, e.g.
``--from plan.json: invalid plan: plans[0].nodes = 1000000000000 is out of range (1..100000)``.

`load_plan_file(path)` returns the checked dict; `check_plan_data(data, label)` checks an already
parsed object (the web API's bodies); `parse_plan_text(text, label)` does the parse-and-check.
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from gpuplan.errors import UsageError

MAX_PLAN_BYTES = 16 * 2**20  # a 1,000-plan result is ~3 MB
MAX_DEPTH = 32  # real plan files nest 5-6 deep
MAX_PLANS = 10_000
MAX_STRING = 100_000
MAX_NODES = 100_000
MAX_GPUS = 1_000_000
MAX_GPUS_PER_NODE = 100_000
MAX_PARALLEL = 1_000_000
MAX_SEQ_LEN = 100_000_000
MAX_TOKENS = 1e18
MAX_HOURS = 1e7  # ~1,140 years: beyond it a plan is garbage, not a long run
MAX_USD = 1e15
MIN_CHECKPOINT_MIN = 0.1  # 6 s; the planner's Daly intervals are minutes even for tiny models
KNOWN_PRECISIONS = ("bf16", "fp16", "fp32", "fp8", "fp4", "int8", "int4")
WORKLOADS = ("train", "serve")

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


class _Invalid(Exception):
    pass


# ---------------------------------------------------------------- reading

def _read_capped(path: Path, label: str) -> bytes:
    """At most MAX_PLAN_BYTES + 1 bytes; regular files are refused by their size without reading."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"--from {label}: no such file (write one with `gpuplan plan ... --json > plan.json`)") from None
    except OSError as e:
        raise UsageError(f"--from {label}: cannot read it ({e.strerror or type(e).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"--from {label}: is a directory, not a plan file")
    if stat.S_ISBLK(st.st_mode) or stat.S_ISSOCK(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        raise UsageError(f"--from {label}: is a device, socket or pipe, not a plan file")
    if stat.S_ISREG(st.st_mode) and st.st_size > MAX_PLAN_BYTES:
        raise UsageError(f"--from {label}: {st.st_size / 2**20:.0f} MiB is too large for a plan file "
                         f"(limit {MAX_PLAN_BYTES // 2**20} MiB)")
    try:
        with open(path, "rb") as f:
            return f.read(MAX_PLAN_BYTES + 1)
    except OSError as e:
        raise UsageError(f"--from {label}: cannot read it ({e.strerror or type(e).__name__})") from None


def load_plan_file(path: str | os.PathLike, stdin_text: str | None = None) -> dict[str, Any]:
    """A `gpuplan plan ... --json` file ('-' = stdin) as a dict whose values were checked; any
    defect is one UsageError line. Pass the result to `gpuplan.export.parse_plan_result`."""
    label = "stdin" if os.fspath(path) == "-" else os.fspath(path)
    if os.fspath(path) == "-":
        if stdin_text is not None:
            raw: bytes | str = stdin_text
        else:
            buf = getattr(sys.stdin, "buffer", None)
            raw = buf.read(MAX_PLAN_BYTES + 1) if buf is not None else sys.stdin.read(MAX_PLAN_BYTES + 1)
    else:
        raw = _read_capped(Path(path), label)
    if len(raw) > MAX_PLAN_BYTES:
        raise UsageError(f"--from {label}: too large for a plan file (limit {MAX_PLAN_BYTES // 2**20} MiB)")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise UsageError(f"--from {label}: not UTF-8 text (byte {e.start}); expected the JSON of "
                             "`gpuplan plan ... --json`") from None
    return parse_plan_text(raw, label)


def _max_depth(text: str) -> int:
    """Deepest [ / { nesting outside strings, without recursion (so it cannot overflow)."""
    brackets = re.sub(r"[^\[\]{}]+", "", _STRINGS.sub("", text))
    if len(brackets) <= MAX_DEPTH:
        return len(brackets)
    import numpy as np

    b = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    steps = np.where((b == ord("[")) | (b == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def _finite_float(s: str) -> float:
    x = float(s)
    if not math.isfinite(x):
        raise _Invalid(f"the number {s[:30]} overflows")
    return x


def _no_constant(s: str) -> Any:
    raise _Invalid(f"{s} is not a number JSON allows")


def parse_plan_text(text: str, label: str = "plan") -> dict[str, Any]:
    """Parse (refusing NaN/Infinity, overflow and deep nesting) and check the values."""
    prefix = f"--from {label}"
    if not text.strip():
        raise UsageError(f"{prefix}: empty; expected the JSON of `gpuplan plan ... --json`")
    if len(text) > MAX_PLAN_BYTES:
        raise UsageError(f"{prefix}: too large for a plan file (limit {MAX_PLAN_BYTES // 2**20} MiB)")
    depth = _max_depth(text)
    if depth > MAX_DEPTH:
        raise UsageError(f"{prefix}: JSON nested {depth} deep (a plan file nests about 6; limit {MAX_DEPTH})")
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except _Invalid as e:
        raise UsageError(f"{prefix}: invalid plan: {e}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{prefix}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except ValueError:  # an integer of thousands of digits (Python's int max-str-digits)
        raise UsageError(f"{prefix}: invalid plan: holds a number too long to read (over 4,300 digits)") from None
    except (RecursionError, OverflowError) as e:
        raise UsageError(f"{prefix}: not a usable JSON file ({type(e).__name__})") from None
    return check_plan_data(data, label)


# ---------------------------------------------------------------- checking values

def _num(v: Any, where: str, lo: float | None = None, hi: float | None = None, *, strict_lo: bool = False,
         integer: bool = False, optional: bool = False) -> float | None:
    if v is None:
        if optional:
            return None
        raise _Invalid(f"{where} is missing")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Invalid(f"{where} = {str(v)[:40]!r} is not a number")
    x = float(v) if not isinstance(v, int) or abs(v) < 2**63 else math.inf
    if not math.isfinite(x):
        raise _Invalid(f"{where} must be a finite number")
    if integer and x != int(x):
        raise _Invalid(f"{where} = {x:g} is not a whole number")
    too_low = lo is not None and (x <= lo if strict_lo else x < lo)
    too_high = hi is not None and x > hi
    if too_low or too_high:
        low = "" if lo is None else f"above {lo:g}" if strict_lo else f"{lo:g}"
        rng = f"{low}..{hi:g}" if hi is not None and not strict_lo else f"{low}, at most {hi:g}" if hi is not None else low
        raise _Invalid(f"{where} = {_show(v)} is out of range ({rng})")
    return x


RECOMPUTE_MODES = ("none", "selective", "full")


def _show(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() and abs(v) < 1e16 else str(v)[:40]


def _walk_strings(o: Any, where: str) -> None:
    if isinstance(o, str):
        if len(o) > MAX_STRING:
            raise _Invalid(f"{where or 'the file'} is a {len(o):,}-character string (limit {MAX_STRING:,})")
        # gpuplan never writes line breaks or other control characters into a plan; in a region or an instance
        # type they would break out of the exports' YAML comments and values into new keys or documents.
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in o):
            raise _Invalid(f"{where or 'the file'} contains a line break or another control character")
    elif isinstance(o, dict):
        for k, v in o.items():
            _walk_strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            _walk_strings(v, f"{where}[{i}]")


def _check_summary(s: Any) -> None:
    if not isinstance(s, dict):
        raise _Invalid("summary must be an object")
    _num(s.get("seq_len"), "summary.seq_len", 1, MAX_SEQ_LEN, integer=True, optional=True)
    _num(s.get("sample_len"), "summary.sample_len", 1, MAX_SEQ_LEN, integer=True, optional=True)
    _num(s.get("tokens"), "summary.tokens", 0, MAX_TOKENS, strict_lo=True, optional=True)
    _num(s.get("global_batch"), "summary.global_batch", 1, 1e9, optional=True)
    _num(s.get("global_batch_tokens"), "summary.global_batch_tokens", 1, 1e13, optional=True)
    for key in ("input_len", "output_len"):
        _num(s.get(key), f"summary.{key}", 1, MAX_SEQ_LEN, integer=True, optional=True)
    for key in ("params", "active_params"):
        _num(s.get(key), f"summary.{key}", 0, 1e16, strict_lo=True, optional=True)
    _num(s.get("horizon_months"), "summary.horizon_months", 0, 1200, strict_lo=True, optional=True)
    for key in ("precision", "kv_precision"):
        p = s.get(key)
        if p is not None and (not isinstance(p, str) or p.strip().lower() not in KNOWN_PRECISIONS):
            raise _Invalid(f"summary.{key} = {str(p)[:20]!r} is not a known precision ({', '.join(KNOWN_PRECISIONS)})")


def _check_plan(p: Any, w: str, workload: str) -> None:
    if not isinstance(p, dict):
        raise _Invalid(f"{w} must be an object")
    _num(p.get("rank"), f"{w}.rank", 0, MAX_PLANS * 10, integer=True, optional=True)
    nodes = _num(p.get("nodes"), f"{w}.nodes", 1, MAX_NODES, integer=True)
    gpus = _num(p.get("gpus"), f"{w}.gpus", 1, MAX_GPUS, integer=True)
    gpn = _num(p.get("gpus_per_node"), f"{w}.gpus_per_node", 0, MAX_GPUS_PER_NODE, strict_lo=True)
    if gpus > nodes * math.ceil(gpn) + 1e-9:
        raise _Invalid(f"{w}.gpus = {gpus:g} is more than nodes x gpus_per_node = {nodes * gpn:g}")
    if gpn >= 1 and gpus < nodes * gpn * 0.5 - 1e-9 and workload == "train":
        raise _Invalid(f"{w}.gpus = {gpus:g} disagrees with nodes x gpus_per_node = {nodes * gpn:g}")
    prec = p.get("precision")
    if prec is None:
        raise _Invalid(f"{w}.precision is missing (one of {', '.join(KNOWN_PRECISIONS)})")
    if not isinstance(prec, str) or prec.strip().lower() not in KNOWN_PRECISIONS:
        raise _Invalid(f"{w}.precision = {str(prec)[:20]!r} is not a known precision ({', '.join(KNOWN_PRECISIONS)})")
    _num(p.get("wall_hours"), f"{w}.wall_hours", 0, MAX_HOURS, strict_lo=True)
    for key in ("wall_p90_hours", "wall_p10_hours"):
        _num(p.get(key), f"{w}.{key}", 0, MAX_HOURS, strict_lo=True, optional=key != "wall_p90_hours")
    _num(p.get("gpu_hours"), f"{w}.gpu_hours", 0, MAX_HOURS * MAX_GPUS)
    for key in ("cost_usd", "cost_p90_usd", "cost_p10_usd", "rank_cost_usd"):
        _num(p.get(key), f"{w}.{key}", 0, MAX_USD, optional=key not in ("cost_usd", "cost_p90_usd"))
    # Below MIN_CHECKPOINT_MIN an export would save every step; longer than the run means "never".
    _num(p.get("checkpoint_interval_min"), f"{w}.checkpoint_interval_min", MIN_CHECKPOINT_MIN, MAX_HOURS * 60,
         optional=True)
    _num(p.get("expected_interruptions"), f"{w}.expected_interruptions", 0, 1e9, optional=True)
    _num(p.get("price_age_days"), f"{w}.price_age_days", -1, 1e6, integer=True, optional=True)
    _num(p.get("replicas"), f"{w}.replicas", 1, MAX_GPUS, integer=True, optional=True)
    _num(p.get("gpus_per_replica"), f"{w}.gpus_per_replica", 1, MAX_GPUS, integer=True, optional=True)
    _num(p.get("output_tokens_per_s"), f"{w}.output_tokens_per_s", 0, 1e12, optional=True)
    lay = p.get("layout")
    if not isinstance(lay, dict):
        raise _Invalid(f"{w}.layout must be an object")
    for key in ("tp", "pp", "cp", "dp", "ep"):
        _num(lay.get(key, 1), f"{w}.layout.{key}", 1, MAX_PARALLEL, integer=True)
    _num(lay.get("etp"), f"{w}.layout.etp", 1, MAX_PARALLEL, integer=True, optional=True)
    _num(lay.get("vp"), f"{w}.layout.vp", 1, MAX_PARALLEL, integer=True, optional=True)
    _num(lay.get("micro_batch"), f"{w}.layout.micro_batch", 1, 1e6, integer=True, optional=True)
    _num(lay.get("zero"), f"{w}.layout.zero", 0, 3, integer=True, optional=True)
    rec = lay.get("recompute")
    if rec is not None and (not isinstance(rec, str) or rec.strip().lower() not in RECOMPUTE_MODES):
        raise _Invalid(f"{w}.layout.recompute = {str(rec)[:20]!r} is not one of {', '.join(RECOMPUTE_MODES)}")
    offer = p.get("offer")
    if isinstance(offer, dict):
        _num(offer.get("gpus_per_node"), f"{w}.offer.gpus_per_node", 0, MAX_GPUS_PER_NODE, strict_lo=True)
        _num(offer.get("price_per_hour_usd"), f"{w}.offer.price_per_hour_usd", 0, 1e8, strict_lo=True)
        _num(offer.get("price_per_gpu_hour_usd"), f"{w}.offer.price_per_gpu_hour_usd", 0, 1e8, strict_lo=True)
        _num(offer.get("max_nodes"), f"{w}.offer.max_nodes", 1, 1e6, integer=True, optional=True)


def check_plan_data(data: Any, label: str = "plan") -> dict[str, Any]:
    """`data` (a parsed plan result) when its values are sane, else one UsageError line."""
    prefix = f"--from {label}"
    if not isinstance(data, dict) or "plans" not in data:
        raise UsageError(f"{prefix}: not a plan result (expected an object with 'plans', as "
                         "`gpuplan plan ... --json` prints)")
    try:
        workload = data.get("workload")
        if workload not in WORKLOADS:
            raise _Invalid(f"workload = {str(workload)[:20]!r} is not train or serve")
        plans = data["plans"]
        if not isinstance(plans, list):
            raise _Invalid("plans must be a list")
        if len(plans) > MAX_PLANS:
            raise _Invalid(f"{len(plans):,} plans (limit {MAX_PLANS:,})")
        _walk_strings(data, "")
        _check_summary(data.get("summary", {}))
        for i, p in enumerate(plans):
            _check_plan(p, f"plans[{i}]", workload)
        closest = data.get("closest") or []
        if not isinstance(closest, list):
            raise _Invalid("closest must be a list")
        for i, p in enumerate(closest[:MAX_PLANS]):
            _check_plan(p, f"closest[{i}]", workload)
    except _Invalid as e:
        raise UsageError(f"{prefix}: invalid plan: {e}") from None
    return data
