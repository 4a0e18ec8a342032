"""Render results as a Rich table, JSON or CSV. Presentation only: no estimation here.

How a value reads (money, durations, layouts) is gpuplan.display's, shared with the report and the page."""
from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gpuplan.display import fmt_usd, fmt_usd_short, fmt_value, to_jsonable  # noqa: F401 (the CLI's names)


def print_json(obj: Any, as_csv: bool = False) -> None:
    """JSON on stdout; with `as_csv` the same record as CSV (print_record_csv)."""
    if as_csv:
        print_record_csv(obj)
        return
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


def print_record_csv(obj: Any) -> None:
    """--csv for a command whose answer is a record (an estimate, a TCO): one flat row, nested
    fields as dotted columns; a list of records is one row each."""
    from gpuplan.display import flat_record

    data = to_jsonable(obj)
    rows = [flat_record(r) for r in data] if isinstance(data, list) else [flat_record(data)]
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    print_csv(rows, cols)


def print_table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[tuple[str, str]],
    title: str | None = None,
    formatters: dict[str, Callable[[Any], str]] | None = None,
    caption: str | None = None,
    keep_whole: Sequence[str] = (),
    width: int | None = None,
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
        min_width = max([len(row[c]) for row in cells] + [1]) if whole else None
        table.add_column(header, justify="right" if key in numeric else "left", overflow="fold",
                         no_wrap=whole, min_width=min_width)
    for row in cells:
        table.add_row(*row)
    _console(width).print(table)


def _console(width: int | None = None):
    """A terminal's own width; when piped $COLUMNS, else 160, so tables stay readable in logs; `width`
    when given (--wide: as wide as the table needs)."""
    from rich.console import Console

    if width is not None:
        return Console(width=width)
    import os

    console = Console()
    if console.is_terminal:
        return console
    cols = os.environ.get("COLUMNS", "")
    return Console(width=int(cols) if cols.isdigit() and int(cols) >= 40 else 160)


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
