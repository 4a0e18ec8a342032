"""The store's merged current offers, kept as columns between reads.

Merging the newest snapshot of every source and filling in deployability costs ~10 s over 10^6
offers, and gives the same rows until a snapshot is added or removed. The store keeps that result
in one blob (table `current_cache`, keyed by the snapshots it was made from and the rules that made
it) and a reader decodes it in about a second, filtered by GPU and provider before any row is built.

The blob is a NumPy `.npz` archive read with `allow_pickle=False` (a store file may come from
someone else: nothing in it is executed). Each column is stored dictionary-encoded (small integer
codes and a JSON list of distinct values; dates as ISO strings) except the two prices, which are
float64 arrays; `by_price` is the permutation that gives the catalog's listing order.
"""
from __future__ import annotations

import datetime as dt
import functools
import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Iterable, Sequence
from importlib import resources

import numpy as np

FORMAT = 1
FLOAT_COLUMNS = frozenset({"price_per_hour_usd", "price_per_gpu_hour_usd"})
DATE_COLUMNS = frozenset({"as_of"})


@functools.cache
def rules_fingerprint() -> str:
    """What else decides the cached rows besides the snapshots: this format, gpuplan's version and
    the deployability table that fills cluster and fabric fields. Read once per process (every
    read of the store asks for it; the package's data does not change under a running process)."""
    from gpuplan import __version__

    h = hashlib.sha256(f"{FORMAT}|{__version__}|".encode())
    h.update(resources.files("gpuplan.catalog.data").joinpath("deployability.csv").read_bytes())
    return h.hexdigest()[:16]


def _codes_dtype(n: int):
    return np.uint8 if n <= 1 << 8 else np.uint16 if n <= 1 << 16 else np.uint32


def encode(rows: Sequence[tuple], columns: Sequence[str], sort_by: Sequence[str]
           ) -> tuple[bytes, np.ndarray, np.ndarray]:
    """`rows` (values in `columns` order, in any order) as a blob, stored sorted by the `sort_by`
    columns (stable: ties keep the given order). Returns (blob, the sorted order as indices into
    `rows`, the listing order as indices into the sorted order: cheapest per GPU-hour, then per
    node-hour, ties in sorted order). Columns named in `sort_by` must hold no None."""
    n = len(rows)
    by_column = list(zip(*rows)) or [()] * len(columns)  # one pass over the rows, not one per column
    arrays: dict[str, np.ndarray] = {}
    uniques: list[list | None] = []
    sort_keys: dict[str, np.ndarray] = {}
    for i, name in enumerate(columns):
        values = by_column[i]
        if name in FLOAT_COLUMNS:
            arrays[f"f{i}"] = np.array(values, dtype=np.float64)
            uniques.append(None)
            sort_keys[name] = arrays[f"f{i}"]
            continue
        distinct = list(dict.fromkeys(values))
        if len(set(map(type, values)) - {type(None)}) > 1:  # 1, 1.0 and True would share a code
            typed = list(dict.fromkeys(zip(map(type, values), values)))
            index = {tv: j for j, tv in enumerate(typed)}
            codes = np.fromiter(map(index.__getitem__, zip(map(type, values), values)), dtype=np.int64, count=n)
            distinct = [v for _t, v in typed]
        else:
            index = {v: j for j, v in enumerate(distinct)}
            codes = np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=n)
        if name in sort_by:  # each value's rank among the distinct values, so that codes sort like values
            rank = np.empty(len(distinct), dtype=np.int64)
            rank[sorted(range(len(distinct)), key=distinct.__getitem__)] = np.arange(len(distinct))
            sort_keys[name] = rank[codes]
        arrays[f"c{i}"] = codes.astype(_codes_dtype(len(distinct)))
        if name in DATE_COLUMNS:
            distinct = [v.isoformat() for v in distinct]
        uniques.append(distinct)
    del by_column
    merged = np.lexsort([sort_keys[c] for c in reversed(sort_by)]) if n else np.zeros(0, dtype=np.int64)
    for k in arrays:
        arrays[k] = arrays[k][merged]
    i_gpu, i_node = columns.index("price_per_gpu_hour_usd"), columns.index("price_per_hour_usd")
    listing = np.lexsort((arrays[f"f{i_node}"], arrays[f"f{i_gpu}"]))  # stable: equal prices keep merged order
    meta = {"format": FORMAT, "columns": list(columns), "n": n, "uniques": uniques}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    arrays["by_price"] = listing
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue(), merged, listing


def decode(blob: bytes, columns: Sequence[str], *, make: Callable[[tuple], tuple],
           gpus: Iterable[str] | None = None, providers: Iterable[str] | None = None,
           by_price: bool = False) -> list[tuple] | None:
    """The cached rows built by `make`, only those of `gpus` / `providers` when given, in merged or
    listing order; None when the blob is not one this code wrote for `columns`."""
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            meta = json.loads(z["meta"].tobytes())
            if meta.get("format") != FORMAT or meta.get("columns") != list(columns):
                return None
            n = int(meta["n"])
            order = z["by_price"].astype(np.int64) if by_price else np.arange(n)
            for name, wanted in (("gpu", gpus), ("provider", providers)):
                if wanted is not None:
                    i = columns.index(name)
                    wanted = set(wanted)
                    ok = np.array([u in wanted for u in meta["uniques"][i]] or [False], dtype=bool)
                    order = order[ok[z[f"c{i}"][order]]]
            cols = []
            for i, name in enumerate(columns):
                if name in FLOAT_COLUMNS:
                    cols.append(z[f"f{i}"][order].tolist())
                    continue
                distinct = meta["uniques"][i]
                if name in DATE_COLUMNS:
                    distinct = [dt.date.fromisoformat(v) for v in distinct]
                table = np.empty(max(1, len(distinct)), dtype=object)
                table[:len(distinct)] = distinct
                cols.append(table[z[f"c{i}"][order]].tolist())
    except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, zipfile.BadZipFile):
        return None  # not a blob this code wrote: the caller reads the snapshots instead
    return list(map(make, zip(*cols))) if cols and len(order) else []
