"""How results read to a person: money, durations, quantities, layouts, plan table columns, JSON.

One place for the rules the CLI, the report and the web page apply. The page's own copies in
`web/static/app.js` (fmtUsd, fmtUsdShort, fmtHours, fmtDuration, layoutText) follow these
rules and tests/test_parity.py runs them side by side, so "60 h" reads the same everywhere.
Presentation only: nothing here computes an estimate, and nothing here imports a presenter
(cli, web, report import this module, never each other).
"""
from __future__ import annotations

import math
from typing import Any

MISSING = "-"
# Durations up to this many hours read in hours, longer ones in days (60 h -> "2.5 d").
DAYS_FROM_HOURS = 48.0


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def fixed(x: float, digits: int) -> str:
    """x with `digits` decimals, halves away from zero on the exact binary value (JavaScript's
    toFixed, so the page and the CLI print the same digits; Python's format rounds half to even)."""
    from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

    try:
        return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    except InvalidOperation:  # beyond Decimal's 28 digits (a 1e30 dollar figure): no decimals to round
        return f"{x:.{digits}f}"


def trim(x: float) -> str:
    """3 significant-ish digits without trailing zeros: 56.15 -> '56.1', 1.6400 -> '1.64', 950.2 -> '950'."""
    a = abs(x)
    digits = 0 if a >= 100 else 1 if a >= 10 else 2
    text = fixed(x, digits)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def to_jsonable(obj: Any) -> Any:
    """Pydantic models, dates, numpy scalars and non-finite floats into plain JSON values."""
    import datetime as dt

    if hasattr(obj, "model_dump"):
        return to_jsonable(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (dt.date, dt.datetime)):
        return obj.isoformat()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if type(obj).__module__ == "numpy":
        return to_jsonable(obj.item())
    return obj


def flat_record(obj: Any, prefix: str = "") -> dict[str, Any]:
    """One CSV row from a nested record: dicts flatten to dotted keys ('memory.weights'), lists of
    plain values join with '; ', lists of records are left out (they are rows of their own)."""
    data = to_jsonable(obj)
    out: dict[str, Any] = {}
    if not isinstance(data, dict):
        return {prefix or "value": data}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flat_record(v, key + "."))
        elif isinstance(v, list):
            if all(not isinstance(x, (dict, list)) for x in v):
                out[key] = "; ".join("" if x is None else str(x) for x in v)
        else:
            out[key] = v
    return out


# ---- numbers ------------------------------------------------------------------------------

def fmt_value(v: Any) -> str:
    """A table cell for a value with no rule of its own."""
    if v is None:
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return MISSING
        if v == int(v) and abs(v) < 1e6:
            return f"{int(v):,}"  # 13,500 beside 10,066: whole or not, thousands are separated alike
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def fmt_usd(v: Any) -> str:
    """$1.64B, $56.1M, $39,652, $12.65, $0.42 (app.js fmtUsd)."""
    if not _num(v):
        return MISSING
    a = abs(v)
    if a >= 1e9:
        return f"${trim(v / 1e9)}B"
    if a >= 1e7:
        return f"${trim(v / 1e6)}M"
    if a >= 100:
        return f"${_round_half_up(v):,}"
    if a >= 1:
        return f"${fixed(v, 2)}"
    if a == 0:
        return "$0"
    return f"${v:#.2g}"


def fmt_usd_short(v: Any) -> str:
    """$950, $12.3k, $1.64M: for bands and narrow columns (app.js fmtUsdShort)."""
    if not _num(v):
        return MISSING
    if v == 0:
        return "$0"
    a = abs(v)
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"${trim(v / div)}{suffix}"
    if a >= 1:
        return f"${trim(v)}"
    return f"${v:#.2g}"


def fmt_hours(h: Any) -> str:
    """'45 min', '12.5 h', '2.5 d' (app.js fmtHours): days from DAYS_FROM_HOURS."""
    if not _num(h):
        return MISSING
    if h < 1:
        return f"{fixed(h * 60, 0)} min"
    if h < DAYS_FROM_HOURS:
        return f"{fixed(h, 1)} h"
    return f"{fixed(h / 24, 1)} d"


def fmt_duration(h: Any) -> str:
    """fmt_hours with the unit in words for prose: '28.4 days' (app.js fmtDuration)."""
    if not _num(h):
        return MISSING
    if h < DAYS_FROM_HOURS:
        return fmt_hours(h)
    return f"{fixed(h / 24, 1)} days"


