"""Per-architecture efficiency factors relative to NVIDIA Hopper, for training and serving.

The training curve (data/training-efficiency.json) and the serving roofline
(data/inference-efficiency.json) were fitted mostly on A100 and H100 runs, so on their own
they assume every accelerator reaches Hopper's share of its dense peak. The factors here
correct that per GPU architecture: 1.0 for Hopper by definition, a median over public
measurements (MLPerf Training/Inference v4.0-v5.1, TensorRT-LLM and Intel Gaudi performance
tables, Megatron-LM/PaLM/Llama 3 MFU reports, MosaicML/Databricks MI250 posts) for the
others, or a stated prior where no measurement was found. Every row and its source is in
data/vendor-runs.csv; scripts/fit_vendor_efficiency.py writes data/vendor-efficiency.json.

    training: multiplies the achieved-compute fraction eta (TrainingEfficiency.eta)
    serving:  multiplies eta_c and eta_bw together (equivalently the engine factor); the compute roof
              also holds the device's measured matmul realisation (perf/achievable_matmul.py), so a
              serving factor is what an architecture loses beyond its matmuls

p10/p90 are multiplicative bounds from leave-one-source-out refits, at least +-15 %.
An architecture nobody measured gets a pessimistic prior, never parity.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterator, Literal

FACTOR_FILE = "vendor-efficiency.json"
REGIMES = ("training", "serving")
ARCHITECTURES = ("Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell", "Blackwell-RTX",
                 "CDNA2", "CDNA3", "CDNA4", "Gaudi2", "Gaudi3", "TPU")
# Both Blackwell efficiency classes: what the estimators treat as Blackwell apart from the factor itself.
BLACKWELL_CLASSES = ("Blackwell", "Blackwell-RTX")
UNKNOWN = "unknown"
# Pessimistic default for an accelerator whose architecture is not recognised.
UNKNOWN_PRIOR = (0.6, 0.3, 0.9)

Regime = Literal["training", "serving"]

# (architecture, pattern) checked in order on the lower-cased id with '_'/' ' as '-'.
# Blackwell before Hopper (gb200 must not read as h200), Ada before Ampere (rtx-6000-ada). 'Blackwell-RTX' is the
# sm120 die of the RTX PRO and GeForce RTX 50 cards: the catalog's 'Blackwell' for what a GPU can run, but its own
# efficiency class (Ampere-style mma tensor-core instructions, no tcgen05 / tensor memory, GDDR7 over PCIe), so that
# a factor fitted on the data-centre parts (sm100) is not read onto it.
_RULES: tuple[tuple[str, str], ...] = (
    ("Blackwell-RTX", r"rtx-?50[0-9]0|rtx-pro-?[0-9]{4}|pro-[0-9]{4}-blackwell"),
    ("Blackwell", r"gb300|gb200|b300|b200|b100|blackwell"),
    ("Hopper", r"gh200|h200|h100|h800|(^|-)h20($|-)|hopper"),
    ("Ada", r"ada|(^|-)l40s?($|-)|(^|-)l4($|-)|rtx-?40[6-9]0|(^|-)l20($|-)"),
    ("Ampere", r"a100|a800|(^|-)a10g?($|-)|(^|-)a[0-9]{2}($|-)|rtx-?a[0-9]{4}|rtx-?30[5-9]0|ampere"),
    ("Turing", r"(^|-)t4($|-)|turing|rtx-?20[6-8]0|quadro-rtx"),
    ("Volta", r"v100|volta|titan-v"),
    ("CDNA4", r"mi35[05]x?"),
    ("CDNA3", r"mi30[0a]x?|mi325x?"),
    ("CDNA2", r"mi2[0-9]0x?"),
    ("Gaudi3", r"gaudi-?3|hl-?325"),
    ("Gaudi2", r"gaudi-?2|hl-?225"),
    ("TPU", r"tpu|trillium|ironwood"),
)


@dataclass(frozen=True)
class VendorFactor:
    """One architecture's factor for one regime, with its uncertainty and provenance."""

    factor: float
    p10: float
    p90: float
    basis: str  # "fitted" (from rows of vendor-runs.csv) or "prior" (stated, no row)
    arch: str
    note: str
    n_rows: int


def infer_arch(gpu_id: str, vendor: str = "") -> str:
    """Architecture from a GPU name alone (no table): 'MI300X' -> 'CDNA3', 'RTX-4090' -> 'Ada'."""
    name = re.sub(r"[\s_]+", "-", str(gpu_id).strip().lower())
    for arch, pattern in _RULES:
        if re.search(pattern, name):
            return arch
    v = str(vendor).strip().lower()
    if v == "google":
        return "TPU"
    return UNKNOWN


