"""User-facing errors: each carries one line a person can act on.

The CLI prints the message and exits (2 for usage errors, 1 otherwise); the HTTP
API answers 4xx with it. Anything else escaping is a bug.
"""
from __future__ import annotations

import difflib


class GpuplanError(Exception):
    """A failure the user can fix or understand; never shown with a traceback."""

    exit_code = 1


class UsageError(GpuplanError):
    """Bad input: a value out of range, a malformed file, an impossible request."""

    exit_code = 2


class UnknownNameError(UsageError):
    """A name (GPU, provider, model...) that is not known, with the closest known names."""

    def __init__(self, kind: str, name: str, known: list[str], n_suggestions: int = 4,
                 suggestions: list[str] | None = None):
        self.kind, self.name = kind, name
        self.suggestions = suggestions if suggestions else closest_names(name, known, n_suggestions)
        hint = f"; closest: {', '.join(self.suggestions)}" if self.suggestions else ""
        super().__init__(f"unknown {kind} {name!r}{hint}")


def closest_names(name: str, known: list[str], n: int = 4) -> list[str]:
    """Closest known names, matched case-insensitively, in their original spelling."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    known = list(by_lower.values())
    hits = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.4)
    prefix = [k for k in known if k.lower().startswith(name.lower()[:3])] if len(name) >= 2 else []
    out: list[str] = []
    for k in [by_lower[h] for h in hits] + prefix:
        if k.lower() not in {o.lower() for o in out}:
            out.append(k)
    return out[:n]
