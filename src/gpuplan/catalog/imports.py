"""The user's own offers in and out: CSV or YAML with the `Offer` fields as columns.

Users hold prices no API shows (a negotiated rate, a private cluster's amortized cost).
Import is all-or-nothing: every row is checked first and the first bad cell is named
('offers.csv row 3, column price_per_hour_usd: not a number'); only a fully valid file
becomes a snapshot of source 'user:<name>'. Export writes exactly what import reads, and
writes files atomically (temp file + rename) so a failure leaves no half-written file.

CSV export escapes text cells a spreadsheet would run as formulas ('=...', '+...', '-...', '@...',
a leading tab or CR) with a leading apostrophe; CSV import removes exactly that escape, so a file
round-trips. YAML is read with a strict safe loader: every plain scalar stays a string (`no` is the
text "no", not false; booleans are decided per column: only `cluster` reads yes/no), and a mapping
that repeats a key is refused instead of silently keeping the last value.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import math
import os
import pathlib
import re
from collections.abc import Iterable
from typing import Any

from gpuplan.catalog.records import CONFIDENCE_RANK, PRICING_TYPES, Offer, parse_as_of
from gpuplan.catalog.store import scrub
from gpuplan.errors import UnknownNameError, UsageError
from gpuplan.files import csv_safe, csv_unescape, shown_name, write_atomic  # noqa: F401  (write_atomic re-exported)

COLUMNS: tuple[str, ...] = tuple(Offer.model_fields)
REQUIRED = ("provider", "instance_type", "gpu", "gpus_per_node", "pricing", "price_per_hour_usd")
MAX_FILE_BYTES = 32 * 2**20
MAX_ROWS = 200_000
MAX_TEXT = 200
MAX_GPUS_PER_NODE = 100_000
MIN_GPUS_PER_NODE = 0.01  # fractional slices (1/8, 1/20 of a GPU) exist; 1e-300 is a typo
CEILING_USD_PER_GPU_HOUR = 60.0  # catches cents-for-dollars and per-month typos; no floor: own clusters can be cheap
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
_PRICING_ALIASES = {p.replace("_", "-"): p for p in PRICING_TYPES} | {"ondemand": "on_demand", "on demand": "on_demand"}


class _CellError(Exception):
    def __init__(self, column: str, message: str):
        super().__init__(message)
        self.column, self.message = column, message


def source_name_for(name: str) -> str:
    if not NAME_RE.match(name or ""):
        raise UsageError(f"import name {name!r} must be 1-40 letters, digits, '.', '_' or '-'")
    return f"user:{name}"


def default_import_name(path: pathlib.Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]", "-", path.stem).strip("-.") or "import"
    return stem[:40] if NAME_RE.match(stem[:40]) else "import"


# ---- parsing --------------------------------------------------------------------------------
def _text(col: str, v: Any, required: bool = False) -> str:
    if v is None:
        v = ""
    if isinstance(v, (dict, list)):
        raise _CellError(col, "must be a single value, not a list or mapping")
    s = str(v).strip()
    if required and not s:
        raise _CellError(col, "is empty")
    if len(s) > MAX_TEXT:
        raise _CellError(col, f"longer than {MAX_TEXT} characters")
    if any(ord(ch) < 32 for ch in s):
        raise _CellError(col, "contains control characters")
    return s


def _number(col: str, v: Any, *, required: bool, positive: bool, upper: float | None = None,
            lower: float | None = None) -> float | None:
    if v is None or (isinstance(v, str) and not v.strip()):
        if required:
            raise _CellError(col, "is empty")
        return None
    if isinstance(v, bool) or isinstance(v, (dict, list)):
        raise _CellError(col, "not a number")
    try:
        f = float(str(v).strip().replace("_", "x")) if not isinstance(v, (int, float)) else float(v)
    except (ValueError, OverflowError):
        raise _CellError(col, "not a number") from None
    if not math.isfinite(f):
        raise _CellError(col, "must be a finite number")
    if positive and f <= 0:
        raise _CellError(col, "must be greater than 0")
    if f < 0:
        raise _CellError(col, "must not be negative")
    if upper is not None and f > upper:
        raise _CellError(col, f"{f:g} is implausibly large (limit {upper:g})")
    if lower is not None and f < lower:
        raise _CellError(col, f"{f:g} is implausibly small (at least {lower:g})")
    return f


def _date(col: str, v: Any) -> tuple[dt.date, str]:
    today = dt.date.today()
    if v is None or (isinstance(v, str) and not v.strip()):
        return today, "undated in the imported file: dated on import"
    if isinstance(v, dt.datetime):
        v = v.date()
    if isinstance(v, dt.date):
        d, label = v, ""
    else:
        s = _text(col, v)
        try:
            d = parse_as_of(s)
        except (ValueError, OverflowError):
            raise _CellError(col, f"{s[:30]!r} is not a date (use YYYY-MM-DD)") from None
        label = "" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s) else s
    if d.year < 2000 or d > today + dt.timedelta(days=1):
        raise _CellError(col, f"{d.isoformat()} is out of range (2000 .. today)")
    return d, label


def parse_offer_row(row: dict[str, Any], default_source: str) -> Offer:
    """One row to a validated user Offer; `_CellError` names the bad column."""
    from gpuplan.catalog.gpus import resolve_gpu_id

    provider = _text("provider", row.get("provider"), required=True).lower()
    instance_type = _text("instance_type", row.get("instance_type"), required=True)
    gpu_name = _text("gpu", row.get("gpu"), required=True)
    try:
        gpu = resolve_gpu_id(gpu_name)
    except UnknownNameError as e:
        raise _CellError("gpu", str(e)) from None
    count = _number("gpus_per_node", row.get("gpus_per_node"), required=True, positive=True, upper=MAX_GPUS_PER_NODE,
                    lower=MIN_GPUS_PER_NODE)
    pricing_raw = _text("pricing", row.get("pricing"), required=True).lower()
    pricing = pricing_raw if pricing_raw in PRICING_TYPES else _PRICING_ALIASES.get(pricing_raw)
    if pricing is None:
        raise _CellError("pricing", f"{pricing_raw[:30]!r} is not one of {', '.join(PRICING_TYPES)}")
    price = _number("price_per_hour_usd", row.get("price_per_hour_usd"), required=True, positive=True,
                    upper=CEILING_USD_PER_GPU_HOUR * MAX_GPUS_PER_NODE)
    per_gpu = price / count
    if per_gpu > CEILING_USD_PER_GPU_HOUR:
        raise _CellError("price_per_hour_usd", f"${per_gpu:,.4g} per GPU-hour is above the "
                                               f"${CEILING_USD_PER_GPU_HOUR:.0f} ceiling (cents or per-month?)")
    given = _number("price_per_gpu_hour_usd", row.get("price_per_gpu_hour_usd"), required=False, positive=True)
    if given is not None and abs(given - per_gpu) > max(0.005, 0.01 * per_gpu):
        raise _CellError("price_per_gpu_hour_usd", f"{given:g} != price_per_hour_usd / gpus_per_node = {per_gpu:.4g}")
    if given is not None and abs(given - per_gpu) <= 1e-6 * max(1.0, per_gpu):
        per_gpu = given  # keep the file's value exactly (round trip); it agrees with the division
    as_of, label = _date("as_of", row.get("as_of"))
    note = _text("as_of_note", row.get("as_of_note")) or label
    confidence = _text("confidence", row.get("confidence")).lower()
    if confidence and confidence not in CONFIDENCE_RANK:
        raise _CellError("confidence", f"{confidence[:20]!r} is not a confidence level")
    try:
        return Offer(
            provider=provider, instance_type=instance_type, gpu=gpu, gpus_per_node=count,
            region=_text("region", row.get("region")), pricing=pricing, price_per_hour_usd=price,
            price_per_gpu_hour_usd=per_gpu,
            vcpus=_number("vcpus", row.get("vcpus"), required=False, positive=False, upper=1e6),
            ram_gb=_number("ram_gb", row.get("ram_gb"), required=False, positive=False, upper=1e8),
            interconnect=_text("interconnect", row.get("interconnect")) or None,
            commitment_term_h=_number("commitment_term_h", row.get("commitment_term_h"), required=False,
                                      positive=True, upper=24 * 366 * 10),
            as_of=as_of, as_of_note=scrub(note), source=scrub(_text("source", row.get("source")) or default_source),
            confidence="user", cluster=_yes_no("cluster", row.get("cluster")),
            fabric_gbps_per_node=_number("fabric_gbps_per_node", row.get("fabric_gbps_per_node"), required=False,
                                         positive=True, upper=1e6),
            max_nodes=_whole("max_nodes", row.get("max_nodes")),
        )
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        raise _CellError("row", str(e).splitlines()[0][:120]) from None


def _yes_no(col: str, v: Any) -> bool | None:
    """yes/no/true/false/1/0 (a YAML boolean too); empty = unknown."""
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, bool):
        return v
    t = str(v).strip().lower()
    if t in ("yes", "true", "1", "y"):
        return True
    if t in ("no", "false", "0", "n"):
        return False
    raise _CellError(col, f"{t[:20]!r} is not yes or no")


def _whole(col: str, v: Any) -> int | None:
    x = _number(col, v, required=False, positive=True, upper=1e6)
    if x is None:
        return None
    if x != int(x):
        raise _CellError(col, f"{x:g} is not a whole number")
    return int(x)


def _read_text(path: pathlib.Path) -> str:
    from gpuplan.files import check_in_file

    check_in_file(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    if path.is_dir():
        raise UsageError(f"{path} is a folder, not an offers file")
    if size > MAX_FILE_BYTES:
        raise UsageError(f"{path.name} is {size / 2**20:.0f} MiB; the import limit is {MAX_FILE_BYTES // 2**20} MiB")
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path.name} is not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def _check_columns(fname: str, cols: Iterable[Any]) -> None:
    seen: set[str] = set()
    for c in cols:
        if not isinstance(c, str) or not c.strip():
            raise UsageError(f"{fname}: empty or non-text column name")
        c = c.strip()
        if c in seen:
            raise UsageError(f"{fname}: column {c!r} appears twice")
        seen.add(c)
        if c not in COLUMNS:
            raise UsageError(f"{fname}: unknown column {shown_name(c)}; expected {', '.join(COLUMNS)}")
    missing = [c for c in REQUIRED if c not in seen]
    if missing:
        raise UsageError(f"{fname}: missing column(s) {', '.join(missing)}")


def rows_from_csv(text: str, fname: str) -> list[tuple[int, dict[str, Any]]]:
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None or not any(h.strip() for h in header):
            raise UsageError(f"{fname} is empty; expected a header row with {', '.join(REQUIRED)} ...")
        _check_columns(fname, header)
        header = [h.strip() for h in header]
        out = []
        for i, cells in enumerate(reader, start=2):
            if not cells or all(not c.strip() for c in cells):
                continue
            if len(cells) > len(header):
                raise UsageError(f"{fname} row {i}: {len(cells)} cells but the header has {len(header)}")
            out.append((i, {h: csv_unescape(c) for h, c in zip(header, cells)}))
            if len(out) > MAX_ROWS:
                raise UsageError(f"{fname}: more than {MAX_ROWS} rows")
    except csv.Error as e:
        raise UsageError(f"{fname} is not valid CSV ({str(e)[:80]})") from None
    return out


_YAML_LOADER = None
_NULL_TAG = "tag:yaml.org,2002:null"


def yaml_loader():
    """A safe YAML loader (the C one when built) that keeps every plain scalar but null as a string
    (so `provider: no` is "no" and `instance_type: 1.10` is "1.10"; the column parsers decide what is a
    number, a date or a yes/no) and refuses a mapping that repeats a key."""
    global _YAML_LOADER
    if _YAML_LOADER is not None:
        return _YAML_LOADER
    import yaml
    from yaml.constructor import ConstructorError

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictStringLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: set = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        duplicate = key in seen
                    except TypeError:
                        continue  # an unhashable key: the base class refuses it
                    if duplicate:
                        raise ConstructorError("while constructing a mapping", node.start_mark,
                                               f"duplicate key {str(key)[:40]!r}", key_node.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    StrictStringLoader.yaml_implicit_resolvers = {
        ch: [(tag, rx) for tag, rx in resolvers if tag == _NULL_TAG]
        for ch, resolvers in base.yaml_implicit_resolvers.items()
        if any(tag == _NULL_TAG for tag, _ in resolvers)
    }
    _YAML_LOADER = StrictStringLoader
    return StrictStringLoader


def rows_from_yaml(text: str, fname: str) -> list[tuple[int, dict[str, Any]]]:
    import yaml

    try:
        data = yaml.load(text, Loader=yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = str(getattr(e, "problem", "") or "")
        why = f": {problem}" if problem.startswith("duplicate key") else ""
        raise UsageError(f"{fname} is not valid YAML{where}{why}") from None
    except (RecursionError, ValueError, OverflowError):
        raise UsageError(f"{fname} is not valid YAML") from None
    if isinstance(data, dict) and "offers" in data:
        extra = [k for k in data if k != "offers"]
        if extra:
            raise UsageError(f"{fname}: unknown top-level key {str(extra[0])[:40]!r}; expected 'offers'")
        data = data["offers"]
    if data is None:
        raise UsageError(f"{fname} holds no offers")
    if not isinstance(data, list):
        raise UsageError(f"{fname}: expected a list of offers (or 'offers:' followed by a list)")
    if len(data) > MAX_ROWS:
        raise UsageError(f"{fname}: more than {MAX_ROWS} rows")
    out = []
    for i, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            raise UsageError(f"{fname} row {i}: expected a mapping of column: value")
        try:
            _check_columns(fname, item.keys())
        except UsageError as e:
            raise UsageError(str(e).replace(f"{fname}:", f"{fname} row {i}:", 1)) from None
        out.append((i, {k.strip(): v for k, v in item.items()}))
    return out


def parse_offers_file(path: str | os.PathLike) -> list[Offer]:
    """Every row of a CSV/YAML offers file as validated user Offers, or UsageError naming
    the first bad row and column. Nothing is written."""
    p = pathlib.Path(path)
    text = _read_text(p)
    fname = p.name
    ext = p.suffix.lower()
    if ext in (".yaml", ".yml"):
        rows = rows_from_yaml(text, fname)
    elif ext in (".csv", ".txt", ""):
        rows = rows_from_csv(text, fname)
    else:
        raise UsageError(f"{fname}: unknown file type {ext!r}; use .csv, .yaml or .yml")
    if not rows:
        raise UsageError(f"{fname} holds no offers")
    offers: list[Offer] = []
    seen: dict[tuple, int] = {}
    default_source = f"user import {fname}"[:MAX_TEXT]
    for i, row in rows:
        try:
            o = parse_offer_row(row, default_source)
        except _CellError as e:
            raise UsageError(f"{fname} row {i}, column {e.column}: {e.message}") from None
        key = (o.provider, o.instance_type, o.gpu, o.region, o.pricing, o.commitment_term_h)
        if key in seen:
            raise UsageError(f"{fname} row {i}: duplicates row {seen[key]} "
                             f"(same provider, instance_type, gpu, region, pricing, commitment_term_h)")
        seen[key] = i
        offers.append(o)
    return offers


def import_offers(store, path: str | os.PathLike, name: str | None = None):
    """Parse the whole file, then write it as one snapshot of 'user:<name>'."""
    p = pathlib.Path(path)
    source = source_name_for(name if name is not None else default_import_name(p))
    offers = parse_offers_file(p)
    return store.write_snapshot(source, offers, raw_rows=len(offers), note=f"imported from {p.name}"[:200])


# ---- export ---------------------------------------------------------------------------------
def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
    if isinstance(v, dt.date):
        return v.isoformat()
    return str(v)


def offer_record(o: Offer) -> dict[str, Any]:
    return {c: getattr(o, c) for c in COLUMNS}


def render_offers(offers: list[Offer], fmt: str) -> str:
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        for o in offers:
            w.writerow([csv_safe(_cell(getattr(o, c))) if isinstance(getattr(o, c), str) else _cell(getattr(o, c))
                        for c in COLUMNS])
        return buf.getvalue()
    if fmt == "yaml":
        import yaml

        recs = []
        for o in offers:
            r = offer_record(o)
            r["as_of"] = o.as_of.isoformat()
            recs.append(r)
        return yaml.dump({"offers": recs}, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                         allow_unicode=True, width=1000)
    raise UsageError(f"unknown export format {fmt!r}; use csv or yaml")