def fmt_hours_range(lo: Any, hi: Any) -> str:
    """Two durations in one unit: '17.5-45.8 days'."""
    if not (_num(lo) and _num(hi)):
        return MISSING
    if hi < DAYS_FROM_HOURS:
        return f"{lo:.1f}-{hi:.1f} h"
    return f"{lo / 24:.1f}-{hi / 24:.1f} days"


def fmt_ms(v: Any) -> str:
    if not _num(v):
        return MISSING
    return f"{v:.0f} ms" if v >= 100 else f"{v:.1f} ms"


def fmt_quantity(v: Any) -> str:
    """1T, 8.03B, 4.2M, 950; scientific past 1e15 (FLOPs)."""
    if not _num(v):
        return MISSING
    v = float(f"{v:.3g}")  # 999999999.99 -> 1e9, so it reads 1B rather than 1e+03M
    a = abs(v)
    if a >= 1e15:
        return f"{v:.3g}"
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:g}"


def fmt_pricing(p: Any) -> str:
    return str(p).replace("_", "-")


def fit_provenance(source: Any) -> str:
    """A fitted parameter file's provenance, short: its first fit and its latest refit when the file records several
    ('fitted 2026-11-27 on 404 rows; ...; goodput refitted 2026-11-30 on 468 rows' -> the first, how many refits
    since, the last). The file and the JSON output keep the whole history."""
    clauses = [c.strip() for c in str(source or "").split("; ") if c.strip()]
    if len(clauses) <= 2:
        return "; ".join(clauses) or MISSING
    return f"{clauses[0]}; {len(clauses) - 1} refits since, the last: {clauses[-1]}"


# ---- layouts ------------------------------------------------------------------------------

def layout_text(layout: Any) -> str:
    """'TP8 PP4 VP2 DP16 ZeRO-1' (app.js layoutText): the parallel axes above 1, DP always, ZeRO when
    sharded, VP after PP when the stages are interleaved, ETP1 after EP when the experts are folded whole over the TP
    ranks. `layout` is a plan's layout dict or any object with those attributes."""
    if layout is None:
        return MISSING
    get = layout.get if isinstance(layout, dict) else (lambda k, d=None: getattr(layout, k, d))
    parts = []
    for k in ("tp", "pp", "cp", "ep", "dp"):
        if get(k) and (get(k) > 1 or k == "dp"):
            parts.append(f"{k.upper()}{get(k)}")
        if k == "pp" and _num(get("vp")) and get("vp") > 1:
            parts.append(f"VP{get('vp')}")
        if k == "ep" and _num(get("etp")) and _num(get("tp")) and get("tp") > 1 and get("etp") < get("tp"):
            parts.append(f"ETP{get('etp')}")
    zero = get("zero")
    if _num(zero) and zero > 0:
        parts.append(f"ZeRO-{zero}")
    return " ".join(parts) or MISSING


def plan_layout_text(p: dict[str, Any]) -> str:
    """A plan's layout: serving plans read as replicas ('2x TP4'), training plans as layout_text."""
    if p.get("replicas"):
        return f"{p['replicas']}x TP{p.get('gpus_per_replica') or (p.get('layout') or {}).get('tp')}"
    return layout_text(p.get("layout"))


# ---- the plan table ---------------------------------------------------------------------------

# (key, header, priority): a narrow terminal drops the highest priority numbers first; 0 always stays.
TRAIN_PLAN_COLUMNS = (
    ("rank", "#", 0), ("provider", "provider", 0), ("gpu", "GPU", 0), ("shape", "nodes x GPUs", 2),
    ("pricing", "pricing", 2), ("region", "region", 1), ("layout", "layout", 5), ("wall", "wall", 0),
    ("wall_p90", "p90 wall", 4), ("cost", "expected cost", 0), ("band", "p10-p90 cost", 3), ("risk", "risk", 4),
    ("age", "price age", 6), ("confidence", "confidence", 6),
)
SERVE_PLAN_COLUMNS = (
    ("rank", "#", 0), ("provider", "provider", 0), ("gpu", "GPU", 0), ("shape", "GPUs", 1), ("pricing", "pricing", 2),
    ("region", "region", 1), ("layout", "replicas", 5), ("cost", "cost", 0), ("band", "p10-p90 cost", 3),
    ("per_mtok", "$/M out", 2), ("rtt", "RTT", 4), ("risk", "risk", 4), ("age", "price age", 6),
    ("confidence", "confidence", 6),
)
# Cells never split across lines: a table drops columns rather than fold these.
PLAN_WHOLE_CELLS = ("rank", "cost", "band", "per_mtok", "wall", "wall_p90", "region", "gpu", "shape", "age")


