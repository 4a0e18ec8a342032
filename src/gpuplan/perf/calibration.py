"""Calibration from the user's own runs: one efficiency factor per (regime, architecture), kept in a
named profile that every estimate then uses (and says it uses). The bundled fit stays the default.

What a profile is. The estimators already multiply their efficiency by a per-architecture factor
(`vendor_efficiency.applied_factor`: training's achieved-compute fraction, serving's eta_c and
eta_bw). A profile adds ONE more multiplicative factor per (regime, architecture), fitted so that
the geometric mean of measured / predicted speed over the user's rows of that key is 1: a few
interpretable numbers, never a correction per row or per model. It applies to every GPU of the
architecture (a profile measured on H100-SXM also moves H200 and H100-PCIe estimates: all Hopper).

The input CSV (`gpuplan calibrate runs.csv`; both kinds may share one file, extra columns such as
`source` or `notes` are ignored, lines starting with '#' are comments):

    kind=train   model, gpu, n_gpus, tp, pp, micro_batch, global_batch, seq_len,
                 and step_time_s (seconds per optimizer step) or tokens_per_s (the whole job);
                 optional: gpus_per_node (8), dp (checked against n_gpus / (tp x pp x cp)), cp (1),
                 ep (1), etp (MoE experts' tensor parallelism: 1 folded, or tp; searched when empty), vp, method (full | lora | qlora; full), precision (bf16), recompute
                 (none | selective | full; searched when empty), zero (0-3; searched when empty),
                 lora_rank (16), lora_targets (all), fabric (infiniband | ethernet | Gb/s per GPU),
                 sample_len (mean example length when short examples are packed; <= seq_len),
                 framework (megatron | pytorch: torchtitan, FSDP2, Composer; megatron), fused_moe (1: a MoE
                 run on data-centre Blackwell under a full-iteration CUDA graph with a fused grouped-MLP kernel; 0),
                 moe_dispatcher (flex: DeepEP / HybridEP | alltoall: NCCL; flex), ep_overlap (1: the expert-parallel
                 all-to-all overlapped in Megatron's combined 1F1B schedule; 0)
    kind=serve   model, gpu, tp, input_len, output_len, output_tokens_per_s (all replicas);
                 optional: precision (bf16), kv_precision, engine (vllm | sglang | trtllm; vllm),
                 concurrency (requests in flight; empty = the max-throughput point), n_gpus (= tp),
                 fixed_lengths (1: closed-loop clients with one prompt and one output length, as `vllm bench
                 serve`'s random data set at range ratio 0 with --ignore-eos; needs concurrency; 0)

`model` is a preset id or a config.json path (relative to the CSV's folder or the working one).
Each row is predicted by the real estimators with its layout pinned and the profile OFF, then
the factors are fitted (a few secant steps, because speed is not exactly proportional to the
efficiency: communication and fixed overheads do not scale with it). The band of a key is the
spread of its rows after the fit (at least +-5 %; with one row the bundled band is kept).

Storage: `<config dir>/profiles/NAME.json` and the active one named in `<config dir>/active.json`;
the config dir is $GPUPLAN_CONFIG_DIR, else platformdirs' user config dir for "gpuplan".
Which profile is active: `gpuplan --profile NAME|none`, else $GPUPLAN_PROFILE (`none` disables),
else active.json, else none. It is read once per process and re-read when any of those change;
with no config dir and no variable nothing is read but one missing file.
"""
from __future__ import annotations

import contextlib
import contextvars
import csv
import datetime as dt
import hashlib
import json
import math
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from gpuplan.errors import GpuplanError, UsageError
from gpuplan.perf.workload import FRAMEWORKS, MOE_DISPATCHERS, batch_unit

FORMAT = "gpuplan-calibration/1"
ENV_DIR = "GPUPLAN_CONFIG_DIR"
ENV_PROFILE = "GPUPLAN_PROFILE"
OFF = "none"
REGIMES = ("training", "serving")
ACTIONS = ("list", "show", "use", "remove")
Z90 = 1.2816
MIN_BAND = 0.05            # a fitted band is at least +-5 %
FACTOR_RANGE = (0.1, 10.0)  # a row or a key outside this (measured / predicted) is a unit error, not a fit
MAX_ROWS = 10_000
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


# ---------------------------------------------------------------- the profile ---------------------
@dataclass(frozen=True)
class KeyFactor:
    """One (regime, architecture) factor of a profile: it multiplies the bundled factor."""

    factor: float
    p10: float | None  # absolute bounds on `factor`; None = keep the bundled band (one row)
    p90: float | None
    rows: int


@dataclass(frozen=True)
class Profile:
    name: str
    path: str
    factors: dict[str, dict[str, KeyFactor]] = field(default_factory=dict)  # regime -> arch -> factor
    token: str = ""  # identifies the fitted numbers (for caches)

    def get(self, regime: str, arch: str) -> KeyFactor | None:
        return self.factors.get(regime, {}).get(arch)


