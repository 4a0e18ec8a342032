"""Model shapes: presets, HF config.json parsing, and shapes derived from a parameter count.

`resolve_model(text)` is the one entry point estimators need: a preset name, or a path to a
config.json (or a folder holding one).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplan.errors import UnknownNameError
from gpuplan.models.presets import get_preset, preset_ids, resolve_preset_id
from gpuplan.models.spec import ModelSpec

__all__ = [
    "ModelSpec",
    "get_preset",
    "model_from_config",
    "model_from_params",
    "preset_ids",
    "resolve_model",
]


def model_from_config(path_or_dict: Any, name: str | None = None) -> ModelSpec:
    """A ModelSpec from a Hugging Face config.json (path, folder or already-parsed dict)."""
    from gpuplan.models.hf_config import model_from_config as _impl

    return _impl(path_or_dict, name=name)


def model_from_params(total_params: float, active_params: float | None = None, name: str | None = None) -> ModelSpec:
    """A plausible Llama-style (or MoE) shape with the requested parameter counts."""
    from gpuplan.models.derive import model_from_params as _impl

    return _impl(total_params, active_params, name=name)


def resolve_model(text: str | ModelSpec) -> ModelSpec:
    """Preset id first, then an existing config.json path or a folder containing one."""
    if isinstance(text, ModelSpec):
        return text
    text = str(text).strip()
    if resolve_preset_id(text):
        return get_preset(text)
    if text and _looks_like_path(text):
        return model_from_config(text)
    raise UnknownNameError("model", text, preset_ids())


def _looks_like_path(text: str) -> bool:
    try:
        p = Path(text).expanduser()
        return p.exists() or text.endswith(".json") or ("/" in text and p.parent != Path(".") and p.parent.exists())
    except (OSError, ValueError):
        return False