# An offer's own region field may list many places ("us-east-1/us-west-1/..."): a table cell names
# this many and counts the rest, with the other offers of the same choice (`also_at`).
REGIONS_SHOWN = 2


def region_places(region: Any) -> list[str]:
    """The places an offer's region field lists, in order."""
    return [r.strip() for r in str(region or "").split("/") if r.strip()]


def places_text(places: list[str]) -> str:
    """'us-east-1/us-west-1', or 'CA, NA / Denmark, DK, EU' where a place is itself a comma list (a marketplace's
    hosts), which a bare '/' would run together."""
    return (" / " if any("," in p for p in places) else "/").join(places)


def region_text(region: Any, more: int = 0) -> str:
    """'eu-north1/us-central1 +3': the first REGIONS_SHOWN places of an offer's region, then how many
    more places the same choice is available in (the rest of its own list and `also_at`)."""
    places = region_places(region)
    if not places:
        return "?" + (f" +{more}" if more else "")
    more += max(len(places) - REGIONS_SHOWN, 0)
    return places_text(places[:REGIONS_SHOWN]) + (f" +{more}" if more else "")


def region_full(region: Any) -> str:
    """Every place an offer's region lists, spaced apart where places are comma lists; '' when none."""
    return places_text(region_places(region))


def date_is_nominal(p: dict[str, Any]) -> bool:
    """The plan's price date is a snapshot's, not an observation's (the catalog marks it 'nominal: ...'): the price
    is at least that old, perhaps older."""
    return str(((p.get("offer") or {}).get("as_of_note")) or "").startswith("nominal")


def plan_row(p: dict[str, Any], serve: bool, on_front: bool = False) -> dict[str, str]:
    """One ranked plan (its JSON dict) as display cells, keyed as in *_PLAN_COLUMNS."""
    lo = p.get("cost_p10_usd")
    more = len(p.get("also_at") or [])
    return {
        "rank": f"{p['rank']}{'*' if on_front else ''}",
        "provider": p["provider"], "gpu": p["gpu"],
        "shape": (f"{p['gpus']} GPUs" + (f" ({p['nodes']}x{p['gpus_per_node']:g})" if p['nodes'] > 1 else "")
                  if serve else f"{p['nodes']}x{p['gpus_per_node']:g}"),
        "pricing": fmt_pricing(p["pricing"]), "layout": plan_layout_text(p),
        "wall": fmt_hours(p.get("wall_hours")), "wall_p90": fmt_hours(p.get("wall_p90_hours")),
        "cost": fmt_usd(p["cost_usd"]), "cost_p90": fmt_usd(p.get("cost_p90_usd")),
        "band": f"{fmt_usd_short(lo if _num(lo) else p['cost_usd'])}-{fmt_usd_short(p.get('cost_p90_usd'))}"
                + (" =" if p.get("ties_first") else ""),
        "region": region_text(p.get("region"), more),
        "per_mtok": fmt_usd(p.get("cost_per_million_output_tokens_usd")) if serve else MISSING,
        "rtt": fmt_ms(p.get("network_rtt_ms")) if p.get("network_rtt_ms") is not None else MISSING,
        "ckpt": f"{p['checkpoint_interval_min']:.0f} min" if p.get("checkpoint_interval_min") else MISSING,
        "risk": f"{p['risk']:.2f}",
        "age": f"{'>=' if date_is_nominal(p) else ''}{p['price_age_days']}d{' stale' if p.get('stale') else ''}",
        "confidence": p.get("confidence"),
    }


def table_width(rows: list[dict[str, str]], columns, pad: int = 3) -> int:
    """Characters a boxed table of these (key, header, ...) columns needs with no cell split."""
    return sum(max([len(str(r.get(c[0], ""))) for r in rows] + [len(c[1])]) + pad for c in columns) + 1


def fit_columns(rows: list[dict[str, str]], columns, width: int) -> list[tuple[str, str]]:
    """The (key, header) columns that fit `width` characters with every cell whole: drop the
    highest-priority-number columns first (ties: the rightmost). Columns: (key, header, priority)."""
    cols = list(columns)
    while table_width(rows, cols) > width:
        droppable = [(c[2], i) for i, c in enumerate(cols) if c[2] > 0]
        if not droppable:
            break
        cols.pop(max(droppable)[1])
    return [(k, h) for k, h, _ in cols]