def check_name(name: str) -> str:
    """A profile name: letters, digits, '.', '_', '-' (64 at most); 'none' is reserved."""
    text = str(name).strip()
    if text.lower() == OFF:
        raise UsageError("'none' is reserved (it turns calibration off); pick another profile name")
    if not _NAME_RE.match(text) or ".." in text:
        raise UsageError(f"profile name {name!r}: use letters, digits, '.', '_' or '-' (at most 64, no '..')")
    return text


def config_dir() -> Path:
    """$GPUPLAN_CONFIG_DIR, else the user config dir of 'gpuplan'."""
    env = os.environ.get(ENV_DIR, "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("gpuplan", appauthor=False))


def profiles_dir() -> Path:
    return config_dir() / "profiles"


def profile_path(name: str) -> Path:
    return profiles_dir() / f"{check_name(name)}.json"


def _active_file() -> Path:
    return config_dir() / "active.json"


def _corrupt(name: str, path: Path, why: str) -> UsageError:
    return UsageError(f"calibration profile {name!r} ({path}) is unreadable: {why}; refit it with `gpuplan calibrate "
                      f"RUNS.csv --name {name}`, or turn it off with `gpuplan calibrate use none`")


# A profile factor outside this range is not a calibration of the bundled fit but a different machine (or a typo).
FACTOR_RANGE = (0.05, 20.0)


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{what} must be a positive number, got {v!r}")
    if not FACTOR_RANGE[0] <= v <= FACTOR_RANGE[1]:
        raise ValueError(f"{what} = {v:.3g} is outside {FACTOR_RANGE[0]:g}..{FACTOR_RANGE[1]:g}")
    return float(v)


def parse_profile(name: str, path: Path, data: Any) -> Profile:
    """A profile from its JSON data; ValueError (one line) when it is not one."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("format") != FORMAT:
        raise ValueError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
    facs = data.get("factors")
    if not isinstance(facs, dict):
        raise ValueError("no 'factors' object")
    out: dict[str, dict[str, KeyFactor]] = {}
    for regime, archs in facs.items():
        if regime not in REGIMES:
            raise ValueError(f"unknown regime {regime!r} (training or serving)")
        if not isinstance(archs, dict):
            raise ValueError(f"factors.{regime} is not an object")
        for arch, e in archs.items():
            where = f"factors.{regime}.{arch}"
            if not isinstance(e, dict):
                raise ValueError(f"{where} is not an object")
            f = _number(e.get("factor"), f"{where}.factor")
            lo, hi = e.get("p10"), e.get("p90")
            if lo is None or hi is None:
                lo = hi = None
            else:
                lo, hi = _number(lo, f"{where}.p10"), _number(hi, f"{where}.p90")
                if not lo <= f <= hi:
                    raise ValueError(f"{where}: p10 <= factor <= p90 does not hold")
            rows = e.get("rows", 0)
            if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
                raise ValueError(f"{where}.rows must be a whole number")
            out.setdefault(regime, {})[str(arch)] = KeyFactor(f, lo, hi, rows)
    token = hashlib.sha256(json.dumps(facs, sort_keys=True).encode()).hexdigest()[:16]
    return Profile(name=name, path=str(path), factors=out, token=f"{name}:{token}")


def read_profile_data(name: str) -> tuple[Path, dict]:
    """(path, JSON data) of a stored profile; one-line UsageError when missing or corrupt."""
    path = profile_path(name)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        known = list_names()
        from gpuplan.errors import closest_names

        near = closest_names(name, known)
        hint = f"; closest: {', '.join(near)}" if near else ("; none stored yet" if not known else "")
        raise UsageError(f"no calibration profile {name!r} in {profiles_dir()}{hint} (see `gpuplan calibrate list`)") \
            from None
    except (OSError, UnicodeDecodeError) as e:
        raise _corrupt(name, path, getattr(e, "strerror", None) or type(e).__name__) from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise _corrupt(name, path, f"not valid JSON ({str(e).split(':')[0]})") from None
    return path, data


def load_profile(name: str) -> Profile:
    """A stored profile, checked; one-line UsageError when missing or corrupt."""
    name = check_name(name)
    path, data = read_profile_data(name)
    try:
        return parse_profile(name, path, data)
    except ValueError as e:
        raise _corrupt(name, path, str(e)) from None


def inspect_profile(name: str) -> tuple[dict | None, str | None]:
    """(JSON data, None) of a stored profile that reads back, else (None, why not in a few words)."""
    path = profile_path(name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        parse_profile(name, path, data)
    except FileNotFoundError:
        return None, "missing"
    except (OSError, UnicodeDecodeError) as e:
        return None, getattr(e, "strerror", None) or type(e).__name__
    except ValueError as e:
        return None, str(e) if not isinstance(e, json.JSONDecodeError) else "not valid JSON"
    return data, None


def list_names() -> list[str]:
    d = profiles_dir()
    try:
        return sorted(p.stem for p in d.glob("*.json") if p.is_file() and _NAME_RE.match(p.stem))
    except OSError:
        return []


# ---------------------------------------------------------------- which profile is active ---------
_FOLLOW = object()  # the context var's default: follow --profile, $GPUPLAN_PROFILE, active.json
_forced: contextvars.ContextVar[Any] = contextvars.ContextVar("gpuplan_calibration", default=_FOLLOW)
_cli_profile: str | None = None  # `gpuplan --profile NAME|none` for this process
_generation = 0                  # bumped by every write here, so the cache re-reads
_lock = threading.Lock()
_cache: tuple[tuple, Profile | None] | None = None


def set_cli_profile(name: str | None) -> None:
    """`gpuplan --profile NAME|none`: overrides $GPUPLAN_PROFILE and active.json in this process
    (None: back to them). A name is checked when an estimate first needs it."""
    global _cli_profile
    if name is not None and name.strip().lower() != OFF:
        check_name(name)
    _cli_profile = None if name is None else name.strip()
    invalidate()


def invalidate() -> None:
    global _generation, _cache
    with _lock:
        _generation += 1
        _cache = None


def _state_key() -> tuple:
    env = os.environ
    return (_cli_profile, env.get(ENV_PROFILE), env.get(ENV_DIR), env.get("XDG_CONFIG_HOME"), env.get("HOME"),
            _generation)


def active_choice() -> tuple[str | None, str]:
    """(profile name or None, where the choice came from) without reading the profile itself."""
    if _cli_profile is not None:
        return (None if _cli_profile.lower() == OFF else _cli_profile), "--profile"
    env = os.environ.get(ENV_PROFILE, "").strip()
    if env:
        return (None if env.lower() == OFF else env), f"${ENV_PROFILE}"
    path = _active_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, "default"
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"calibration: cannot read {path} ({getattr(e, 'strerror', None) or type(e).__name__}); "
                         f"`gpuplan calibrate use none` resets it") from None
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError
        name = data.get("profile")
        if name is not None and not isinstance(name, str):
            raise ValueError
    except ValueError:
        raise UsageError(f"calibration: {path} is corrupt (expected {{\"profile\": NAME}}); "
                         f"`gpuplan calibrate use none` resets it") from None
    if name is None or name.strip().lower() == OFF:
        return None, "default"
    return name.strip(), str(path)


def active_profile() -> Profile | None:
    """The profile estimates use now (None: the bundled fit). Cached per process; re-read when
    --profile, $GPUPLAN_PROFILE or the config dir change, or after a write here."""
    global _cache
    forced = _forced.get()
    if forced is not _FOLLOW:
        return forced
    key = _state_key()
    hit = _cache
    if hit is not None and hit[0] == key:
        return hit[1]
    name, origin = active_choice()
    if name is None:
        prof = None
    else:
        try:
            check_name(name)
        except UsageError:
            raise UsageError(f"calibration profile {name!r} (from {origin}) is not a valid name; "
                             f"see `gpuplan calibrate list`") from None
        prof = load_profile(name)
    with _lock:
        if key == _state_key():
            _cache = (key, prof)
    return prof


@contextlib.contextmanager
def using(profile: Profile | None) -> Iterator[None]:
    """Estimates inside use `profile` (None: the bundled fit), whatever is active."""
    tok = _forced.set(profile)
    try:
        yield
    finally:
        _forced.reset(tok)


def token() -> str | None:
    """Identifies the active profile's numbers (for caches of estimates); None without one."""
    p = active_profile()
    return p.token if p is not None else None


# ---------------------------------------------------------------- applying it ----------------------
_applied: dict[tuple[str, str, str], float] = {}  # (profile, regime, arch) -> factor, since reset_applied()


def reset_applied() -> None:
    _applied.clear()


def applied() -> dict[tuple[str, str, str], float]:
    """The active profile's factors estimates used since `reset_applied()` (the CLI's note)."""
    return dict(_applied)


def apply(bundled, regime: str):
    """The bundled VendorFactor times the active profile's factor for its (regime, architecture)."""
    prof = active_profile()
    if prof is None:
        return bundled
    kf = prof.get(regime, bundled.arch)
    if kf is None:
        return bundled
    from gpuplan.perf.vendor_efficiency import VendorFactor

    if _forced.get() is _FOLLOW:
        _applied[(prof.name, regime, bundled.arch)] = kf.factor

    f = bundled.factor * kf.factor
    if kf.p10 is not None and kf.p90 is not None:
        lo, hi = bundled.factor * kf.p10, bundled.factor * kf.p90
    else:
        lo, hi = bundled.p10 * kf.factor, bundled.p90 * kf.factor
    return VendorFactor(f, min(lo, f), max(hi, f), "calibrated", bundled.arch,
                        f"user calibration profile {prof.name!r}: x{kf.factor:.3f} from {kf.rows} {regime} row(s) "
                        f"on the bundled {bundled.factor:g} ({bundled.basis})", bundled.n_rows)


def calibration_entry(gpu_id: str, regime: str, vendor: str = "") -> dict[str, Any] | None:
    """An estimate's `assumptions["calibration"]`: {profile, factor, rows, architecture} where a
    profile factor applies to this GPU, else None."""
    prof = active_profile()
    if prof is None:
        return None
    from gpuplan.perf.vendor_efficiency import arch_of

    arch = arch_of(gpu_id, vendor)
    kf = prof.get(regime, arch)
    if kf is None:
        return None
    return {"profile": prof.name, "factor": kf.factor, "rows": kf.rows, "architecture": arch}


def summary_entry(regime: str) -> dict[str, Any] | None:
    """A plan summary's `calibration`: the active profile and its factors for this regime, else None."""
    prof = active_profile()
    if prof is None:
        return None
    facs = prof.factors.get(regime, {})
    out: dict[str, Any] = {"profile": prof.name,
                           "factors": {a: round(k.factor, 4) for a, k in sorted(facs.items())},
                           "rows": sum(k.rows for k in facs.values())}
    if not facs:
        out["note"] = f"no {regime} rows in this profile: the bundled fit"
    return out


# ---------------------------------------------------------------- reading runs.csv -----------------
TRAIN_REQUIRED = ("model", "gpu", "n_gpus", "tp", "pp", "micro_batch", "global_batch", "seq_len")
SERVE_REQUIRED = ("model", "gpu", "tp", "input_len", "output_len", "output_tokens_per_s")
_KINDS = {"train": "train", "training": "train", "serve": "serve", "serving": "serve", "inference": "serve"}


@dataclass
class Run:
    """One measured row, checked; `speed` is tokens/s (training: the whole job; serving: output)."""

    line: int
    kind: str        # train | serve
    model: Any       # ModelSpec
    gpu: Any         # Gpu
    arch: str
    speed: float
    args: dict[str, Any]
    label: str

    @property
    def regime(self) -> str:
        return "training" if self.kind == "train" else "serving"


def _lines(text: str, counter: list[int]) -> Iterator[str]:
    for i, line in enumerate(text.splitlines(keepends=True), start=1):
        counter[0] = i
        if line.lstrip().startswith("#") or not line.strip():
            continue
        yield line


def _cell(row: dict, key: str) -> str:
    v = row.get(key)
    return "" if v is None else str(v).strip()


class _RowError(UsageError):
    pass


def _yes_no(row: dict, key: str, where: str) -> bool:
    """A 1 / 0 (yes / no, true / false) cell; empty is no."""
    v = _cell(row, key).lower()
    if v not in ("", "0", "1", "false", "true", "no", "yes"):
        raise _RowError(f"{where}: {key} {v!r}: use 1 or 0 (yes / no)")
    return v in ("1", "true", "yes")


def _pos(row: dict, key: str, where: str, *, integer: bool = False, default=None, upper: float = 1e15):
    text = _cell(row, key)
    if text == "":
        if default is not None:
            return default
        raise _RowError(f"{where}: {key} is empty")
    try:
        v = float(text)
    except ValueError:
        raise _RowError(f"{where}: {key} must be a positive number, got {text!r}") from None
    if not math.isfinite(v) or v <= 0 or v > upper:
        raise _RowError(f"{where}: {key} must be a positive number, got {text!r}")
    if integer:
        if v != int(v):
            raise _RowError(f"{where}: {key} must be a whole number, got {text!r}")
        return int(v)
    return v


def _opt_int(row: dict, key: str, where: str, lo: int = 1) -> int | None:
    text = _cell(row, key)
    if text == "":
        return None
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not math.isfinite(v) or v != int(v) or v < lo:
        raise _RowError(f"{where}: {key} must be a whole number >= {lo}, got {text!r}")
    return int(v)


def _model(text: str, where: str, folder: Path):
    from gpuplan.models import resolve_model

    if not text:
        raise _RowError(f"{where}: model is empty")
    candidate = folder / text
    try:
        if (text.endswith(".json") or "/" in text) and candidate.exists():
            text = str(candidate)
        return resolve_model(text)
    except GpuplanError as e:
        raise _RowError(f"{where}: {e}") from None


def _gpu(text: str, where: str):
    from gpuplan.catalog.gpus import get_gpu

    if not text:
        raise _RowError(f"{where}: gpu is empty")
    try:
        return get_gpu(text)
    except GpuplanError as e:
        raise _RowError(f"{where}: {e}") from None


def _fabric(text: str, where: str):
    t = text.strip().lower()
    if t == "" or t in ("infiniband", "ib", "ethernet", "eth", "roce"):
        return t or None
    try:
        v = float(t.removesuffix("gbps").removesuffix("gb/s"))
    except ValueError:
        v = float("nan")
    if not math.isfinite(v) or v <= 0:
        raise _RowError(f"{where}: fabric {text!r}: use infiniband, ethernet or Gb/s per GPU")
    return v


def _train_run(row: dict, where: str, line: int, folder: Path) -> Run:
    from gpuplan.perf.vendor_efficiency import arch_of

    spec = _model(_cell(row, "model"), where, folder)
    gpu = _gpu(_cell(row, "gpu"), where)
    n = _pos(row, "n_gpus", where, integer=True, upper=131_072)
    tp = _pos(row, "tp", where, integer=True, upper=1024)
    pp = _pos(row, "pp", where, integer=True, upper=1024)
    cp = _pos(row, "cp", where, integer=True, default=1, upper=1024)
    ep = _pos(row, "ep", where, integer=True, default=1, upper=1024)
    mb = _pos(row, "micro_batch", where, integer=True, upper=1e6)
    gb = _pos(row, "global_batch", where, integer=True, upper=1e9)
    seq = _pos(row, "seq_len", where, integer=True, upper=4_194_304)
    gpn = _pos(row, "gpus_per_node", where, integer=True, default=8, upper=1024)
    if n % (tp * pp * cp):
        raise _RowError(f"{where}: tp x pp x cp = {tp * pp * cp} does not divide n_gpus {n}")
    dp = _opt_int(row, "dp", where)
    if dp is not None and dp != n // (tp * pp * cp):
        raise _RowError(f"{where}: dp {dp} != n_gpus / (tp x pp x cp) = {n // (tp * pp * cp)}")
    dp = n // (tp * pp * cp)
    if gb % (dp * mb):
        raise _RowError(f"{where}: global_batch {gb} is not a multiple of dp x micro_batch = {dp * mb}")
    vp = _opt_int(row, "vp", where)
    if vp is not None and vp > 1 and (pp == 1 or gb % batch_unit(dp, mb, pp, vp)):
        raise _RowError(f"{where}: vp {vp} needs pp > 1 and micro-batches per step ({gb // (dp * mb)}) in whole "
                        f"groups of pp ({pp}), as Megatron's interleaved schedule runs them")
    etp = _opt_int(row, "etp", where)
    if etp is not None and etp not in (1, tp):
        raise _RowError(f"{where}: etp {etp}: the experts' tensor parallel size is 1 (folded) or tp ({tp})")
    zero = _opt_int(row, "zero", where, lo=0)
    method = (_cell(row, "method") or "full").lower()
    if method not in ("full", "lora", "qlora"):
        raise _RowError(f"{where}: method {method!r}: use full, lora or qlora")
    precision = (_cell(row, "precision") or "bf16").lower()
    recompute = _cell(row, "recompute").lower() or None
    if recompute is not None and recompute not in ("none", "selective", "full"):
        raise _RowError(f"{where}: recompute {recompute!r}: use none, selective or full")
    rank = _pos(row, "lora_rank", where, integer=True, default=16, upper=65536)
    targets = (_cell(row, "lora_targets") or "all").lower()
    if targets not in ("all", "attention"):
        raise _RowError(f"{where}: lora_targets {targets!r}: use all or attention")
    fabric = _fabric(_cell(row, "fabric"), where)
    framework = (_cell(row, "framework") or "megatron").lower()
    if framework not in FRAMEWORKS:
        raise _RowError(f"{where}: framework {framework!r}: use {' or '.join(FRAMEWORKS)}")
    fused, overlap = _yes_no(row, "fused_moe", where), _yes_no(row, "ep_overlap", where)
    dispatcher = (_cell(row, "moe_dispatcher") or "flex").lower()
    if dispatcher not in MOE_DISPATCHERS:
        raise _RowError(f"{where}: moe_dispatcher {dispatcher!r}: use alltoall or flex (DeepEP / HybridEP)")
    sample = _pos(row, "sample_len", where, integer=True, upper=seq) if _cell(row, "sample_len") else None
    step = _pos(row, "step_time_s", where, default=0.0, upper=1e7) if _cell(row, "step_time_s") else None
    tps = _pos(row, "tokens_per_s", where, default=0.0) if _cell(row, "tokens_per_s") else None
    if step is None and tps is None:
        raise _RowError(f"{where}: give step_time_s or tokens_per_s")
    speed = gb * seq / step if step is not None else tps
    if step is not None and tps is not None and abs(math.log(tps / speed)) > 0.05:
        raise _RowError(f"{where}: step_time_s and tokens_per_s disagree (global_batch x seq_len / step_time_s = "
                        f"{speed:,.0f} tokens/s, tokens_per_s {tps:,.0f})")
    args = dict(n_gpus=n, tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, etp=etp, vp=vp, micro_batch=mb, recompute=recompute, zero=zero,
                gpus_per_node=gpn, inter_node_gbps_per_gpu=fabric, method=method, precision=precision,
                global_batch=gb, seq_len=seq, lora_rank=rank, lora_targets=targets, sample_len=sample,
                framework=framework, fused_moe=fused, ep_overlap=overlap, moe_dispatcher=dispatcher)
    label = f"{spec.name} {method} {precision} on {n} x {gpu.id} (TP{tp} PP{pp} DP{dp}, mb {mb}, seq {seq})"
    return Run(line, "train", spec, gpu, arch_of(gpu.id, gpu.vendor), speed, args, label)


def _serve_run(row: dict, where: str, line: int, folder: Path) -> Run:
    from gpuplan.perf.engines import resolve_engine
    from gpuplan.perf.vendor_efficiency import arch_of

    spec = _model(_cell(row, "model"), where, folder)
    gpu = _gpu(_cell(row, "gpu"), where)
    tp = _pos(row, "tp", where, integer=True, upper=1024)
    n = _pos(row, "n_gpus", where, integer=True, default=tp, upper=100_000)
    if n % tp:
        raise _RowError(f"{where}: n_gpus {n} is not a multiple of tp {tp}")
    isl = _pos(row, "input_len", where, integer=True, upper=10_000_000)
    osl = _pos(row, "output_len", where, integer=True, upper=10_000_000)
    conc = _opt_int(row, "concurrency", where)
    speed = _pos(row, "output_tokens_per_s", where)
    engine = _cell(row, "engine") or "vllm"
    try:
        eng = resolve_engine(engine).key
    except GpuplanError as e:
        raise _RowError(f"{where}: {e}") from None
    precision = (_cell(row, "precision") or "bf16").lower()
    kv = _cell(row, "kv_precision").lower() or None
    fixed = _yes_no(row, "fixed_lengths", where)
    if fixed and not conc:
        raise _RowError(f"{where}: fixed_lengths describes closed-loop clients: give their concurrency")
    args = dict(n_gpus=n, tp=tp, input_len=isl, output_len=osl, concurrency=conc, engine=eng, precision=precision,
                kv_precision=kv, fixed_lengths=fixed)
    label = (f"{spec.name} {precision} {eng} on {n} x {gpu.id} (TP{tp}), {isl}/{osl} tokens, "
             + (f"concurrency {conc}" if conc else "max throughput"))
    return Run(line, "serve", spec, gpu, arch_of(gpu.id, gpu.vendor), speed, args, label)


def read_runs(path: str | os.PathLike) -> list[Run]:
    """The rows of a runs CSV, each checked; the first problem is one UsageError line."""
    from gpuplan.files import check_in_file

    p = Path(path)
    shown = str(path)
    check_in_file(p, shown)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{shown}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{shown}: is a directory, not a CSV file") from None
    except OSError as e:
        raise UsageError(f"{shown}: cannot read ({e.strerror or type(e).__name__})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{shown}: not UTF-8 text; save it as a UTF-8 CSV") from None
    if "\x00" in text:
        raise UsageError(f"{shown}: contains NUL bytes; not a CSV file")
    counter = [0]
    reader = csv.reader(_lines(text, counter))
    try:
        header = next(reader, None)
    except csv.Error as e:
        raise UsageError(f"{shown} line {counter[0]}: {e}") from None
    if header is None:
        raise UsageError(f"{shown}: empty file; give a header line and at least one run "
                         f"(see `gpuplan calibrate --help`)")
    cols = [h.strip().lower() for h in header]
    if "kind" not in cols:
        from gpuplan.files import shown_name

        raise UsageError(f"{shown}: missing column 'kind' (train or serve); header is "
                         f"{', '.join(shown_name(c) for c in cols[:12]) or '(empty)'}")
    dup = sorted({c for c in cols if c and cols.count(c) > 1})
    if dup:
        raise UsageError(f"{shown}: duplicate column(s) {', '.join(dup)}")
    rows: list[tuple[int, dict]] = []
    try:
        for values in reader:
            line = counter[0]
            if not any(v.strip() for v in values):
                continue
            if len(values) > len(cols) and any(v.strip() for v in values[len(cols):]):
                raise UsageError(f"{shown} line {line}: {len(values)} fields, the header has {len(cols)}")
            rows.append((line, dict(zip(cols, values))))
            if len(rows) > MAX_ROWS:
                raise UsageError(f"{shown}: more than {MAX_ROWS:,} rows; a calibration needs a handful per GPU type")
    except csv.Error as e:
        raise UsageError(f"{shown} line {counter[0]}: {e}") from None
    if not rows:
        raise UsageError(f"{shown}: no runs after the header")
    kinds = set()
    for line, row in rows:
        k = _KINDS.get(_cell(row, "kind").lower())
        if k is None:
            raise UsageError(f"{shown} line {line}: kind {_cell(row, 'kind')!r}: use train or serve")
        kinds.add(k)
    missing = []
    if "train" in kinds:
        missing += [c for c in TRAIN_REQUIRED if c not in cols]
        if "step_time_s" not in cols and "tokens_per_s" not in cols:
            missing.append("step_time_s (or tokens_per_s)")
    if "serve" in kinds:
        missing += [c for c in SERVE_REQUIRED if c not in cols and c not in missing]
    if missing:
        raise UsageError(f"{shown}: missing column(s) {', '.join(missing)}")
    folder = p.parent
    runs = []
    for line, row in rows:
        where = f"{shown} line {line}"
        kind = _KINDS[_cell(row, "kind").lower()]
        runs.append(_train_run(row, where, line, folder) if kind == "train" else _serve_run(row, where, line, folder))
    return runs


# ---------------------------------------------------------------- predicting and fitting -----------
def predict(run: Run, where: str = "") -> float:
    """The estimators' speed for a run (tokens/s), under whatever profile is in effect."""
    return _predict(run, where)[0]


def _predict(run: Run, where: str = "") -> tuple[float, float | None]:
    """(speed in tokens/s, MFU at that speed for training rows else None)."""
    where = where or f"line {run.line}"
    a = run.args
    try:
        if run.kind == "train":
            from gpuplan.perf.training_estimate import estimate_training
            from gpuplan.perf.workload import make_workload

            kind = "pretrain" if a["method"] == "full" else "finetune"
            tokens = max(1e9, 10.0 * a["global_batch"] * a["seq_len"])
            wl = make_workload(kind=kind, method=a["method"], tokens=tokens, seq_len=a["seq_len"],
                               global_batch=a["global_batch"], precision=a["precision"], lora_rank=a["lora_rank"],
                               lora_targets=a["lora_targets"], sample_len=a.get("sample_len"),
                               framework=a.get("framework", "megatron"), fused_moe=a.get("fused_moe", False),
                               ep_overlap=a.get("ep_overlap", False), moe_dispatcher=a.get("moe_dispatcher", "flex"))
            est = estimate_training(run.model, wl, run.gpu, a["n_gpus"], tp=a["tp"], pp=a["pp"], dp=a["dp"],
                                    cp=a["cp"], ep=a["ep"], etp=a.get("etp"), vp=a["vp"], micro_batch=a["micro_batch"],
                                    recompute=a["recompute"], zero=a["zero"], gpus_per_node=a["gpus_per_node"],
                                    inter_node_gbps_per_gpu=a["inter_node_gbps_per_gpu"], n_runners_up=0)
            if not est.fits:
                raise _RowError(f"{where}: the layout does not fit: {est.memory_per_gpu_gb:.1f} GB per GPU needed, "
                                f"one {run.gpu.id} holds {run.gpu.memory_gb:g} GB (check tp, pp, micro_batch, zero, "
                                f"recompute)")
            return float(est.tokens_per_s), float(est.mfu)
        from gpuplan.perf.inference_estimate import estimate_serving

        est = estimate_serving(run.model, run.gpu, a["n_gpus"], precision=a["precision"],
                               kv_precision=a["kv_precision"], input_len=a["input_len"], output_len=a["output_len"],
                               concurrency=a["concurrency"], engine=a["engine"], tp=a["tp"],
                               fixed_lengths=a.get("fixed_lengths", False))
        if not est.fits:
            raise _RowError(f"{where}: does not fit: {est.message}")
        return float(est.output_tokens_per_s), None
    except _RowError:
        raise
    except GpuplanError as e:
        raise _RowError(f"{where}: {e}") from None


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else 0.5 * (s[m - 1] + s[m])


def _ape(pred: list[float], meas: list[float]) -> list[float]:
    return [abs(p / m - 1.0) * 100.0 for p, m in zip(pred, meas)]


def _profile_of(name: str, factors: dict[tuple[str, str], float]) -> Profile:
    facs: dict[str, dict[str, KeyFactor]] = {}
    for (regime, arch), f in factors.items():
        facs.setdefault(regime, {})[arch] = KeyFactor(f, None, None, 0)
    return Profile(name=name, path="", factors=facs, token="trial:" + repr(sorted(factors.items())))


def fit(runs: list[Run], name: str, source: str = "", max_iter: int = 8, tol: float = 1e-3) -> dict[str, Any]:
    """The profile (JSON data) for these runs: per (regime, architecture) the factor that makes the
    geometric mean of measured / predicted speed 1, its band, and each row before and after."""
    name = check_name(name)
    keys: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(runs):
        keys.setdefault((r.regime, r.arch), []).append(i)
    meas = [r.speed for r in runs]
    with using(None):
        first = [_predict(r, f"{source or 'runs'} line {r.line}") for r in runs]
    before = [p for p, _ in first]
    units = ("check the units (step_time_s in seconds per optimizer step, tokens_per_s / output_tokens_per_s "
             "for the whole job, not per GPU)")
    for r, (p, mfu) in zip(runs, first):
        ratio = r.speed / p
        if not FACTOR_RANGE[0] <= ratio <= FACTOR_RANGE[1]:
            raise UsageError(f"{source or 'runs'} line {r.line}: measured {r.speed:,.4g} tokens/s is {ratio:.3g} x the "
                             f"predicted {p:,.4g}; {units}")
        if mfu is not None and mfu * ratio > 1.0:
            raise UsageError(f"{source or 'runs'} line {r.line}: measured {r.speed:,.4g} tokens/s would be "
                             f"{mfu * ratio:.0%} of the GPUs' peak FLOP/s (MFU); {units}")
    g0 = {k: _geomean([meas[i] / before[i] for i in idx]) for k, idx in keys.items()}
    f = dict(g0)
    prev = {k: (1.0, g0[k]) for k in keys}  # (factor, residual geomean) at the previous step
    after = before
    for _ in range(max_iter):
        with using(_profile_of(name, f)):
            after = [predict(r) for r in runs]
        done = True
        for k, idx in keys.items():
            g = _geomean([meas[i] / after[i] for i in idx])
            if abs(math.log(g)) <= tol:
                prev[k] = (f[k], g)
                continue
            done = False
            f_prev, g_prev = prev[k]
            dlogf = math.log(f[k]) - math.log(f_prev)
            slope = (math.log(g_prev) - math.log(g)) / dlogf if abs(dlogf) > 1e-12 else 1.0
            slope = min(max(slope, 0.2), 1.5)  # speed's elasticity to the efficiency
            prev[k] = (f[k], g)
            f[k] = f[k] * g ** (1.0 / slope)
        if done:
            break
    with using(_profile_of(name, f)):
        after = [predict(r) for r in runs]
    factors: dict[str, dict[str, Any]] = {}
    for (regime, arch), idx in sorted(keys.items()):
        fk = f[(regime, arch)]
        if not FACTOR_RANGE[0] <= fk <= FACTOR_RANGE[1]:
            raise UsageError(f"the {regime} runs on {arch} need a factor of {fk:.3g} on the bundled efficiency; "
                             f"check the units of the measurements")
        res = [math.log(meas[i] / after[i]) for i in idx]
        n = len(idx)
        if n >= 2:
            mean = sum(res) / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in res) / (n - 1))
            sigma = max(sd * math.sqrt(1.0 + 1.0 / n), math.log(1.0 + MIN_BAND) / Z90)
            p10, p90 = fk * math.exp(-Z90 * sigma), fk * math.exp(Z90 * sigma)
        else:
            p10 = p90 = None
        by_method: dict[str, list[float]] = {}
        for i in idx:
            by_method.setdefault(runs[i].args.get("method") or runs[i].args.get("engine"), []).append(
                meas[i] / after[i])
        entry = {
            "factor": round(fk, 6), "p10": None if p10 is None else round(p10, 6),
            "p90": None if p90 is None else round(p90, 6), "rows": n,
            "gpus": sorted({runs[i].gpu.id for i in idx}),
            "speed_ratio_before": round(g0[(regime, arch)], 6),
            "median_abs_error_pct_before": round(_median(_ape([before[i] for i in idx], [meas[i] for i in idx])), 3),
            "median_abs_error_pct_after": round(_median(_ape([after[i] for i in idx], [meas[i] for i in idx])), 3),
            ("by_method" if regime == "training" else "by_engine"): {
                m: {"rows": len(v), "speed_ratio_after": round(_geomean(v), 4)} for m, v in sorted(by_method.items())},
        }
        if p10 is None:
            entry["band_note"] = "one row: the bundled band is kept"
        factors.setdefault(regime, {})[arch] = entry
    rows = [{"line": r.line, "kind": r.kind, "run": r.label, "architecture": r.arch,
             "measured_tokens_per_s": round(r.speed, 4), "predicted_before": round(b, 4),
             "predicted_after": round(a, 4)} for r, b, a in zip(runs, before, after)]
    import gpuplan

    return {
        "format": FORMAT, "name": name,
        "created": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "gpuplan_version": getattr(gpuplan, "__version__", ""),
        "source": source,
        "method": "per (regime, architecture): the factor on the bundled efficiency that makes the geometric mean "
                  "of measured / predicted speed 1 (predicted with the layout pinned); band from the rows' spread",
        "factors": factors,
        "rows": rows,
    }


