"""Hosted-API token prices (per million tokens), each with its date and source.

The self-host vs API comparison needs the price a team would otherwise pay; prices change
often, so every row carries `as_of` and the presenters show its age. `open_model` links an API
model to the gpuplan preset with the same architecture (empty for closed models), which lets
break-even compare like with like.
"""
from __future__ import annotations

import csv
import datetime as dt
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from gpuplan.catalog.records import STALE_AFTER_DAYS  # one staleness rule for GPU and API prices
from gpuplan.errors import UnknownNameError, UsageError


@dataclass(frozen=True)
class ApiPrice:
    id: str
    provider: str
    provider_id: str
    model: str
    open_model: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    as_of: dt.date
    note: str
    source: str

    def blended_usd_per_mtok(self, input_share: float) -> float:
        """Dollars per million tokens (input + output) at the given input share."""
        return input_share * self.input_usd_per_mtok + (1.0 - input_share) * self.output_usd_per_mtok

    @property
    def same_weights(self) -> bool:
        """True when `open_model` is this exact model, not just the same architecture (e.g. R1 on V3)."""
        return bool(self.open_model) and "different weights" not in self.note

    def age_days(self, today: dt.date | None = None) -> int:
        return ((today or dt.date.today()) - self.as_of).days

    def is_stale(self, today: dt.date | None = None) -> bool:
        return self.age_days(today) > STALE_AFTER_DAYS

    def as_row(self, today: dt.date | None = None) -> dict:
        return {"id": self.id, "provider": self.provider, "model": self.model, "open_model": self.open_model or None,
                "input_usd_per_mtok": self.input_usd_per_mtok, "output_usd_per_mtok": self.output_usd_per_mtok,
                "as_of": self.as_of.isoformat(), "age_days": self.age_days(today), "stale": self.is_stale(today),
                "note": self.note or None, "source": self.source}


def _price(v: str, rid: str, col: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise UsageError(f"api-prices.csv: {rid}: {col} {v!r} is not a number") from None
    if not math.isfinite(x) or x < 0:
        raise UsageError(f"api-prices.csv: {rid}: {col} must be zero or more, got {v!r}")
    return x


@lru_cache(maxsize=1)
def _load() -> tuple[ApiPrice, ...]:
    text = resources.files("gpuplan.economics").joinpath("data/api-prices.csv").read_text(encoding="utf-8")
    out = []
    for r in csv.DictReader(text.splitlines()):
        rid = r["id"]
        out.append(ApiPrice(
            id=rid, provider=r["provider"], provider_id=r["provider_id"], model=r["model"],
            open_model=r["open_model"], input_usd_per_mtok=_price(r["input_usd_per_mtok"], rid, "input_usd_per_mtok"),
            output_usd_per_mtok=_price(r["output_usd_per_mtok"], rid, "output_usd_per_mtok"),
            as_of=dt.date.fromisoformat(r["as_of"]), note=r["note"], source=r["source"]))
    return tuple(out)


def list_api_prices(provider: str | None = None, model_like: str | None = None,
                    open_model: str | None = None) -> list[ApiPrice]:
    """All API prices, optionally filtered by provider (id or name), a model substring, or preset id."""
    rows = list(_load())
    if provider:
        key = provider.strip().lower()
        known = sorted({r.provider_id for r in rows} | {r.provider for r in rows})
        matched = [r for r in rows if key in (r.provider_id, r.provider.lower()) or r.provider.lower().startswith(key)]
        if not matched:
            raise UnknownNameError("API provider", provider, known)
        rows = matched
    if model_like:
        key = model_like.strip().lower()
        rows = [r for r in rows if key in r.id or key in r.model.lower() or key == r.open_model]
    if open_model:
        rows = [r for r in rows if r.open_model == open_model]
    return rows


def get_api_price(name: str) -> ApiPrice:
    """Forgiving lookup: 'together/meta-llama-3.1-70b-instruct-turbo', 'Together AI/meta-llama/...'
    or the model part alone when only one provider serves it. Unknown -> closest names."""
    if not isinstance(name, str) or not name.strip():
        raise UsageError("API model name is empty")
    rows = _load()
    key = name.strip().lower()
    by_id = {r.id: r for r in rows}
    if key in by_id:
        return by_id[key]
    for r in rows:  # provider/model in the original spelling
        full = f"{r.provider}/{r.model}".lower()
        if key in (full, f"{r.provider_id}/{r.model.lower()}"):
            return r
    matches = [r for r in rows if key in (r.model.lower(), r.id.split("/", 1)[1])]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UsageError(f"API model {name!r} is served by several providers; use one of: "
                         + ", ".join(r.id for r in matches))
    from gpuplan.errors import closest_names

    tail_to_id = {r.id.split("/", 1)[1]: r.id for r in rows}
    hits = closest_names(name, [r.id for r in rows] + list(tail_to_id), n=8)
    suggestions = list(dict.fromkeys(tail_to_id.get(h, h) for h in hits))[:4]
    raise UnknownNameError("API model", name, [r.id for r in rows], suggestions=suggestions)
