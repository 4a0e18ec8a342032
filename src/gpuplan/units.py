"""Human quantities in, floats out: '15T' tokens, '70B' params, '1e12', '2.5k' requests."""
from __future__ import annotations

import math
import re

from gpuplan.errors import UsageError

_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}
_PATTERN = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*([kmbgtp]?)\s*$", re.I)


def parse_quantity(text: str | float | int, what: str = "value", allow_zero: bool = False) -> float:
    """A positive finite number, with an optional k/M/B/T/P suffix (case-insensitive)."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _PATTERN.match(str(text))
        if not m:
            raise UsageError(f"{what}: {text!r} is not a number (examples: 1e12, 15T, 70B, 2.5k)")
        value = float(m[1]) * _SUFFIX[m[2].lower()]
    if not math.isfinite(value):
        raise UsageError(f"{what} must be a finite number, got {text!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{what} must be positive, got {text!r}")
    return value


def split_list(text: str | None) -> list[str] | None:
    """'a, b,,c' -> ['a', 'b', 'c']; None or blank -> None."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return parts or None
