"""Energy and emissions of GPU compute: information next to a cost, never part of a rented price.

kWh = GPU-hours x TDP x chip-to-server ratio x average fraction of server power x PUE
(Epoch AI's accounting, formulas.md §10); kg CO2e = kWh x the grid's carbon intensity where the
datacenter is (a small bundled table by country and by the planner's geography codes, with
source and year). Rented GPUs already pay for their power: the dollar figure is informational.
"""
from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import Any

from gpuplan.economics.checkpoint import as_float
from gpuplan.errors import UnknownNameError, UsageError


@cache
def _defaults() -> dict:
    with resources.files("gpuplan.economics").joinpath("data/tco_defaults.json").open(encoding="utf-8") as f:
        return json.load(f)["energy"]


@cache
def _grid_rows() -> dict[str, dict[str, str]]:
    with resources.files("gpuplan.economics").joinpath("data/grid_carbon.csv").open(encoding="utf-8") as f:
        return {r["code"].lower(): r for r in csv.DictReader(f)}


@dataclass(frozen=True)
class GridIntensity:
    code: str
    name: str
    g_co2e_per_kwh: float
    year: int
    confidence: str
    source: str
    matched_by: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _row(row: dict[str, str], matched_by: str) -> GridIntensity:
    return GridIntensity(code=row["code"], name=row["name"], g_co2e_per_kwh=float(row["g_co2e_per_kwh"]),
                         year=int(row["year"]), confidence=row["confidence"], source=row["source"],
                         matched_by=matched_by)


def grid_intensity(region: str | None) -> GridIntensity:
    """Carbon intensity for a country code ('FR'), country name, geography code ('eu', 'us-east')
    or a provider region string ('eu-north1', 'Denmark, DK, EU'); the world average for None."""
    rows = _grid_rows()
    text = (region or "").strip()
    if not text:
        return _row(rows["world"], "default: world average")
    key = text.lower()
    if key in rows:
        return _row(rows[key], "code")
    for r in rows.values():
        if r["name"].lower() == key:
            return _row(r, "name")
    from gpuplan.planner.geography import region_geography  # free-text provider regions

    geo = region_geography(text)
    if geo is not None and geo in rows:
        return _row(rows[geo], f"region {text!r} -> geography {geo}")
    raise UnknownNameError("grid region", text, [r["code"] for r in rows.values()])


def energy_kwh(gpu_hours: float, tdp_w: float, *, chip_to_server: float | None = None,
               avg_power_fraction: float | None = None, pue: float | None = None) -> float:
    """Facility energy for `gpu_hours` of accelerator time."""
    d = _defaults()
    h = as_float(gpu_hours, "GPU-hours", allow_zero=True, maximum=1e12)
    tdp = as_float(tdp_w, "TDP (W)", maximum=1e5)
    ratio = as_float(chip_to_server if chip_to_server is not None else d["chip_to_server"], "chip-to-server ratio",
                     maximum=10)
    frac = as_float(avg_power_fraction if avg_power_fraction is not None else d["avg_power_fraction"]["default"],
                    "average power fraction", maximum=1.0)
    p = as_float(pue if pue is not None else d["pue"]["other"], "PUE", maximum=5.0)
    if p < 1.0:
        raise UsageError(f"PUE must be at least 1, got {p:g}")
    return h * tdp * ratio * frac * p / 1000.0


def emissions_kg(kwh: float, g_co2e_per_kwh: float) -> float:
    return as_float(kwh, "energy (kWh)", allow_zero=True) * as_float(
        g_co2e_per_kwh, "grid intensity (g/kWh)", allow_zero=True, maximum=2000) / 1000.0


def energy_report(gpu_hours: float, *, gpu: str | None = None, tdp_w: float | None = None,
                  region: str | None = None, provider_kind: str | None = None,
                  chip_to_server: float | None = None, avg_power_fraction: float | None = None,
                  pue: float | None = None, usd_per_kwh: float | None = None,
                  g_co2e_per_kwh: float | None = None) -> dict[str, Any]:
    """kWh, kg CO2e and the power bill an owner would pay, with every factor used."""
    d = _defaults()
    vendor = None
    if tdp_w is None:
        if gpu is None:
            raise UsageError("energy needs a GPU (--gpu) or its TDP (--tdp-w)")
        from gpuplan.catalog.gpus import get_gpu

        g = get_gpu(gpu)
        vendor = g.vendor
        if not g.tdp_w:
            raise UsageError(f"no TDP known for {g.id}; give --tdp-w")
        tdp_w = g.tdp_w
    elif gpu is not None:
        from gpuplan.catalog.gpus import get_gpu

        vendor = get_gpu(gpu).vendor
    frac_default = d["avg_power_fraction"].get(vendor or "", d["avg_power_fraction"]["default"])
    frac = avg_power_fraction if avg_power_fraction is not None else frac_default
    pue_v = pue if pue is not None else d["pue"]["hyperscaler" if provider_kind == "hyperscaler" else "other"]
    ratio = chip_to_server if chip_to_server is not None else d["chip_to_server"]
    kwh = energy_kwh(gpu_hours, tdp_w, chip_to_server=ratio, avg_power_fraction=frac, pue=pue_v)
    grid = grid_intensity(region)
    intensity = grid.g_co2e_per_kwh if g_co2e_per_kwh is None else as_float(
        g_co2e_per_kwh, "grid intensity (g/kWh)", allow_zero=True, maximum=2000)
    price = as_float(usd_per_kwh if usd_per_kwh is not None else d["usd_per_kwh"], "electricity price ($/kWh)",
                     allow_zero=True, maximum=10)
    return {
        "gpu_hours": float(gpu_hours), "energy_kwh": kwh, "emissions_kg": emissions_kg(kwh, intensity),
        "energy_cost_usd_info": kwh * price,
        "assumptions": {
            "gpu": gpu, "tdp_w": float(tdp_w), "chip_to_server": float(ratio), "avg_power_fraction": float(frac),
            "pue": float(pue_v), "usd_per_kwh": price, "grid": grid.as_dict() if g_co2e_per_kwh is None else "user",
            "g_co2e_per_kwh": intensity,
            "sources": [d["chip_to_server_source"], d["avg_power_fraction_source"], d["pue_source"],
                        d["usd_per_kwh_source"]],
        },
    }