# ---------------------------------------------------------------- writing --------------------------
def _write(path: Path, text: str) -> None:
    from gpuplan.files import write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"calibration: cannot create {path.parent} ({e.strerror or type(e).__name__}); "
                         f"set ${ENV_DIR} to a writable folder") from None
    try:
        write_atomic(path, text)
    except GpuplanError as e:
        msg = str(e).removeprefix("--out ")
        raise type(e)(f"calibration: {msg}") from None
    finally:
        invalidate()


def save_profile(data: dict[str, Any]) -> Path:
    """Store a fitted profile (atomically); returns its path."""
    name = check_name(data["name"])
    parse_profile(name, Path(""), data)  # never store what could not be read back
    path = profile_path(name)
    _write(path, json.dumps(data, indent=2) + "\n")
    return path


def set_active(name: str | None) -> Path:
    """Make a stored profile the active one (None: none, the bundled fit); returns active.json's path."""
    path = _active_file()
    if name is None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            raise UsageError(f"calibration: cannot remove {path} ({e.strerror or type(e).__name__})") from None
        finally:
            invalidate()
        return path
    load_profile(name)  # exists and reads back
    _write(path, json.dumps({"profile": check_name(name)}) + "\n")
    return path


def remove_profile(name: str) -> tuple[Path, bool]:
    """Delete a stored profile (corrupt or not); if active.json names it, that is cleared too.
    Returns (path, whether it was the active one)."""
    path = profile_path(name)
    if not path.exists():
        read_profile_data(name)  # raises the 'no such profile' line
    try:
        current, origin = active_choice()
    except UsageError:
        current, origin = None, ""
    try:
        path.unlink()
    except OSError as e:
        raise UsageError(f"calibration: cannot remove {path} ({e.strerror or type(e).__name__})") from None
    finally:
        invalidate()
    was_active = current == name and origin == str(_active_file())
    if was_active:
        set_active(None)
    return path, was_active


__all__ = ["Profile", "KeyFactor", "Run", "active_profile", "apply", "calibration_entry", "summary_entry", "fit",
           "read_runs", "predict", "save_profile", "set_active", "remove_profile", "load_profile", "list_names",
           "using", "token", "set_cli_profile", "config_dir", "profiles_dir", "profile_path", "check_name"]
