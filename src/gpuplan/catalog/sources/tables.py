"""Small mapping tables that live in `sources/data/*.csv` (SKU -> GPU and count, ...)."""
from __future__ import annotations

import csv
import functools
from importlib import resources


@functools.cache
def table(filename: str) -> tuple[dict[str, str], ...]:
    with resources.files("gpuplan.catalog.sources").joinpath("data", filename).open(encoding="utf-8") as f:
        return tuple(csv.DictReader(f))


def keyed(filename: str, key: str) -> dict[str, dict[str, str]]:
    return {r[key]: r for r in table(filename)}