@lru_cache(maxsize=1)
def load() -> dict:
    """The fitted factors shipped with the package (empty sections if the file is absent)."""
    try:
        text = resources.files("gpuplan.perf.data").joinpath(FACTOR_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return {"training": {}, "serving": {}, "gpu_arch": {}}
    return json.loads(text)


_override: contextvars.ContextVar[dict | None] = contextvars.ContextVar("vendor_factors", default=None)


@contextlib.contextmanager
def _scoped(var: contextvars.ContextVar, value) -> Iterator[None]:
    """`var` set to `value` inside the block, restored after it."""
    tok = var.set(value)
    try:
        yield
    finally:
        var.reset(tok)


def current() -> dict:
    """The factors estimates use now: the shipped file's, or those set by `using_factors`."""
    doc = _override.get()
    return load() if doc is None else doc


@contextlib.contextmanager
def using_factors(doc: dict) -> Iterator[None]:
    """Estimates inside use `doc` (a document of scripts/fit_vendor_efficiency.py) instead of the shipped
    factors: the serving validation's held-out refits use factors fitted without the held-out source's
    vendor rows, so a table never helps predict itself through an architecture factor."""
    with _scoped(_override, doc):
        yield


def arch_of(gpu_id: str, vendor: str = "") -> str:
    """Architecture id of a catalog GPU id, else 'unknown': the catalog's architecture table
    (catalog/data/architectures.json, the one that also decides what a GPU can run) first, then this
    file's copy (written by the fit script for ids the catalog lacks), then the name. The catalog's 'Blackwell'
    splits here: its sm120 RTX cards are 'Blackwell-RTX' (their own efficiency factors)."""
    from gpuplan.catalog.capabilities import arch_of as catalog_arch

    arch = catalog_arch(str(gpu_id))
    if arch == "Blackwell" and infer_arch(gpu_id, vendor) == "Blackwell-RTX":
        return "Blackwell-RTX"
    if arch != "unknown":
        return arch
    table = current().get("gpu_arch", {})
    if gpu_id in table:
        return table[gpu_id]
    lowered = {k.lower(): v for k, v in table.items()}
    key = str(gpu_id).strip().lower()
    if key in lowered:
        return lowered[key]
    return infer_arch(gpu_id, vendor)


def factor(gpu_id: str, regime: Regime, vendor: str = "") -> VendorFactor:
    """The efficiency factor for a GPU in 'training' or 'serving' (see the module docstring)."""
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    arch = arch_of(gpu_id, vendor)
    entry = current().get(regime, {}).get(arch)
    if entry is None:
        f, lo, hi = UNKNOWN_PRIOR
        return VendorFactor(f, lo, hi, "prior", arch,
                            f"architecture of {gpu_id!r} not recognised: pessimistic prior", 0)
    return VendorFactor(float(entry["factor"]), float(entry["p10"]), float(entry["p90"]), str(entry["basis"]),
                        arch, str(entry.get("note", "")), int(entry.get("n_rows", 0)))


# The estimators' own fits already carry these architectures: the training curve
# (training-efficiency.json) was fitted on A100 and H100 runs, so both are its unit (their measured
# gap, 0.825 here, is absorbed by the curve: applying it again moved held-out single-H100 runs from
# 4% to 17% median error). The serving fit was redone with every factor applied, so none is exempt.
CURVE_ARCHITECTURES: dict[str, tuple[str, ...]] = {"training": ("Ampere", "Hopper"), "serving": ()}


_physics_only: contextvars.ContextVar[bool] = contextvars.ContextVar("physics_only", default=False)


@contextlib.contextmanager
def physics_only() -> Iterator[None]:
    """Estimates inside run every architecture at factor 1.0 and ignore any calibration profile: what
    scripts/fit_vendor_efficiency.py needs for its model_speed_ratio column, the part of a measured
    speed ratio the estimator explains by itself. With the factors applied the ratio would already
    hold them, and a refit would return the residual (about 1.0) instead of the factor."""
    with _scoped(_physics_only, True):
        yield


def _at_one(f: VendorFactor, basis: str, note: str) -> VendorFactor:
    """`f` moved to 1.0, its band scaled with it."""
    scale = 1.0 / f.factor if f.factor > 0 else 1.0
    return VendorFactor(1.0, f.p10 * scale, f.p90 * scale, basis, f.arch, note, f.n_rows)


def applied_factor(gpu_id: str, regime: Regime, vendor: str = "") -> VendorFactor:
    """The factor the estimator multiplies its efficiency by: the fitted factor, except 1.0 for the
    architectures the estimator's own fit was made on (their band is kept, centred on 1.0); times the
    active user calibration profile's factor for this (regime, architecture), if any (perf/calibration.py).
    Inside `physics_only()`: 1.0 for every architecture."""
    from gpuplan.perf.calibration import apply

    f = factor(gpu_id, regime, vendor)
    if _physics_only.get():
        return _at_one(f, "physics only", "architecture factor off (vendor_efficiency.physics_only)")
    if f.arch in CURVE_ARCHITECTURES.get(regime, ()):
        f = _at_one(f, "curve", f"the estimator's {regime} fit is made on this architecture")
    else:
        # A GPU whose own rows (two or more) sit below its architecture's factor runs at its own:
        # MI300X at 0.70 where CDNA3 pools it with MI325X's 0.96. A higher figure for one chip from
        # one benchmark does not raise it: unknown means pessimistic.
        own = current().get("by_gpu", {}).get(regime, {}).get(gpu_id)
        if own and own["factor"] < f.factor:
            scale = own["factor"] / f.factor
            f = VendorFactor(own["factor"], f.p10 * scale, f.p90 * scale, f.basis, f.arch,
                             f"{gpu_id}'s own {own['n_rows']} rows (median {own['factor']:.2f}), below the "
                             f"{f.arch} median {f.factor:.2f}; " + f.note, own["n_rows"])
    return apply(f, regime)
