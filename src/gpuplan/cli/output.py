"""Render results as a Rich table, JSON or CSV. Presentation only: no estimation here."""
from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any


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


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2) + "\n")


def print_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """CSV on stdout; text cells a spreadsheet would run as formulas ('=', '+', '-', '@', tab, CR
    first) get a leading apostrophe (gpuplan.files.csv_safe). Numbers are written as numbers."""
    from gpuplan.files import csv_safe

    rows = [to_jsonable(r) for r in rows]
    cols = list(columns or (rows[0].keys() if rows else []))
    w = csv.DictWriter(sys.stdout, cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else csv_safe(r.get(k))) for k in cols})


def print_table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[tuple[str, str]],
    title: str | None = None,
    formatters: dict[str, Callable[[Any], str]] | None = None,
    caption: str | None = None,
    keep_whole: Sequence[str] = (),
) -> None:
    """columns: (key, header) pairs; numbers right-aligned. Cells of `keep_whole` columns (money,
    bands) are never split across lines: other columns fold first."""
    from rich.table import Table

    formatters = formatters or {}
    table = Table(title=title, caption=caption, header_style="bold", show_lines=False)
    numeric = {k for k, _ in columns if rows and isinstance(rows[0].get(k), (int, float))}
    cells = [[formatters.get(k, fmt_value)(r.get(k)) for k, _ in columns] for r in rows]
    for c, (key, header) in enumerate(columns):
        whole = key in keep_whole
        width = max([len(row[c]) for row in cells] + [1]) if whole else None
        table.add_column(header, justify="right" if key in numeric else "left", overflow="fold",
                         no_wrap=whole, min_width=width)
    for row in cells:
        table.add_row(*row)
    _console().print(table)


def _console():
    """A terminal's own width; 160 columns when piped, so tables stay readable in logs."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=160)


def fmt_value(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "-"
        if v == int(v) and abs(v) < 1e6:
            return f"{int(v)}"
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def fmt_usd(v: Any) -> str:
    if v is None:
        return "-"
    return f"${v:,.2f}" if v < 1e5 else f"${v:,.0f}"


def fmt_usd_short(v: Any) -> str:
    """$950, $12.3k, $1.64M: for bands and narrow columns."""
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e9:
        return f"${v / 1e9:.3g}B"
    if a >= 1e6:
        return f"${v / 1e6:.3g}M"
    if a >= 1e3:
        return f"${v / 1e3:.3g}k"
    return f"${v:.0f}"


def emit(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[tuple[str, str]],
    as_json: bool = False,
    as_csv: bool = False,
    title: str | None = None,
    formatters: dict[str, Callable[[Any], str]] | None = None,
    json_obj: Any = None,
    caption: str | None = None,
) -> None:
    """One place that decides the output format for list-like results."""
    if as_json:
        print_json(json_obj if json_obj is not None else list(rows))
    elif as_csv:
        print_csv(rows)
    else:
        print_table(rows, columns, title=title, formatters=formatters, caption=caption)
