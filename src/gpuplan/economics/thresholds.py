"""Regulatory training-compute thresholds, attached to estimates as information (not legal advice).

Several rules key obligations to training FLOPs (EU AI Act 1e25, California SB 53 1e26, the
revoked US EO 14110 1e26). Each row in `data/thresholds.csv` carries its status, dates,
whether we verified it against the text, and a source; planners attach the checks so a user
sees when a planned run crosses a line.
"""
from __future__ import annotations

import csv
import datetime as dt
import math
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel

from gpuplan.errors import UsageError

ACTIVE_STATUSES = ("in force", "guidance")


class Threshold(BaseModel):
    id: str
    name: str
    jurisdiction: str
    threshold_flops: float
    compute_counted: str
    consequence: str
    status: str
    effective_date: dt.date
    as_of: dt.date
    verified: str
    source: str

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES


class ThresholdCheck(BaseModel):
    id: str
    name: str
    jurisdiction: str
    threshold_flops: float
    exceeded: bool
    ratio: float
    status: str
    active: bool
    effective_date: dt.date
    as_of: dt.date
    verified: str
    consequence: str
    compute_counted: str
    source: str


@lru_cache(maxsize=1)
def list_thresholds() -> tuple[Threshold, ...]:
    text = resources.files("gpuplan.economics").joinpath("data/thresholds.csv").read_text(encoding="utf-8")
    return tuple(Threshold(**{**r, "threshold_flops": float(r["threshold_flops"])})
                 for r in csv.DictReader(text.splitlines()))


def check_thresholds(training_flops: float, include_inactive: bool = True) -> list[ThresholdCheck]:
    """Every threshold with whether `training_flops` exceeds it ("greater than", as the rules say)."""
    try:
        f = float(training_flops)
    except (TypeError, ValueError):
        raise UsageError(f"training FLOPs must be a number, got {training_flops!r}") from None
    if not math.isfinite(f) or f < 0:
        raise UsageError(f"training FLOPs must be a finite number ≥ 0, got {training_flops!r}")
    out = []
    for t in list_thresholds():
        if not include_inactive and not t.active:
            continue
        out.append(ThresholdCheck(
            id=t.id, name=t.name, jurisdiction=t.jurisdiction, threshold_flops=t.threshold_flops,
            exceeded=f > t.threshold_flops, ratio=f / t.threshold_flops, status=t.status, active=t.active,
            effective_date=t.effective_date, as_of=t.as_of, verified=t.verified, consequence=t.consequence,
            compute_counted=t.compute_counted, source=t.source))
    return out


def exceeded_active(training_flops: float) -> list[ThresholdCheck]:
    """Only the thresholds in force (or official guidance) that the run crosses: what to warn about."""
    return [c for c in check_thresholds(training_flops, include_inactive=False) if c.exceeded]
