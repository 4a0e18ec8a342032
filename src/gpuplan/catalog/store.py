"""The offer store: one SQLite file of dated snapshots, one per refresh of each source.

Why snapshots: prices move hourly and sources fail; a refresh adds a new snapshot of one
source in ONE transaction, and readers always see the newest COMPLETE snapshot of every
source, so a failed, empty or killed refresh never loses what the user had. Old snapshots
stay for `history`. The bundled catalog is the first snapshot (source 'bundled'); user
imports are sources 'user:<name>' with confidence 'user'.

WAL mode lets readers run while a refresh writes; a busy timeout makes two writers queue
instead of failing; a process killed mid-write leaves only an uncommitted transaction,
which SQLite rolls back on the next open.

Read-only stores (a team's catalog on a read-only mount, a file or folder this user may not
write) open read-only (`mode=ro`, or `immutable=1` when SQLite cannot even create its shared-memory
file): no WAL switch, no migration, no bundled seeding. Reads work; on a store whose schema is
older than this gpuplan's, columns added since read as unknown. Only import, refresh, remove and
prune write, and on such a store they fail in one line before doing any work.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import gc
import hashlib
import itertools
import json
import operator
import os
import pathlib
import re
import sqlite3
import stat
import statistics
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuplan.catalog.records import CONFIDENCE_RANK, PRICING_TYPES, STALE_AFTER_DAYS, Offer
from gpuplan.errors import GpuplanError, UsageError

SCHEMA_VERSION = 4
BUNDLED = "bundled"
USER_PREFIX = "user:"
BUSY_TIMEOUT_S = 15.0
STALE_SNAPSHOT_DAYS = 7  # a live source not refreshed for a week is flagged
SHRINK_GUARD = 0.25  # a refresh returning < 25% of the previous offers is refused unless forced
SHRINK_GUARD_MIN_PREVIOUS = 20

OFFER_COLUMNS: tuple[str, ...] = tuple(Offer.model_fields)
_SQLITE_MAGIC = b"SQLite format 3\x00"


def resolve_db_path(db: str | os.PathLike | None = None) -> pathlib.Path:
    """Explicit argument > $GPUPLAN_DB > the user data dir (`gpuplan/catalog.db`)."""
    if db is not None and str(db).strip():
        return pathlib.Path(db).expanduser()
    if env := os.environ.get("GPUPLAN_DB", "").strip():
        return pathlib.Path(env).expanduser()
    import platformdirs

    return pathlib.Path(platformdirs.user_data_dir("gpuplan", appauthor=False)) / "catalog.db"


# Credentials in URLs: 'scheme://anything@' (a token or user:password), and 'user:password@host' without
# a scheme (how the sources' `where()` prints a URL).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/]+@")
_BARE_USERINFO = re.compile(r"([^\s/@:'\"()]+):[^\s/'\"()]*@(?=[A-Za-z0-9\[])")
# Key-like query or fragment parameters ('?api_key=...', '&token=...', '&X-Amz-Signature=...').
_SECRET_PARAM = re.compile(r"(?i)([?&#;](?:[a-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|signature|sig|auth"
                           r"|credential)[a-z0-9_.-]*)=)[^&#\s'\"]+")


def scrub(text: str) -> str:
    """Text fit to print or store: known secrets replaced by '***', the credentials of any URL (user:password@ or
    token@) and the values of key-like URL parameters (api_key=, token=, signature=) dropped (a source URL set as
    GPUPLAN_<NAME>_URL, or an imported offer's source, may carry them)."""
    from gpuplan.catalog.secrets import redact

    out = _URL_USERINFO.sub(r"\1***@", redact(str(text)))
    out = _SECRET_PARAM.sub(r"\1***", out)
    return _BARE_USERINFO.sub(r"\1:***@", out)


REFRESH_DEADLINE_S = 60.0


def refresh_deadline_s(value: float | None = None) -> float:
    """The overall refresh deadline: an explicit value, else $GPUPLAN_REFRESH_TIMEOUT_S, else 60 s."""
    raw = value if value is not None else os.environ.get("GPUPLAN_REFRESH_TIMEOUT_S") or REFRESH_DEADLINE_S
    try:
        v = float(raw)
    except (TypeError, ValueError):
        raise UsageError(f"refresh timeout must be a number of seconds, got {raw!r}") from None
    if not (v > 0 and v < float("inf")):
        raise UsageError(f"refresh timeout must be a positive number of seconds, got {raw!r}")
    return v


# The confidence levels each schema's CHECK allowed (frozen: a migration never changes meaning later).
_V1_CONFIDENCE: tuple[str, ...] = ("live", "user", "primary", "third-party", "unverified")


def _migration_1(conn: sqlite3.Connection) -> None:
    pricing = ", ".join(f"'{p}'" for p in PRICING_TYPES)
    confidence = ", ".join(f"'{c}'" for c in _V1_CONFIDENCE)
    _run_script(conn, f"""
        CREATE TABLE snapshots (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            source TEXT NOT NULL,
            taken_at TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'complete', 'failed')),
            rows_added INTEGER NOT NULL DEFAULT 0,
            rows_skipped INTEGER NOT NULL DEFAULT 0,
            raw_rows INTEGER,
            skipped_json TEXT NOT NULL DEFAULT '{{}}',
            note TEXT NOT NULL DEFAULT '',
            fingerprint TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX snapshots_by_source ON snapshots (source, status, id);
        CREATE TABLE offers (
            snapshot_id INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
            provider TEXT NOT NULL,
            instance_type TEXT NOT NULL,
            gpu TEXT NOT NULL,
            gpus_per_node REAL NOT NULL CHECK (gpus_per_node > 0),
            region TEXT NOT NULL,
            pricing TEXT NOT NULL CHECK (pricing IN ({pricing})),
            price_per_hour_usd REAL NOT NULL CHECK (price_per_hour_usd > 0),
            price_per_gpu_hour_usd REAL NOT NULL CHECK (price_per_gpu_hour_usd > 0),
            vcpus REAL,
            ram_gb REAL,
            interconnect TEXT,
            commitment_term_h REAL,
            as_of TEXT NOT NULL,
            as_of_note TEXT NOT NULL,
            source TEXT NOT NULL,
            confidence TEXT NOT NULL CHECK (confidence IN ({confidence}))
        );
        CREATE INDEX offers_by_snapshot ON offers (snapshot_id);
        CREATE INDEX offers_history ON offers (gpu, provider, pricing, snapshot_id);
    """)


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Statements one by one: `executescript` would COMMIT the migration's open transaction."""
    for stmt in script.split(";"):
        if stmt.strip():
            conn.execute(stmt)


def _migration_2(conn: sqlite3.Connection) -> None:
    """Deployability columns: cluster product, fabric bandwidth per node, most nodes together."""
    conn.execute("ALTER TABLE offers ADD COLUMN cluster INTEGER")
    conn.execute("ALTER TABLE offers ADD COLUMN fabric_gbps_per_node REAL")
    conn.execute("ALTER TABLE offers ADD COLUMN max_nodes INTEGER")


_V3_CONFIDENCE: tuple[str, ...] = ("live", "user", "primary", "aggregated", "third-party", "unverified")


def _migration_3(conn: sqlite3.Connection) -> None:
    """Confidence 'aggregated' (feeds compiling providers' APIs). SQLite cannot alter a CHECK, so the
    offers table is rebuilt: new table, rows copied, old dropped, new renamed, indexes re-made, all
    inside the migration's one transaction (a kill rolls back to the intact v2 table)."""
    pricing = ", ".join(f"'{p}'" for p in PRICING_TYPES)
    confidence = ", ".join(f"'{c}'" for c in _V3_CONFIDENCE)
    cols = ("snapshot_id, provider, instance_type, gpu, gpus_per_node, region, pricing, price_per_hour_usd, "
            "price_per_gpu_hour_usd, vcpus, ram_gb, interconnect, commitment_term_h, as_of, as_of_note, source, "
            "confidence, cluster, fabric_gbps_per_node, max_nodes")
    _run_script(conn, f"""
        CREATE TABLE offers_v3 (
            snapshot_id INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
            provider TEXT NOT NULL,
            instance_type TEXT NOT NULL,
            gpu TEXT NOT NULL,
            gpus_per_node REAL NOT NULL CHECK (gpus_per_node > 0),
            region TEXT NOT NULL,
            pricing TEXT NOT NULL CHECK (pricing IN ({pricing})),
            price_per_hour_usd REAL NOT NULL CHECK (price_per_hour_usd > 0),
            price_per_gpu_hour_usd REAL NOT NULL CHECK (price_per_gpu_hour_usd > 0),
            vcpus REAL,
            ram_gb REAL,
            interconnect TEXT,
            commitment_term_h REAL,
            as_of TEXT NOT NULL,
            as_of_note TEXT NOT NULL,
            source TEXT NOT NULL,
            confidence TEXT NOT NULL CHECK (confidence IN ({confidence})),
            cluster INTEGER,
            fabric_gbps_per_node REAL,
            max_nodes INTEGER
        );
        INSERT INTO offers_v3 ({cols}) SELECT {cols} FROM offers ORDER BY rowid;
        DROP TABLE offers;
        ALTER TABLE offers_v3 RENAME TO offers;
        CREATE INDEX offers_by_snapshot ON offers (snapshot_id);
        CREATE INDEX offers_history ON offers (gpu, provider, pricing, snapshot_id)
    """)


def _migration_4(conn: sqlite3.Connection) -> None:
    """The merged current offers between reads (see `gpuplan.catalog.row_cache`): one row, replaced
    whenever the snapshots it was made from change."""
    conn.execute("CREATE TABLE current_cache (key TEXT NOT NULL, made_at TEXT NOT NULL, blob BLOB NOT NULL)")


# version -> migration that brings the schema from version-1 to version. Append, never edit.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migration_1, 2: _migration_2, 3: _migration_3,
                                                               4: _migration_4}


