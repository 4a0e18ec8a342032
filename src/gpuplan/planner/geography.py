"""Where an offer's region is on the map, and how far (in round-trip ms) it is from users.

Coarse on purpose: provider region names are free text ('eu-north1', 'Denmark, DK, EU',
'East Coast (NY2)'), and serving placement only needs continents and coasts.
"""
from __future__ import annotations

import functools
import json
import re
from importlib import resources

from gpuplan.errors import UsageError


@functools.cache
def _data() -> dict:
    with resources.files("gpuplan.planner.data").joinpath("geography.json").open(encoding="utf-8") as f:
        data = json.load(f)
    data["_rules"] = [(re.compile(p, re.I), g) for p, g in data["region_rules"]]
    rtt: dict[tuple[str, str], float] = {}
    for a, row in data["rtt_ms"].items():
        for b, ms in row.items():
            rtt[(a, b)] = rtt[(b, a)] = float(ms)
    data["_rtt"] = rtt
    return data


def geographies() -> dict[str, str]:
    return dict(_data()["geographies"])


def listed_regions(region: str) -> list[str]:
    """The regions of one offer: 'us-east-1/us-west-2/+3 more' -> ['us-east-1', 'us-west-2'] (a price
    listed in several regions is one offer; '+N more' names regions the catalog did not keep)."""
    parts = [p.strip() for p in (region or "").split("/")]
    return [p for p in parts if p and not re.fullmatch(r"\+\d+ more", p)]


def region_geography(region: str) -> str | None:
    """The geography of a provider region string (the first placed one of a '/'-separated list), or
    None when it names none ('global', '')."""
    return next((g for part in listed_regions(region) if (g := _one_region_geography(part)) is not None), None)


def _one_region_geography(region: str) -> str | None:
    text = (region or "").strip()
    if not text:
        return None
    m = re.search(r"(?:^|,)\s*([A-Z]{2}),\s*[A-Z]{2}\s*$", text)  # Vast: 'Denmark, DK, EU' or, cityless, 'CN, AS'
    if m and m[1] in _data()["country_codes"]:
        return _data()["country_codes"][m[1]]
    if re.fullmatch(r"[A-Z]{2}", text) and text in _data()["country_codes"]:  # RunPod: 'SE'
        return _data()["country_codes"][text]
    for pattern, geo in _data()["_rules"]:
        if pattern.search(text):
            return geo
    return None


def parse_user_geographies(text: str) -> list[str]:
    """'eu,us-east,ap-south' -> geography codes; unknown codes are a usage error."""
    known = _data()["geographies"]
    aliases = _data()["aliases"]
    out = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part:
            continue
        code = aliases.get(part, part)
        if code not in known:
            raise UsageError(f"unknown user region {part!r}; use one of: {', '.join(known)}")
        out.append(code)
    if not out:
        raise UsageError("--users needs at least one region, e.g. eu,us-east,ap-south")
    return out


def rtt_ms(a: str | None, b: str | None) -> float | None:
    """Typical round trip between two geographies; None when either is unknown."""
    if a is None or b is None:
        return None
    return _data()["_rtt"].get((a, b))


def worst_rtt_ms(region: str, users: list[str]) -> float | None:
    """The round trip the farthest user group sees to this region (None if the region is unplaced);
    for an offer listed in several regions, that of the listed region nearest the users."""
    best = None
    for part in listed_regions(region):
        geo = _one_region_geography(part)
        values = [rtt_ms(geo, u) for u in users]
        if geo is None or any(v is None for v in values):
            continue
        best = max(values) if best is None else min(best, max(values))
    return best
