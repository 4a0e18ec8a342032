"""Well-known open models, read from `data/presets.json`, looked up by forgiving names.

Shapes come from each model's public config.json (or its paper where no weights were
released); every preset carries the parameter count its authors published so tests can
check that the shape really is the model.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from gpuplan.errors import UnknownNameError
from gpuplan.models.spec import ModelSpec

# How close a preset's shape must count to what its authors published (tests/test_models_presets.py,
# scripts/check_presets.py). Totals: 1% (most published totals are exact safetensors counts); a preset may state
# a wider one in data (count_tolerance_pct, with count_tolerance_reason). MoE active counts: 2% plus half a unit
# in the last digit of a rounded headline ("32B" -> +1.6%), capped at 5%.
TOTAL_TOLERANCE = 0.01
ACTIVE_TOLERANCE = 0.02
MAX_ROUNDING_TOLERANCE = 0.05


def rounding_tolerance(published: float) -> float:
    """Half a unit in the last significant digit of a rounded figure (32e9 -> 1.6%, 5.13e9 -> 0.1%), at most 5%."""
    digits = f"{published:.6g}".split("e")[0].replace(".", "").replace("-", "").rstrip("0") or "1"
    return min(MAX_ROUNDING_TOLERANCE, 0.5 / int(digits))


def count_tolerances(record: dict[str, Any]) -> tuple[float, float]:
    """(total, active) relative tolerances for one preset record."""
    total = max(TOTAL_TOLERANCE, float(record.get("count_tolerance_pct") or 0) / 100)
    active_pub = record.get("published_active_params")
    active = ACTIVE_TOLERANCE + (rounding_tolerance(active_pub) if active_pub else 0.0)
    return total, max(active, float(record.get("count_tolerance_pct") or 0) / 100)


# Suffixes that name a fine-tune or a packaging of the same shape, not a different model.
_VARIANT_TOKENS = {"instruct", "chat", "hf", "base", "it", "fp8", "bf16", "pretrained", "thinking"}


@lru_cache(maxsize=1)
def _records() -> tuple[dict[str, Any], ...]:
    text = resources.files("gpuplan.models").joinpath("data/presets.json").read_text(encoding="utf-8")
    return tuple(json.loads(text)["presets"])


def preset_records() -> list[dict[str, Any]]:
    """The raw preset records (display name, HF id, aliases, published counts, notes)."""
    return [dict(r) for r in _records()]


def preset_ids() -> list[str]:
    return [r["id"] for r in _records()]


def _key(name: str) -> str:
    """Spelling-insensitive key: 'Llama-3.1-70B', 'llama3.1-70b', 'llama_3.1_70b' all agree."""
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def _strip_variant(name: str) -> str:
    """'meta-llama/Meta-Llama-3.1-70B-Instruct' -> 'Llama-3.1-70B'."""
    name = name.strip().rsplit("/", 1)[-1]
    if name.lower().startswith("meta-"):
        name = name[5:]
    tokens = re.split(r"[-_ ]", name)
    while len(tokens) > 1 and (tokens[-1].lower() in _VARIANT_TOKENS or re.fullmatch(r"\d{4}", tokens[-1])):
        tokens.pop()
    return "-".join(tokens)


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    """Every accepted spelling's key -> preset id."""
    index: dict[str, str] = {}
    for r in _records():
        for name in [r["id"], r.get("display_name") or "", r.get("hf_id") or "", *r.get("aliases", [])]:
            if name:
                for k in (_key(name), _key(_strip_variant(name))):
                    index.setdefault(k, r["id"])
    return index


def resolve_preset_id(name: str) -> str | None:
    """The canonical preset id for a user's spelling, or None."""
    if not isinstance(name, str) or not name.strip():
        return None
    index = _index()
    for candidate in (name, _strip_variant(name)):
        hit = index.get(_key(candidate))
        if hit:
            return hit
    return None


@lru_cache(maxsize=None)
def _build(preset_id: str) -> ModelSpec:
    rec = next(r for r in _records() if r["id"] == preset_id)
    fields = {k: v for k, v in rec.items() if k in ModelSpec.model_fields and k != "name"}
    return ModelSpec(name=preset_id, **fields)


def get_preset(name: str) -> ModelSpec:
    """A preset by id or alias (case-insensitive; HF repo ids and -Instruct/-chat variants accepted)."""
    pid = resolve_preset_id(name)
    if pid is None:
        raise UnknownNameError("model", str(name), preset_ids())
    return _build(pid)


def preset_record(name: str) -> dict[str, Any]:
    """The raw record of a preset (for display: display name, HF id, source notes)."""
    pid = resolve_preset_id(name)
    if pid is None:
        raise UnknownNameError("model", str(name), preset_ids())
    return dict(next(r for r in _records() if r["id"] == pid))
