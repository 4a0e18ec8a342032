"""Offers as plain tuples until a user sees them.

A store of 10^5-10^6 offers costs ~10 us per offer to turn into pydantic `Offer` objects, most of
which the planner prices once and drops. `OfferRow` is a tuple in the store's column order that
reads like an `Offer` (the same attribute names, `preemptible`, `age_days`, `is_stale`) and becomes
one with `to_offer()` for the rows a plan shows.
"""
from __future__ import annotations

import datetime as dt
import operator

from gpuplan.catalog.records import PREEMPTIBLE_PRICING, STALE_AFTER_DAYS, Offer

COLUMNS: tuple[str, ...] = tuple(Offer.model_fields)


class OfferRow(tuple):
    """One offer, columns in `COLUMNS` order. Build with `OfferRow(values)`."""

    __slots__ = ()

    @property
    def preemptible(self) -> bool:
        return self[_PRICING] in PREEMPTIBLE_PRICING

    def age_days(self, today: dt.date | None = None) -> int:
        return ((today or dt.date.today()) - self[_AS_OF]).days

    def is_stale(self, today: dt.date | None = None, max_age_days: int = STALE_AFTER_DAYS) -> bool:
        return self.age_days(today) > max_age_days

    def to_offer(self) -> Offer:
        """The `Offer` these values were read from (they were validated when written)."""
        return Offer.model_construct(**dict(zip(COLUMNS, self)))

    def __repr__(self) -> str:
        return f"OfferRow({dict(zip(COLUMNS, self))!r})"


for _i, _name in enumerate(COLUMNS):
    setattr(OfferRow, _name, property(operator.itemgetter(_i), doc=f"Offer.{_name}"))
_PRICING, _AS_OF = COLUMNS.index("pricing"), COLUMNS.index("as_of")


def row_of(o: Offer | OfferRow) -> OfferRow:
    if isinstance(o, OfferRow):
        return o
    d = o.__dict__
    return OfferRow(d[c] for c in COLUMNS)


def as_offer(o: Offer | OfferRow) -> Offer:
    return o.to_offer() if isinstance(o, OfferRow) else o