@dataclass
class SnapshotInfo:
    id: int
    source: str
    taken_at: str
    status: str
    rows_added: int
    rows_skipped: int
    raw_rows: int | None
    skipped: dict[str, int] = field(default_factory=dict)
    note: str = ""


@dataclass
class RefreshOutcome:
    """What one source's refresh did: 'ok', 'failed' (previous data kept) or 'skipped'."""

    source: str
    status: str
    rows_added: int = 0
    rows_skipped: int = 0
    raw_rows: int | None = None
    reason: str = ""
    skipped: dict[str, int] = field(default_factory=dict)
    snapshot_id: int | None = None
    elapsed_s: float = 0.0


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


def _offer_tuple(o: Offer, snapshot_id: int) -> tuple:
    return (snapshot_id, o.provider, o.instance_type, o.gpu, o.gpus_per_node, o.region, o.pricing,
            o.price_per_hour_usd, o.price_per_gpu_hour_usd, o.vcpus, o.ram_gb, o.interconnect,
            o.commitment_term_h, o.as_of.isoformat(), o.as_of_note, o.source, o.confidence,
            None if o.cluster is None else int(o.cluster), o.fabric_gbps_per_node, o.max_nodes)


@contextlib.contextmanager
def _no_gc():
    """Reading 100k offers allocates 100k objects that all survive: the cyclic collector would scan
    them over and over and find nothing to free. Nested uses are fine."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_object_setattr = object.__setattr__
_OFFER_NEW = Offer.__new__
_FAST_CONSTRUCT = (OFFER_COLUMNS == tuple(Offer.model_fields) and Offer.__pydantic_post_init__ is None
                   and not Offer.__private_attributes__ and Offer.model_config.get("extra") in (None, "ignore"))


def _row_offer(row: tuple, _dates: dict | None = None, _deployability: Callable | None = None) -> Offer:
    """Rows were validated as Offers when written and the schema enforces the invariants;
    constructing without re-validation keeps reads fast. The result is what
    `Offer.model_construct(**row)` builds (every field set), assembled directly: pydantic's
    generic construct costs ~17 us per offer (this ~7 us), which a 100k-offer store pays 100k times."""
    d = dict(zip(OFFER_COLUMNS, row))
    as_of = d["as_of"]
    if _dates is None:
        d["as_of"] = dt.date.fromisoformat(as_of)
    else:
        day = _dates.get(as_of)
        if day is None:
            day = _dates[as_of] = dt.date.fromisoformat(as_of)
        d["as_of"] = day
    if d["cluster"] is not None:
        d["cluster"] = bool(d["cluster"])
    if _deployability is not None:  # what catalog.deployability.with_deployability would change
        update = _deployability(d["provider"], d["instance_type"], d["gpus_per_node"], d["confidence"] == "user",
                                d["cluster"], d["fabric_gbps_per_node"], d["max_nodes"], d["interconnect"])
        if update:
            d.update(update)
    if not _FAST_CONSTRUCT:  # pragma: no cover - a records change this shortcut does not know
        return Offer.model_construct(**d)
    o = _OFFER_NEW(Offer)
    _object_setattr(o, "__dict__", d)
    _object_setattr(o, "__pydantic_fields_set__", set(OFFER_COLUMNS))
    _object_setattr(o, "__pydantic_extra__", None)
    _object_setattr(o, "__pydantic_private__", None)
    return o


def _on_readonly_fs(path: pathlib.Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def _is_readonly_error(e: sqlite3.DatabaseError) -> bool:
    msg = str(e).lower()
    return "readonly" in msg or "read-only" in msg


def _bundled_fingerprint() -> str:
    """Changes when the packaged offers change, so an upgraded gpuplan adds a fresh bundled snapshot."""
    from importlib import resources

    try:
        data = resources.files("gpuplan.catalog.data").joinpath("offers.csv").read_bytes()
    except (FileNotFoundError, ModuleNotFoundError, OSError):
        return ""
    return hashlib.sha256(data).hexdigest()[:16]


def _default_seed() -> list[Offer] | None:
    try:
        from gpuplan.catalog.bundled import load_bundled_offers
    except ImportError:
        return None
    return list(load_bundled_offers())


class Store:
    """An open store file. Use as a context manager; every write is one transaction.

    `readonly`: None (default) opens read-write when this process may write the file and its folder,
    else read-only; True always read-only; False requires write access (import, refresh, remove,
    prune) and refuses in one line when there is none."""

    def __init__(self, path: str | os.PathLike, *, seed: Callable[[], list[Offer] | None] | None = _default_seed,
                 busy_timeout_s: float = BUSY_TIMEOUT_S, readonly: bool | None = None):
        self.path = pathlib.Path(path)
        self.conn = None  # type: ignore[assignment]
        self.readonly = False
        self.readonly_reason = ""
        self._busy_timeout_s = busy_timeout_s
        self._columns: tuple[str, ...] = OFFER_COLUMNS
        self._check_file()
        why_not = self._why_not_writable()
        if why_not and readonly is False:
            raise UsageError(f"catalog store {self.path} is read-only here ({why_not}); this command writes it: "
                             "run it with write access, or pass another --db")
        if why_not or readonly:
            self._open_readonly(why_not or "opened read-only")
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot create the folder for catalog store {self.path}: {e.strerror}") from None
        try:
            self.conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None)
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
            if seed is not None:
                self._ensure_bundled(seed)
        except sqlite3.DatabaseError as e:
            self.close()
            if readonly is None and _is_readonly_error(e) and self.path.is_file():
                self._open_readonly(f"{e}")  # e.g. a read-only mount os.access did not report
                return
            raise self._db_error(e) from None
        except UnicodeDecodeError as e:  # a corrupt schema text (sqlite hands it back as bad UTF-8)
            self.close()
            raise UsageError(f"catalog store {self.path} is unreadable (corrupt schema: {e.reason}); "
                             "move it away or pass --db") from None
        except BaseException:
            self.close()
            raise

    # ---- opening -------------------------------------------------------------------------
    def _check_file(self) -> None:
        p = self.path
        try:
            if p.is_dir():
                raise UsageError(f"catalog store {p} is a folder; pass a file path with --db")
            if not p.exists():
                if os.path.lexists(p):
                    raise UsageError(f"catalog store {p} is a broken symlink or a symlink loop; fix it or pass --db")
                return
            st = p.stat()
            if not stat.S_ISREG(st.st_mode):
                raise UsageError(f"catalog store {p} is not a regular file (a device, FIFO or socket); pass --db "
                                 "with a file path")
            if st.st_size > 0:
                with open(p, "rb") as f:
                    if f.read(16) != _SQLITE_MAGIC:
                        raise UsageError(f"{p} is not a gpuplan catalog store (not SQLite); move it away or pass --db")
        except OSError as e:
            raise UsageError(f"cannot read catalog store {p} ({e.strerror or type(e).__name__}); pass --db "
                             "or set GPUPLAN_DB") from None

    def _why_not_writable(self) -> str:
        """Why this process cannot write an EXISTING store ('' when it can, or the file is new)."""
        p = self.path
        if not p.is_file():
            return ""
        if _on_readonly_fs(p):
            return "it is on a read-only filesystem"
        if not os.access(p, os.W_OK):
            return "the file is not writable"
        folder = p.parent if str(p.parent) else pathlib.Path(".")
        if not os.access(folder, os.W_OK | os.X_OK):
            return "its folder is not writable"
        return ""

    def _open_readonly(self, reason: str) -> None:
        """mode=ro: no WAL switch, no migration, no seeding. A WAL store in a folder nobody may write
        cannot get its shared-memory file, so it is then opened immutable (safe: nobody can write it)."""
        self.readonly, self.readonly_reason = True, reason
        base = "file:" + urllib.parse.quote(str(self.path.absolute()))
        last: sqlite3.DatabaseError | None = None
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            try:
                self.conn = sqlite3.connect(base + query, uri=True, timeout=self._busy_timeout_s,
                                            isolation_level=None)
                self.conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
                self.conn.execute("PRAGMA query_only = ON")
                version = self._schema_version()  # the first real read: fails here if it cannot open
                break
            except sqlite3.DatabaseError as e:
                self.close()
                last = e
        else:
            assert last is not None
            raise UsageError(f"catalog store {self.path} is read-only here and cannot be read ({last}); "
                             "pass --db or set GPUPLAN_DB") from None
        if version > SCHEMA_VERSION:
            self.close()
            raise UsageError(f"catalog store {self.path} was written by a newer gpuplan (schema {version}); "
                             f"upgrade gpuplan or pass another --db")
        have = {r[1] for r in self.conn.execute("PRAGMA table_info(offers)")} if version else set()
        wal = self.path.with_name(self.path.name + "-wal")
        if "immutable" in query and wal.is_file() and wal.stat().st_size > 0:
            self.close()
            raise UsageError(f"catalog store {self.path} is read-only here ({reason}) and its latest changes are "
                             f"still in {wal.name}, which SQLite cannot read without write access; open it once "
                             "with write access (e.g. `gpuplan catalog status`) to fold them in, or pass another --db")
        if version < 1 or not have or not self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'snapshots'").fetchone():
            self.close()
            raise UsageError(f"catalog store {self.path} is read-only here ({reason}) and holds no catalog yet; "
                             "open it once with write access (e.g. `gpuplan catalog status`) or pass another --db")
        # Columns a newer gpuplan added read as unknown on a store no one here may upgrade.
        self._columns = tuple(c if c in have else f"NULL AS {c}" for c in OFFER_COLUMNS)

    def _require_writable(self, what: str) -> None:
        if self.readonly:
            raise UsageError(f"catalog store {self.path} is read-only here ({self.readonly_reason}); {what} "
                             "needs write access: run it with write access, or pass another --db")

    def _db_error(self, e: sqlite3.DatabaseError) -> GpuplanError:
        msg = str(e).lower()
        if "locked" in msg or "busy" in msg:
            return GpuplanError(f"catalog store {self.path} is busy (another gpuplan is writing it); try again")
        if "readonly" in msg or "read-only" in msg or "unable to open" in msg:
            return UsageError(f"cannot write catalog store {self.path} ({e}); pass --db or set GPUPLAN_DB")
        if "disk is full" in msg or "disk i/o" in msg:
            return GpuplanError(f"cannot write catalog store {self.path} ({e}); nothing was changed")
        return UsageError(f"catalog store {self.path} is unreadable ({e}); move it away or pass --db")

    def _schema_version(self) -> int:
        c = self.conn
        if not c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").fetchone():
            return 0
        row = c.execute("SELECT version FROM schema_version").fetchone()
        return row[0] if row else 0

    def _migrate(self) -> None:
        """Bring the schema up to date. Checked with a plain read first, so opening a current
        store never waits for another process's write lock."""
        c = self.conn
        current = self._schema_version()
        if current == SCHEMA_VERSION:
            return
        if current > SCHEMA_VERSION:
            raise UsageError(f"catalog store {self.path} was written by a newer gpuplan (schema {current}); "
                             f"upgrade gpuplan or pass another --db")
        c.execute("BEGIN IMMEDIATE")
        try:
            c.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            current = self._schema_version()  # another process may have migrated meanwhile
            if current > SCHEMA_VERSION:
                raise UsageError(f"catalog store {self.path} was written by a newer gpuplan (schema {current}); "
                                 f"upgrade gpuplan or pass another --db")
            for v in range(current + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[v](c)
            if current != SCHEMA_VERSION:
                c.execute("DELETE FROM schema_version")
                c.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def _ensure_bundled(self, seed: Callable[[], list[Offer] | None]) -> None:
        fp = _bundled_fingerprint()
        row = self.conn.execute(
            "SELECT fingerprint FROM snapshots WHERE source = ? AND status = 'complete' ORDER BY id DESC LIMIT 1",
            (BUNDLED,)).fetchone()
        if row is not None and (row[0] == fp or not fp):
            return
        offers = seed()
        if not offers:
            return
        self.write_snapshot(BUNDLED, offers, note="packaged catalog", fingerprint=fp,
                            _only_if=lambda: self._bundled_fp_differs(fp))

    def _bundled_fp_differs(self, fp: str) -> bool:
        row = self.conn.execute(
            "SELECT fingerprint FROM snapshots WHERE source = ? AND status = 'complete' ORDER BY id DESC LIMIT 1",
            (BUNDLED,)).fetchone()
        return row is None or (bool(fp) and row[0] != fp)

    def close(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()
            self.conn = None  # type: ignore[assignment]

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- writing -------------------------------------------------------------------------
    def write_snapshot(self, source: str, offers: Iterable[Offer], *, raw_rows: int | None = None,
                       skipped: Mapping[str, int] | None = None, note: str = "", fingerprint: str = "",
                       _only_if: Callable[[], bool] | None = None) -> SnapshotInfo | None:
        """Add one complete snapshot of `source` in one transaction: the snapshot row is
        inserted 'pending' and marked 'complete' just before COMMIT; anything raised (or a
        kill) rolls the whole snapshot back. `offers` may be a generator (streamed in)."""
        self._require_writable("writing a snapshot")
        skipped = dict(skipped or {})
        c = self.conn
        try:
            c.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise self._db_error(e) from None
        try:
            if _only_if is not None and not _only_if():
                c.execute("ROLLBACK")
                return None
            cur = c.execute(
                "INSERT INTO snapshots (source, taken_at, status, raw_rows, skipped_json, note, fingerprint) "
                "VALUES (?, ?, 'pending', ?, ?, ?, ?)",
                (source, _now_iso(), raw_rows, json.dumps(skipped, sort_keys=True), scrub(note), fingerprint))
            sid = cur.lastrowid
            n = 0
            placeholders = ", ".join("?" * (len(OFFER_COLUMNS) + 1))
            batch: list[tuple] = []
            for o in offers:
                if not isinstance(o, Offer):
                    raise TypeError(f"write_snapshot expects Offer objects, got {type(o).__name__}")
                batch.append(_offer_tuple(o, sid))
                n += 1
                if len(batch) >= 500:
                    c.executemany(f"INSERT INTO offers VALUES ({placeholders})", batch)
                    batch.clear()
            if batch:
                c.executemany(f"INSERT INTO offers VALUES ({placeholders})", batch)
            n_skipped = sum(skipped.values())
            c.execute("UPDATE snapshots SET status = 'complete', rows_added = ?, rows_skipped = ?, taken_at = ? "
                      "WHERE id = ?", (n, n_skipped, _now_iso(), sid))
            c.execute("DELETE FROM current_cache")
            c.execute("COMMIT")
        except BaseException as e:
            err = self._rollback(e)
            if err is e:
                raise
            raise err from None
        return self.snapshot(sid)

    def record_failure(self, source: str, reason: str) -> int:
        """A failed refresh leaves a 'failed' marker (for `status`) and no offers."""
        self._require_writable("recording a refresh")
        try:
            cur = self.conn.execute(
                "INSERT INTO snapshots (source, taken_at, status, note) VALUES (?, ?, 'failed', ?)",
                (source, _now_iso(), scrub(reason)[:500]))
        except sqlite3.DatabaseError as e:
            raise self._db_error(e) from None
        return cur.lastrowid

    # ---- reading -------------------------------------------------------------------------
    def snapshot(self, sid: int) -> SnapshotInfo | None:
        r = self.conn.execute(
            "SELECT id, source, taken_at, status, rows_added, rows_skipped, raw_rows, skipped_json, note "
            "FROM snapshots WHERE id = ?", (sid,)).fetchone()
        return None if r is None else SnapshotInfo(*r[:7], skipped=json.loads(r[7] or "{}"), note=scrub(r[8]))

    def latest_complete(self) -> dict[str, int]:
        """source -> id of its newest complete snapshot."""
        rows = self.conn.execute(
            "SELECT source, MAX(id) FROM snapshots WHERE status = 'complete' GROUP BY source").fetchall()
        return dict(rows)

    def snapshot_offers(self, sid: int, *, with_deployability: bool = False, gpus: Iterable[str] | None = None,
                        providers: Iterable[str] | None = None) -> list[Offer]:
        """One snapshot's offers as stored, in order; only those on `gpus` / at `providers` when given.
        `with_deployability`: as `deployability.with_deployability` completes them (what the catalog
        shows), filled in while reading instead of copied after."""
        cols = ", ".join(self._columns)
        where, args = "snapshot_id = ?", [sid]
        for column, values in (("gpu", gpus), ("provider", providers)):
            if values is not None:
                values = sorted(set(values))
                where += f" AND {column} IN ({', '.join('?' * len(values))})"
                args.extend(values)
        dates: dict = {}  # dt.date objects are immutable: one per distinct day
        fill = None
        if with_deployability:
            from gpuplan.catalog.deployability import deployability_update as fill
        with _no_gc():
            return [_row_offer(r, dates, fill) for r in self.conn.execute(
                f"SELECT {cols} FROM offers WHERE {where} ORDER BY rowid", args)]

    def current_offers(self, *, with_deployability: bool = False, gpus: Iterable[str] | None = None,
                       providers: Iterable[str] | None = None) -> list[Offer]:
        """The newest complete snapshot of every source, merged (see `merge_current`).

        Merging reads no deployability field, so filling them first changes nothing else; and it
        compares offers only within one (provider, GPU), so reading only some GPUs or providers gives
        exactly those of the full merge, in the same order."""
        latest = self.latest_complete()
        with _no_gc():
            groups = {src: self.snapshot_offers(sid, with_deployability=with_deployability, gpus=gpus,
                                                providers=providers)
                      for src, sid in latest.items()}
            return merge_current(groups)

    def current_offer_tuples(self, *, make: Callable[[tuple], tuple], gpus: Iterable[str] | None = None,
                             providers: Iterable[str] | None = None, by_price: bool = False) -> list[tuple]:
        """`current_offers(with_deployability=True, gpus=, providers=)` as rows built by `make` from a tuple
        of values in OFFER_COLUMNS order (as_of a date, cluster a bool or None): a tuple subclass that
        reads like an Offer (`merge_current` reads its attributes). The same offers in the same order,
        without an Offer object per row (a planner over 10^6 offers builds objects only for the rows
        it shows). `by_price`: in the catalog's default listing order instead (cheapest per GPU-hour,
        then per node-hour; ties in the merged order), as a stable sort of the merged list gives.

        A writable store keeps the merged rows between reads (`row_cache`): the first read after a
        snapshot is added or removed merges every source and saves the result; later reads decode it.
        Merging commutes with the GPU and provider filters (both are part of the merge key)."""
        if self.readonly:
            return self._merged_tuples(make=make, gpus=gpus, providers=providers, by_price=by_price)
        from gpuplan.catalog import row_cache

        key = self._current_cache_key()
        try:
            blob = self.conn.execute("SELECT blob FROM current_cache WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:  # a damaged store without the table: merge, as a read-only store does
            return self._merged_tuples(make=make, gpus=gpus, providers=providers, by_price=by_price)
        if blob is not None:
            with _no_gc():
                rows = row_cache.decode(blob[0], self._columns, make=make, gpus=gpus, providers=providers,
                                        by_price=by_price)
            if rows is not None:
                return rows
        with _no_gc():
            met = self._merged_tuples(make=tuple, unsorted=True)
            blob, merged, listing = row_cache.encode(met, self._columns, MERGED_ORDER_COLUMNS)
            self._save_current_cache(key, blob)
            del blob
            wanted = [(OFFER_COLUMNS.index(c), set(v)) for c, v in (("gpu", gpus), ("provider", providers))
                      if v is not None]
            order = merged[listing] if by_price else merged
            return [make(r) for r in map(met.__getitem__, order.tolist()) if all(r[i] in v for i, v in wanted)]

    def _current_cache_key(self) -> str:
        """What the merged rows depend on: each source's newest complete snapshot (id, time, size)
        and the rules that merge and fill them."""
        from gpuplan.catalog import row_cache

        snaps = self.conn.execute("""
            SELECT s.source, s.id, s.taken_at, s.rows_added FROM snapshots s
            WHERE s.id = (SELECT MAX(id) FROM snapshots t WHERE t.source = s.source AND t.status = 'complete')
            ORDER BY s.source""").fetchall()
        return json.dumps([row_cache.rules_fingerprint(), snaps])

    def _save_current_cache(self, key: str, blob: bytes) -> None:
        """Best effort: a busy or full store keeps no cache (the next read merges again)."""
        c = self.conn
        try:
            c.execute("BEGIN IMMEDIATE")
            try:
                if self._current_cache_key() == key:  # no snapshot landed since the merge began
                    c.execute("DELETE FROM current_cache")
                    c.execute("INSERT INTO current_cache VALUES (?, ?, ?)", (key, _now_iso(), blob))
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise
        except sqlite3.Error:
            pass

    def _merged_tuples(self, *, make: Callable[[tuple], tuple], gpus: Iterable[str] | None = None,
                       providers: Iterable[str] | None = None, by_price: bool = False,
                       unsorted: bool = False) -> list[tuple]:
        """`current_offer_tuples` read and merged from the snapshots themselves (`unsorted`: see
        `merge_current_rows`)."""
        from gpuplan.catalog.deployability import deployability_update as fill

        col = {c: i for i, c in enumerate(OFFER_COLUMNS)}
        i_prov, i_inst, i_gpn, i_conf = col["provider"], col["instance_type"], col["gpus_per_node"], col["confidence"]
        i_asof, i_clu, i_fab, i_max, i_ic = (col["as_of"], col["cluster"], col["fabric_gbps_per_node"],
                                             col["max_nodes"], col["interconnect"])
        cols = ", ".join(self._columns)
        dates: dict = {}  # dt.date objects are immutable: one per distinct day
        i_tail = min(i_asof, i_clu, i_fab, i_max, i_ic)
        tails: dict[tuple, tuple] = {}

        def tail_of(r: tuple) -> tuple:
            """r[i_tail:] as the row shows it: as_of a date, cluster a bool, deployability filled in."""
            t = list(r[i_tail:])
            day = dates.get(r[i_asof])
            if day is None:
                day = dates[r[i_asof]] = dt.date.fromisoformat(r[i_asof])
            t[i_asof - i_tail] = day
            if r[i_clu] is not None:
                t[i_clu - i_tail] = bool(r[i_clu])
            update = fill(r[i_prov], r[i_inst], r[i_gpn], r[i_conf] == "user", t[i_clu - i_tail], r[i_fab],
                          r[i_max], r[i_ic])
            if update:  # as _row_offer: what with_deployability would change
                for f, v in update.items():
                    t[col[f] - i_tail] = v
            t = tuple(t)
            if len(tails) >= 100_000:  # rows that share no tail: keep memory bounded
                tails.clear()
            tails[(r[i_prov], r[i_inst], r[i_gpn], r[i_tail:])] = t
            return t

        groups: dict[str, list] = {}
        with _no_gc():
            for source, sid in self.latest_complete().items():
                where, args = "snapshot_id = ?", [sid]
                for column, values in (("gpu", gpus), ("provider", providers)):
                    if values is not None:
                        values = sorted(set(values))
                        where += f" AND {column} IN ({', '.join('?' * len(values))})"
                        args.extend(values)
                # Every column a row changes (as_of, cluster, the deployability fields) lies in r[i_tail:],
                # and what it becomes depends only on those and (provider, instance, GPUs per node): a
                # large catalog repeats a few hundred such tails, so each is converted once and shared.
                groups[source] = [make(r[:i_tail] + (tails.get((r[i_prov], r[i_inst], r[i_gpn], r[i_tail:]))
                                                     or tail_of(r)))
                                  for r in self.conn.execute(f"SELECT {cols} FROM offers WHERE {where} ORDER BY rowid",
                                                             args)]
            rows = merge_current_rows(groups, by_price=by_price, unsorted=unsorted)
            del groups
        return rows

    def current_providers(self) -> set[str]:
        """The providers of `current_offers()` (merging drops offers, never a provider's last one)."""
        ids = list(self.latest_complete().values())
        if not ids:
            return set()
        return {r[0] for r in self.conn.execute(
            f"SELECT DISTINCT provider FROM offers WHERE snapshot_id IN ({', '.join('?' * len(ids))})", ids)}

    def price_conflicts(self) -> list[dict[str, Any]]:
        """Current offers that share a key but disagree on price, with the one that wins (see
        `merge_current` and `price_conflicts`)."""
        latest = self.latest_complete()
        with _no_gc():
            return price_conflicts({src: self.snapshot_offers(sid) for src, sid in latest.items()})

    def sources(self) -> list[dict[str, Any]]:
        """One row per source: its newest complete snapshot, its last attempt, age and staleness."""
        out = []
        now = dt.datetime.now(dt.timezone.utc)
        today = now.date()
        q = self.conn.execute("""
            SELECT s.source, MAX(s.id), MAX(CASE WHEN s.status = 'complete' THEN s.id END)
            FROM snapshots s GROUP BY s.source ORDER BY s.source""").fetchall()
        for source, last_id, ok_id in q:
            last = self.snapshot(last_id)
            ok = self.snapshot(ok_id) if ok_id else None
            row: dict[str, Any] = {"source": source, "last_refresh": None, "age_h": None, "offers": 0,
                                   "skipped": 0, "newest_as_of": None, "stale": True,
                                   "last_attempt": last.taken_at, "last_status": last.status,
                                   "last_error": last.note if last.status == "failed" else ""}
            if ok is not None:
                taken = dt.datetime.fromisoformat(ok.taken_at)
                newest = self.conn.execute("SELECT MAX(as_of) FROM offers WHERE snapshot_id = ?", (ok.id,)).fetchone()[0]
                age_h = (now - taken).total_seconds() / 3600
                if source == BUNDLED or source.startswith(USER_PREFIX):
                    stale = newest is None or (today - dt.date.fromisoformat(newest)).days > STALE_AFTER_DAYS
                else:
                    stale = age_h > STALE_SNAPSHOT_DAYS * 24
                row.update(last_refresh=ok.taken_at, age_h=round(age_h, 2), offers=ok.rows_added,
                           skipped=ok.rows_skipped, newest_as_of=newest, stale=stale, snapshot_id=ok.id)
            out.append(row)
        return out

    def history(self, gpu: str, provider: str | None = None, pricing: str | None = None) -> list[dict[str, Any]]:
        """Min and median price per GPU-hour by (date, provider, pricing) over every complete
        snapshot; repeated refreshes of one source on one day count once (the newest)."""
        sql = """
            WITH picked AS (
                SELECT MAX(id) AS id FROM snapshots WHERE status = 'complete'
                GROUP BY source, substr(taken_at, 1, 10))
            SELECT DISTINCT o.as_of, o.provider, o.pricing, o.instance_type, o.region, o.price_per_gpu_hour_usd
            FROM offers o JOIN picked p ON o.snapshot_id = p.id
            WHERE o.gpu = ?"""
        args: list[Any] = [gpu]
        if provider:
            sql += " AND o.provider = ?"
            args.append(provider)
        if pricing:
            sql += " AND o.pricing = ?"
            args.append(pricing)
        groups: dict[tuple, list[float]] = {}
        for as_of, prov, pr, _it, _reg, price in self.conn.execute(sql, args):
            groups.setdefault((as_of, prov, pr), []).append(price)
        return [{"date": d, "provider": p, "pricing": pr, "min_usd_per_gpu_h": min(v),
                 "median_usd_per_gpu_h": statistics.median(v), "offers": len(v)}
                for (d, p, pr), v in sorted(groups.items())]

    def known_values(self, column: str) -> list[str]:
        assert column in ("provider", "gpu", "pricing")
        return [r[0] for r in self.conn.execute(f"SELECT DISTINCT {column} FROM offers ORDER BY 1")]

    def counts(self) -> dict[str, int]:
        snaps = dict(self.conn.execute("SELECT status, COUNT(*) FROM snapshots GROUP BY status").fetchall())
        return {"offers": self.conn.execute("SELECT COUNT(*) FROM offers").fetchone()[0],
                "complete": snaps.get("complete", 0), "failed": snaps.get("failed", 0),
                "pending": snaps.get("pending", 0)}

    def integrity_ok(self) -> bool:
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def size_bytes(self) -> int:
        """The store file plus its WAL, as on disk now."""
        total = 0
        for p in (self.path, self.path.with_name(self.path.name + "-wal")):
            try:
                total += p.stat().st_size
            except OSError:
                pass
        return total

    # ---- removing and pruning ------------------------------------------------------------
    def resolve_source(self, name: str) -> str:
        """The stored source a user's NAME means: an import name ('mine' = 'user:mine') or a full
        source name ('user:mine', 'vast'); UnknownNameError (listing what there is) otherwise."""
        from gpuplan.errors import UnknownNameError

        key = (name or "").strip()
        known = [r[0] for r in self.conn.execute("SELECT DISTINCT source FROM snapshots ORDER BY 1")]
        for cand in (key, f"{USER_PREFIX}{key}", key.lower(), f"{USER_PREFIX}{key.lower()}"):
            if cand in known:
                return cand
        raise UnknownNameError("source", key, known)

    def remove_source(self, source: str) -> dict[str, int]:
        """Delete every snapshot (complete or failed) of `source` and its offers, in one transaction.
        The packaged catalog ('bundled') cannot be removed: it would be re-added on the next open."""
        self._require_writable("remove")
        if source == BUNDLED:
            raise UsageError("the packaged catalog ('bundled') cannot be removed; remove an import "
                             "(gpuplan catalog status lists the sources)")
        ids = [r[0] for r in self.conn.execute("SELECT id FROM snapshots WHERE source = ?", (source,))]
        return self._delete_snapshots(ids)

    def prune(self, keep: int = 3, *, vacuum: bool = True) -> dict[str, int]:
        """Keep the newest `keep` complete snapshots of each source (what `history` draws from) and
        drop older ones, with failed markers older than anything kept; then VACUUM so the file
        shrinks. A source's newest complete snapshot is never dropped (keep >= 1)."""
        self._require_writable("prune")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise UsageError(f"--keep must be a whole number of at least 1 (the newest snapshot of each source "
                             f"is always kept), got {keep!r}")
        drop: list[int] = []
        for (source,) in self.conn.execute("SELECT DISTINCT source FROM snapshots").fetchall():
            complete = [r[0] for r in self.conn.execute(
                "SELECT id FROM snapshots WHERE source = ? AND status = 'complete' ORDER BY id DESC", (source,))]
            kept = complete[:keep]
            drop += complete[keep:]
            if kept:
                drop += [r[0] for r in self.conn.execute(
                    "SELECT id FROM snapshots WHERE source = ? AND status != 'complete' AND id < ?",
                    (source, min(kept)))]
            else:  # only failed attempts: keep the newest one for `status`
                drop += [r[0] for r in self.conn.execute(
                    "SELECT id FROM snapshots WHERE source = ? AND status != 'complete' ORDER BY id DESC LIMIT -1 "
                    "OFFSET 1", (source,))]
        before = self.size_bytes()
        out = self._delete_snapshots(drop)
        if vacuum:
            try:
                self.conn.execute("VACUUM")
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.DatabaseError as e:
                raise self._db_error(e) from None
        out.update(bytes_before=before, bytes_after=self.size_bytes())
        return out

    def _rollback(self, e: BaseException) -> BaseException:
        """Roll back the open transaction; returns what to raise (a database error as one line)."""
        try:
            self.conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        return self._db_error(e) if isinstance(e, sqlite3.DatabaseError) else e

    def _delete_snapshots(self, ids: list[int]) -> dict[str, int]:
        c = self.conn
        try:
            c.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise self._db_error(e) from None
        offers = 0
        try:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                marks = ", ".join("?" * len(chunk))
                offers += c.execute(f"DELETE FROM offers WHERE snapshot_id IN ({marks})", chunk).rowcount
                c.execute(f"DELETE FROM snapshots WHERE id IN ({marks})", chunk)
            c.execute("DELETE FROM current_cache")
            c.execute("COMMIT")
        except BaseException as e:
            err = self._rollback(e)
            if err is e:
                raise
            raise err from None
        return {"snapshots": len(ids), "offers": offers}

    # ---- refreshing ----------------------------------------------------------------------
    def refresh(self, names: list[str], *, client=None, force: bool = False,
                on_progress: Callable[[str, RefreshOutcome | None], None] | None = None,
                deadline_s: float | None = None, workers: int = 8) -> list[RefreshOutcome]:
        """Fetch the sources concurrently under one overall deadline and write one snapshot per
        success. A failure (network, shape, empty answer, a sharp shrink, no answer before the
        deadline) records why and keeps the previous snapshot.

        Fetching runs in daemon worker threads (one source never waits behind another, and a
        source still hanging at the deadline neither delays the others nor the process's exit);
        every store write happens here, on the calling thread. `deadline_s` defaults to
        $GPUPLAN_REFRESH_TIMEOUT_S, else REFRESH_DEADLINE_S."""
        import queue
        import threading
        import time

        from gpuplan.catalog.secrets import get_secret
        from gpuplan.catalog.sources import SourceError, get_source
        from gpuplan.catalog.sources.http import make_client

        self._require_writable("refresh")
        deadline_s = refresh_deadline_s(deadline_s)
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise UsageError(f"workers must be a whole number of at least 1, got {workers!r}")
        t_start = time.perf_counter()
        outcomes: dict[str, RefreshOutcome] = {}
        todo: list = []
        for name in names:
            src = get_source(name)
            if src.needs_key and not get_secret(src.needs_key):
                outcomes[name] = RefreshOutcome(name, "skipped", reason=f"no API key (set {src.needs_key})")
            elif name not in (s.name for s in todo):
                todo.append(src)
        own_client = client is None
        client = client or make_client()
        jobs: queue.SimpleQueue = queue.SimpleQueue()
        done: queue.SimpleQueue = queue.SimpleQueue()
        started: set[str] = set()
        for src in todo:
            jobs.put(src)

        def work() -> None:
            while True:
                try:
                    src = jobs.get_nowait()
                except queue.Empty:
                    return
                started.add(src.name)
                t0 = time.perf_counter()
                try:
                    result, exc = src.fetch(client), None
                except BaseException as e:  # noqa: BLE001 - reported for this source, never raised in a worker
                    result, exc = None, e
                done.put((src, result, exc, time.perf_counter() - t0))

        try:
            for name in names:
                if on_progress and name in outcomes:
                    on_progress(name, None)
                    on_progress(name, outcomes[name])
            for src in todo:
                if on_progress:
                    on_progress(src.name, None)
            for _ in range(min(workers, len(todo))):
                threading.Thread(target=work, name="gpuplan-refresh", daemon=True).start()
            pending = {src.name for src in todo}
            stop_at = t_start + deadline_s
            while pending:
                left = stop_at - time.perf_counter()
                if left <= 0:
                    break
                try:
                    src, result, exc, elapsed = done.get(timeout=left)
                except queue.Empty:
                    break
                pending.discard(src.name)
                out = self._settle(src, result, exc, force, SourceError, scrub)
                out.elapsed_s = elapsed
                outcomes[src.name] = out
                if on_progress:
                    on_progress(src.name, out)
            for src in todo:
                if src.name in pending:
                    what = "no answer within" if src.name in started else "not started before"
                    out = self._failed(src.name, f"{what} the {deadline_s:g} s refresh deadline; "
                                                 f"kept the previous data (raise it with --timeout)", scrub)
                    out.elapsed_s = time.perf_counter() - t_start
                    outcomes[src.name] = out
                    if on_progress:
                        on_progress(src.name, out)
        finally:
            while True:  # sources not started yet never start once the deadline has passed
                try:
                    jobs.get_nowait()
                except queue.Empty:
                    break
            if own_client:
                client.close()  # also ends the connections of sources still hanging past the deadline
        return [outcomes[n] for n in dict.fromkeys(names) if n in outcomes]

    def _settle(self, src, result, exc, force, SourceError, redact) -> RefreshOutcome:
        """One fetched source's outcome: its snapshot written, or why it failed."""
        if exc is None:
            return self._refresh_one(src, None, force, SourceError, redact, result=result)
        if isinstance(exc, (SourceError, GpuplanError)):
            return self._failed(src.name, str(exc), redact)
        if isinstance(exc, Exception):
            return self._failed(src.name, f"unexpected {type(exc).__name__} while reading the answer", redact)
        raise exc  # KeyboardInterrupt / SystemExit raised in a worker

    def _refresh_one(self, src, client, force, SourceError, redact, result=None) -> RefreshOutcome:
        name = src.name
        try:
            if result is None:
                result = src.fetch(client)
        except SourceError as e:
            return self._failed(name, str(e), redact)
        except GpuplanError as e:
            return self._failed(name, str(e), redact)
        except Exception as e:  # noqa: BLE001 - a parser bug in one source must not stop the others
            return self._failed(name, f"unexpected {type(e).__name__} while reading the answer", redact)
        skipped = dict(result.skipped)
        if not result.offers:
            why = "no valid offers in the answer" + (f" ({result.raw_rows} rows, all skipped)" if result.raw_rows else "")
            out = self._failed(name, why, redact)
            out.raw_rows, out.rows_skipped, out.skipped = result.raw_rows, result.rows_skipped, skipped
            return out
        prev = self.latest_complete().get(name)
        prev_n = self.snapshot(prev).rows_added if prev else 0
        if (not force and prev_n >= SHRINK_GUARD_MIN_PREVIOUS
                and len(result.offers) < SHRINK_GUARD * prev_n):
            out = self._failed(name, f"answer shrank from {prev_n} to {len(result.offers)} offers; "
                                     f"kept the previous data (use --force to accept)", redact)
            out.raw_rows = result.raw_rows
            return out
        snap = self.write_snapshot(name, result.offers, raw_rows=result.raw_rows, skipped=skipped, note=result.note)
        return RefreshOutcome(name, "ok", rows_added=snap.rows_added, rows_skipped=snap.rows_skipped,
                              raw_rows=result.raw_rows, skipped=skipped, snapshot_id=snap.id, reason=redact(result.note))

    def _failed(self, name: str, reason: str, redact) -> RefreshOutcome:
        reason = redact(reason)
        self.record_failure(name, reason)
        return RefreshOutcome(name, "failed", reason=reason)


def _source_rank(source: str, offer: Offer) -> int:
    """User imports beat live API data, which beats aggregated and bundled data."""
    if source.startswith(USER_PREFIX):
        return 3
    if offer.confidence == "live":
        return 2
    return 1


# Offers with the same key are the same thing to rent: among them only one price is current.
TRUTH_KEY_FIELDS: tuple[str, ...] = ("provider", "instance_type", "gpu", "gpus_per_node", "region", "pricing",
                                     "commitment_term_h")
CONFLICT_TOLERANCE = 0.005  # relative: node prices closer than 0.5% are the same price (rounding)


def _truth_key(o: Offer) -> tuple:
    return (o.provider, o.instance_type, o.gpu, o.gpus_per_node, o.region, o.pricing, o.commitment_term_h)


def _truth_score(source: str, o: Offer) -> tuple:
    """Which of two offers with one key is current: a user's import (a deliberate override), else the newest
    dated price; on the same date the surer confidence, then the higher (pessimistic) price, then the source."""
    return (source.startswith(USER_PREFIX), o.as_of, CONFIDENCE_RANK[o.confidence], o.price_per_hour_usd, source)


def merge_current(groups: Mapping[str, list[Offer]]) -> list[Offer]:
    """Merge each source's newest offers into one list: dated truth at read time.

    - Offers sharing a key (provider, instance, GPU, GPUs per node, region, pricing, term) are one
      thing to rent: the newest dated price wins (a user import always does; same date: surer
      confidence, then the higher price) and the others are superseded, never kept beside it.
      `price_conflicts` reports the keys whose prices disagreed.
    - A live API answer for a (provider, GPU, pricing) supersedes older aggregated/bundled rows for
      the same triple: a 2025 list price must not outrank today's.
    """
    best: dict[tuple, tuple[tuple, Offer]] = {}
    live_triples: set[tuple] = set()
    rank_of = CONFIDENCE_RANK
    for source in sorted(groups):
        user = source.startswith(USER_PREFIX)
        for o in groups[source]:
            if not user and o.confidence == "live":
                live_triples.add((o.provider, o.gpu, o.pricing))
            key = (o.provider, o.instance_type, o.gpu, o.gpus_per_node, o.region, o.pricing, o.commitment_term_h)
            score = (user, o.as_of, rank_of[o.confidence], o.price_per_hour_usd, source)  # _truth_score, inlined
            cur = best.get(key)
            if cur is None or score > cur[0]:
                best[key] = (score, o)
    out = [o for (user, *_rest), o in best.values()
           if user or o.confidence == "live" or (o.provider, o.gpu, o.pricing) not in live_triples]
    out.sort(key=lambda o: (o.provider, o.gpu, o.pricing, o.price_per_gpu_hour_usd, o.instance_type, o.region))
    return out


def merge_current_rows(groups: Mapping[str, list[tuple]], *, by_price: bool = False,
                       unsorted: bool = False) -> list[tuple]:
    """`merge_current` over rows in OFFER_COLUMNS order (tuples, as_of a date): the same rows in the same
    order, read by position (a 10^6-offer store merges in seconds, not tens of seconds). `by_price`: then
    sorted as the catalog lists offers (per GPU-hour, then per node-hour; ties in merged order), in one
    sort. Kept equal to `merge_current` by tests/test_planner_scale.py. `unsorted`: in the order the
    merge meets them (sorting by the merged key, stable, gives the merged order)."""
    col = {c: i for i, c in enumerate(OFFER_COLUMNS)}
    key_of = operator.itemgetter(col["provider"], col["instance_type"], col["gpu"], col["gpus_per_node"],
                                 col["region"], col["pricing"], col["commitment_term_h"])
    triple_of = operator.itemgetter(col["provider"], col["gpu"], col["pricing"])
    i_conf, i_asof, i_pph = col["confidence"], col["as_of"], col["price_per_hour_usd"]
    out = _merge_unique_keys(groups, key_of, triple_of, i_conf, i_asof, i_pph)
    if out is None:
        out = _merge_rows_slow(groups, key_of, triple_of, i_conf, i_asof, i_pph)
    if unsorted:
        return out
    if by_price:
        return _sort_merged(out, *_merge_order())
    out.sort(key=_merge_order()[1])
    return out


MERGED_ORDER_COLUMNS: tuple[str, ...] = ("provider", "gpu", "pricing", "price_per_gpu_hour_usd", "instance_type",
                                         "region")  # the merged order: sorted by these, stable


def _merge_order() -> tuple[dict, Callable]:
    """(column positions, the merged order's key) for `_sort_merged`."""
    col = {c: i for i, c in enumerate(OFFER_COLUMNS)}
    return col, operator.itemgetter(*(col[c] for c in MERGED_ORDER_COLUMNS))


def _merge_unique_keys(groups, key_of, triple_of, i_conf, i_asof, i_pph) -> list[tuple] | None:
    """`_merge_rows_slow` at C speed for the common case: no key repeats within one source (a
    source's snapshot lists each offer once), so only keys shared across sources are scored. The
    same rows in the same order (a key's place is its first appearance, as in the slow path); None
    when some source repeats a key."""
    live_conf = operator.itemgetter(i_conf)
    merged: dict[tuple, tuple] = {}
    origin: dict[tuple, str] = {}  # the source of merged[key], for keys seen in more than one source
    firsts: list[tuple[str, dict]] = []
    live_triples: set[tuple] = set()
    user_rows: set[int] = set()
    rank_of = CONFIDENCE_RANK

    def score(r, source):  # _truth_score
        return (source.startswith(USER_PREFIX), r[i_asof], rank_of[r[i_conf]], r[i_pph], source)

    for source in sorted(groups):
        rows = groups[source]
        d = dict(zip(map(key_of, rows), rows))
        if len(d) != len(rows):
            return None
        user = source.startswith(USER_PREFIX)
        if user:
            user_rows.update(map(id, rows))
        else:
            live_triples.update(map(triple_of, itertools.compress(rows, map("live".__eq__, map(live_conf, rows)))))
        shared = d.keys() & merged.keys() if merged else ()
        keep = []
        for k in shared:
            cur = merged[k]
            src = origin.get(k)
            if src is None:
                src = next(s for s, dd in firsts if dd.get(k) is cur)
            if score(d[k], source) > score(cur, src):
                origin[k] = source
            else:
                origin[k] = src
                keep.append((k, cur))
        merged.update(d)
        for k, cur in keep:  # the earlier row stays, in its first place
            merged[k] = cur
        firsts.append((source, d))
    out = list(merged.values())
    if live_triples:
        out = [r for r in out if r[i_conf] == "live" or id(r) in user_rows or triple_of(r) not in live_triples]
    return out


def _merge_rows_slow(groups, key_of, triple_of, i_conf, i_asof, i_pph) -> list[tuple]:
    best: dict[tuple, tuple] = {}
    live_triples: set[tuple] = set()
    rank_of = CONFIDENCE_RANK
    for source in sorted(groups):
        user = source.startswith(USER_PREFIX)
        for r in groups[source]:
            conf = r[i_conf]
            if not user and conf == "live":
                live_triples.add(triple_of(r))
            key = key_of(r)
            score = (user, r[i_asof], rank_of[conf], r[i_pph], source)  # _truth_score
            cur = best.get(key)
            if cur is None or score > cur[0]:
                best[key] = (score, r)
    return [r for (user, *_rest), r in best.values()
            if user or r[i_conf] == "live" or triple_of(r) not in live_triples]


def _sort_merged(out: list[tuple], col: dict, merged_key) -> list[tuple]:
    """Rows in merged order, in the catalog's listing order instead."""
    # Sorted by (per GPU-hour, per node-hour, then merged_key): numpy orders the prices (stable), and
    # only runs of equal prices are sorted by the rest in Python, as one stable sort by the whole key.
    import numpy as np

    n = len(out)
    ppg = np.fromiter(map(operator.itemgetter(col["price_per_gpu_hour_usd"]), out), dtype=float, count=n)
    pph = np.fromiter(map(operator.itemgetter(col["price_per_hour_usd"]), out), dtype=float, count=n)
    order = np.lexsort((pph, ppg))
    rows = list(map(out.__getitem__, order.tolist()))
    if n > 1:
        p1, p2 = ppg[order], pph[order]
        same = (p1[1:] == p1[:-1]) & (p2[1:] == p2[:-1])
        if same.any():
            starts = np.flatnonzero(np.diff(np.concatenate(([0], same.astype(np.int8), [0]))) == 1)
            ends = np.flatnonzero(np.diff(np.concatenate(([0], same.astype(np.int8), [0]))) == -1)
            for a, b in zip(starts.tolist(), ends.tolist()):  # rows a..b (inclusive) share both prices
                rows[a:b + 1] = sorted(rows[a:b + 1], key=merged_key)
    return rows


def price_conflicts(groups: Mapping[str, list[Offer]], tolerance: float = CONFLICT_TOLERANCE) -> list[dict[str, Any]]:
    """Keys of `merge_current` whose offers disagree on price (beyond `tolerance`, relative): the
    current offer and every superseded one, each with its price, date, source and confidence."""
    by_key: dict[tuple, list[tuple[tuple, str, Offer]]] = {}
    for source in sorted(groups):
        for o in groups[source]:
            by_key.setdefault(_truth_key(o), []).append((_truth_score(source, o), source, o))
    out = []
    for key, entries in by_key.items():
        if len(entries) < 2:
            continue
        prices = [o.price_per_hour_usd for _s, _src, o in entries]
        if max(prices) - min(prices) <= tolerance * max(prices):
            continue
        entries.sort(key=lambda e: e[0], reverse=True)

        def row(src: str, o: Offer) -> dict[str, Any]:
            return {"price_per_hour_usd": o.price_per_hour_usd, "price_per_gpu_hour_usd": o.price_per_gpu_hour_usd,
                    "as_of": o.as_of.isoformat(), "as_of_note": scrub(o.as_of_note), "source": scrub(o.source),
                    "store_source": src, "confidence": o.confidence}
        out.append({**dict(zip(TRUTH_KEY_FIELDS, key)), "current": row(entries[0][1], entries[0][2]),
                    "superseded": [row(src, o) for _s, src, o in entries[1:]]})
    out.sort(key=lambda c: (c["provider"], c["gpu"], c["instance_type"], c["region"], c["pricing"]))
    return out


def open_store(db: str | os.PathLike | None = None, **kw) -> Store:
    return Store(resolve_db_path(db), **kw)


def read_current_offers(path: str | os.PathLike, *, with_deployability: bool = False,
                        gpus: Iterable[str] | None = None, providers: Iterable[str] | None = None
                        ) -> list[Offer] | None:
    """Offers from the newest complete snapshot of each source, merged; None when there is
    no store file (the caller then uses the bundled catalog). `with_deployability`, `gpus`,
    `providers`: see `Store.current_offers`."""
    p = pathlib.Path(path)
    if not p.exists() and not os.path.lexists(p):
        return None
    with Store(p) as s:  # a broken symlink or loop is refused in one line, not taken for "no store"
        return s.current_offers(with_deployability=with_deployability, gpus=gpus, providers=providers)


def read_current_offer_tuples(path: str | os.PathLike, *, make: Callable[[list], tuple],
                              gpus: Iterable[str] | None = None, providers: Iterable[str] | None = None,
                              by_price: bool = False) -> list[tuple] | None:
    """`read_current_offers(path, with_deployability=True, ...)` as tuples (see
    `Store.current_offer_tuples`); None when there is no store file."""
    p = pathlib.Path(path)
    if not p.exists() and not os.path.lexists(p):
        return None
    with Store(p) as s:
        return s.current_offer_tuples(gpus=gpus, providers=providers, by_price=by_price, make=make)


def read_current_providers(path: str | os.PathLike) -> set[str] | None:
    """The providers of `read_current_offers(path)`, without reading the offers; None when there is
    no store file."""
    p = pathlib.Path(path)
    if not p.exists() and not os.path.lexists(p):
        return None
    with Store(p) as s:
        return s.current_providers()
