"""The hostile-input suite: what a careless or malicious user can hand gpuplan, and what must not happen.

Every case asserts the same contract:
- a refused input exits non-zero with exactly one `error: ...` line on stderr, and no "Traceback";
- the web API answers a 4xx (never a 5xx) with a one-line detail;
- nothing is lost: a failed import or write leaves the store and the old file exactly as they were;
- no secret (an API key, a password in a source URL) is printed or stored in the SQLite file.

Areas: CLI options and names, catalog imports (CSV/YAML), config.json files, plan files, output targets
(symlinks, FIFOs, devices, missing or unwritable folders, a full disk), catalog stores (read-only,
not-a-store, FIFO, symlink loop, newer schema), secrets, and the web API. Everything runs in-process
(`gpuplan.cli.main.main`) so the module takes seconds; FIFOs stand in for /dev/full-like targets and
live only under tmp_path.
"""
from __future__ import annotations

import copy
import json
import os
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from gpuplan.errors import UsageError

MODEL = "llama-3.1-8b"
IMPORT_HEADER = "provider,instance_type,gpu,gpus_per_node,pricing,price_per_hour_usd,region\n"
GOOD_ROW = "mycluster,8xH100,H100,8,reserved,16,us\n"
SECRET_KEY = "sekrit-123"
SECRET_LAMBDA = "sekrit-lambda-456"
SECRET_PASSWORD = "TIGERPASS"


# ---- helpers --------------------------------------------------------------------------------------

@pytest.fixture(scope="module", autouse=True)
def _one_click_command():
    """Typer rebuilds its click command tree on every call (~0.1 s); the tree is stateless, so build
    it once for this module. main()'s own error handling still runs for every case."""
    import typer.main

    real = typer.main.get_command
    cache: dict[int, object] = {}

    def cached(app):
        if id(app) not in cache:
            cache[id(app)] = real(app)
        return cache[id(app)]

    typer.main.get_command = cached
    yield
    typer.main.get_command = real


def assert_refused(code, out: str, err: str, needle: str | None = None) -> str:
    """Non-zero exit, exactly one `error:` line and it is the last line, no traceback anywhere."""
    assert "Traceback" not in out + err, err
    assert code not in (0, None), f"accepted: {out[-300:]}{err[-300:]}"
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert lines, "no message"
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], err
    if needle is not None:
        assert needle.lower() in errors[0].lower(), errors[0]
    return errors[0]


@pytest.fixture
def no_bundled_store(tmp_path, monkeypatch):
    """Commands read the bundled catalog (GPUPLAN_DB names a file that does not exist)."""
    monkeypatch.setenv("GPUPLAN_DB", str(tmp_path / "absent.db"))


@pytest.fixture(scope="module")
def seeded_store(tmp_path_factory) -> Path:
    """A store with the bundled snapshot and one user import, built once; tests copy it."""
    from gpuplan.catalog.imports import import_offers
    from gpuplan.catalog.store import Store

    d = tmp_path_factory.mktemp("seeded")
    (d / "mine.csv").write_text(IMPORT_HEADER + GOOD_ROW)
    with Store(d / "c.db") as s:
        import_offers(s, d / "mine.csv", "mine")
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return d / "c.db"


@pytest.fixture
def store(seeded_store, tmp_path) -> Path:
    db = tmp_path / "store" / "c.db"
    db.parent.mkdir()
    db.write_bytes(seeded_store.read_bytes())
    return db


def store_contents(db: Path) -> tuple:
    """Everything a user could lose: the snapshots and a digest of every stored offer."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        snaps = c.execute("SELECT id, source, status, rows_added, note FROM snapshots ORDER BY id").fetchall()
        offers = c.execute("SELECT COUNT(*), TOTAL(price_per_hour_usd), group_concat(provider || instance_type, '|') "
                           "FROM (SELECT * FROM offers ORDER BY rowid)").fetchone()
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        c.close()
    return snaps, offers


# ---- 1. CLI options and names -----------------------------------------------------------------------

_NUMS = ["0", "-1", "nan", "inf", "-inf", "1e309", "abc", "", "9" * 400]
_NUMERIC_OPTIONS = [
    ("estimate", "train", "--model", MODEL, "--gpu", "H100", "--tokens", "{v}"),
    ("estimate", "serve", "--model", MODEL, "--gpu", "H100", "--input-len", "{v}"),
    ("estimate", "capacity", "--model", MODEL, "--gpu", "L40S", "--requests-per-s", "{v}"),
    ("plan", "train", "--model", MODEL, "--tokens", "{v}"),
    ("plan", "serve", "--model", MODEL, "--tokens-per-month", "{v}"),
    ("tco", "--final-run-usd", "{v}"),
    ("size", "--compute", "{v}"),
]
_NUMERIC_CASES = [tuple(a.replace("{v}", v) for a in args) for args in _NUMERIC_OPTIONS for v in _NUMS
                  if not (v == "" and args[0] == "size")]
_TYPED_CASES = [
    ("catalog", "refresh", "--source", ""),  # refreshed nothing and exited 0
    ("catalog", "refresh", "--source", ","),
    # without --gpu it was every GPU type failing: "0 req/s average", "no GPU type can serve this", exit 1
    ("estimate", "capacity", "--model", MODEL, "--requests-per-s", "1", "--target-utilization", "2"),
    ("estimate", "capacity", "--model", MODEL, "--requests-per-s", "1", "--target-utilization", "nan"),
    ("estimate", "memory", "--model", MODEL, "--gpu", "H100", "--tp", "abc"),
    ("estimate", "memory", "--model", MODEL, "--gpu", "H100", "--tp", "99999999999999999999"),
    ("estimate", "train", "--model", MODEL, "--tokens", "1e12", "--gpu", "H100", "--gpus", "0"),
    ("estimate", "train", "--model", MODEL, "--tokens", "1e12", "--gpu", "H100", "--gpus", "-8"),
    ("plan", "train", "--model", MODEL, "--tokens", "1e11", "--budget", "-5"),
    ("plan", "train", "--model", MODEL, "--tokens", "1e11", "--budget", "nan"),
    ("plan", "train", "--model", MODEL, "--tokens", "1e11", "--deadline", "soon"),
    ("plan", "train", "--model", MODEL, "--tokens", "1e11", "--deadline", "-3d"),
    ("plan", "train", "--model", MODEL, "--tokens", "1e11", "--seq-len", "0"),
    ("plan", "train", "--model", MODEL, "--tokens", "1e11", "--method", "yolo"),
    ("plan", "train", "--model", MODEL, "--tokens", "1e11", "--precision", "fp2"),
    ("plan", "serve", "--model", MODEL, "--requests-per-s", "1", "--months", "nan"),
    ("plan", "serve", "--model", MODEL, "--requests-per-s", "1", "--months", "0"),
    ("tco", "--final-run-usd", "1000", "--engineers", "-2", "--months", "3"),
    ("offers", "--limit", "abc"),
    ("offers", "--max-price", "cheap"),
    ("testtime", "{tmp}/q.csv", "--budget", "0"),
    ("testtime", "{tmp}/q.csv", "--budget", "nan"),
    ("testtime", "{tmp}/q.csv", "--budget", "10", "--limit", "-1"),
    ("web", "--port", "0"),
    ("web", "--port", "70000"),
    ("web", "--host", ""),
    ("catalog", "prune", "--keep", "0"),
    ("catalog", "prune", "--keep", "-4"),
]
_NAMES = ["bogus", "../../etc/passwd", "h100" * 500, "💥", "H100; rm -rf /"]
_NAME_CASES = [c for n in _NAMES for c in [
    ("estimate", "train", "--model", n, "--tokens", "1e12", "--gpu", "H100"),
    ("estimate", "train", "--model", MODEL, "--tokens", "1e12", "--gpu", n),
    ("plan", "train", "--model", MODEL, "--tokens", "1e11", "--providers", n),
    ("offers", "--gpu", n),
    ("offers", "--provider", n),
    ("tco", "--final-run-usd", "1000", "--gpu", n),
    ("tco", "--final-run-usd", "1000", "--region", n),
    ("models", "show", n),
]]


@pytest.mark.parametrize("args", _NUMERIC_CASES + _TYPED_CASES + _NAME_CASES, ids=lambda a: " ".join(a)[:70])
def test_cli_refuses_bad_options_in_one_line(cli, no_bundled_store, tmp_path, args):
    (tmp_path / "q.csv").write_text("id,p_success\na,0.5\nb,0.2\n")
    code, out, err = cli(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert_refused(code, out, err)


def test_tco_unknown_gpu_is_an_error_not_ignored(cli, no_bundled_store):
    code, out, err = cli("tco", "--final-run-usd", "1000", "--gpu", "bogus")
    assert code == 2 and "unknown GPU 'bogus'" in assert_refused(code, out, err)
    code, out, err = cli("tco", "--final-run-usd", "1000", "--gpu", "h100", "--json")
    assert code == 0, err


def test_web_busy_port_fails_before_printing_its_url(cli, no_bundled_store):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        port = sock.getsockname()[1]
        code, out, err = cli("web", "--port", str(port))
    finally:
        sock.close()
    assert code == 1
    assert "already in use" in assert_refused(code, out, err)
    assert "http://" not in err + out


def test_testtime_caps_a_huge_table(cli, tmp_path):
    rows = "\n".join(f"q{i},{0.01 + (i % 90) / 100:.2f}" for i in range(5000))
    (tmp_path / "q.csv").write_text("id,p_success\n" + rows + "\n")
    t0 = time.perf_counter()
    code, out, err = cli("testtime", str(tmp_path / "q.csv"), "--budget", "20000")
    assert code == 0, err
    assert "q49" in out and "q50 " not in out and "q4999" not in out
    assert "4,950 more not shown" in out
    assert time.perf_counter() - t0 < 20
    code, out, _ = cli("testtime", str(tmp_path / "q.csv"), "--budget", "20000", "--json")
    assert len(json.loads(out)["queries"]) == 5000


# ---- 2. catalog imports ----------------------------------------------------------------------------

_CSV_CASES = {
    "empty.csv": "",
    "header-only.csv": IMPORT_HEADER,
    "missing-column.csv": "provider,gpu\nx,H100\n",
    "unknown-column.csv": IMPORT_HEADER.strip() + ",colour\n" + GOOD_ROW.strip() + ",red\n",
    "duplicate-column.csv": "provider,provider,instance_type,gpu,gpus_per_node,pricing,price_per_hour_usd\n",
    "extra-cells.csv": IMPORT_HEADER + "a,b,H100,8,spot,16,us,extra,more\n",
    "price-nan.csv": IMPORT_HEADER + "x,i,H100,8,spot,nan,us\n",
    "price-inf.csv": IMPORT_HEADER + "x,i,H100,8,spot,inf,us\n",
    "price-neg.csv": IMPORT_HEADER + "x,i,H100,8,spot,-5,us\n",
    "price-zero.csv": IMPORT_HEADER + "x,i,H100,8,spot,0,us\n",
    "price-huge.csv": IMPORT_HEADER + "x,i,H100,8,spot,1e309,us\n",
    "price-dollar.csv": IMPORT_HEADER + "x,i,H100,8,spot,$16,us\n",
    "price-per-month.csv": IMPORT_HEADER + "x,i,H100,1,spot,2000,us\n",
    "gpus-zero.csv": IMPORT_HEADER + "x,i,H100,0,spot,16,us\n",
    "gpus-huge.csv": IMPORT_HEADER + "x,i,H100,1e9,spot,16,us\n",
    "gpu-unknown.csv": IMPORT_HEADER + "x,i,H1000,8,spot,16,us\n",
    "pricing-bad.csv": IMPORT_HEADER + "x,i,H100,8,cheap,16,us\n",
    "control-chars.csv": IMPORT_HEADER + "x\x07,i,H100,8,spot,16,us\n",
    "long-text.csv": IMPORT_HEADER + "x" * 300 + ",i,H100,8,spot,16,us\n",
    "dup-rows.csv": IMPORT_HEADER + GOOD_ROW + GOOD_ROW,
    "future-date.csv": "provider,instance_type,gpu,gpus_per_node,pricing,price_per_hour_usd,as_of\n"
                       "x,i,H100,8,spot,16,2999-01-01\n",
    "bad-quotes.csv": IMPORT_HEADER + 'x,"i,H100,8,spot,16,us\n',
    "one-bad-row-of-many.csv": IMPORT_HEADER + GOOD_ROW.replace("mycluster", "a") * 1 + GOOD_ROW.replace("mycluster", "b")
                               + "c,8xH100,H100,8,reserved,NaN,us\n",
}
_YAML_CASES = {
    "norway-dup.yaml": "- provider: x\n  provider: y\n  instance_type: i\n  gpu: H100\n  gpus_per_node: 8\n"
                       "  pricing: spot\n  price_per_hour_usd: 16\n",
    "dup-top.yaml": "offers: []\noffers: []\n",
    "python-object.yaml": "- !!python/object/apply:os.system ['echo pwned']\n",
    "billion-laughs.yaml": "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                           "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
    "not-a-list.yaml": "provider: x\n",
    "scalar.yaml": "hello\n",
    "bad-syntax.yaml": "- provider: [x\n",
    "deep.yaml": "[" * 5000 + "]" * 5000 + "\n",
    "gpus-bool.yaml": "- {provider: x, instance_type: i, gpu: H100, gpus_per_node: yes, pricing: spot, "
                      "price_per_hour_usd: 16}\n",
    "cluster-maybe.yaml": "- {provider: x, instance_type: i, gpu: H100, gpus_per_node: 8, pricing: spot, "
                          "price_per_hour_usd: 16, cluster: maybe}\n",
}


@pytest.mark.parametrize("name", sorted(_CSV_CASES) + sorted(_YAML_CASES))
def test_import_refuses_hostile_files_and_loses_nothing(cli, store, tmp_path, name):
    text = _CSV_CASES.get(name, _YAML_CASES.get(name))
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    before = store_contents(store)
    code, out, err = cli("catalog", "import", str(f), "--name", "hostile", "--db", str(store))
    assert_refused(code, out, err)
    assert "pwned" not in out + err
    assert store_contents(store) == before


@pytest.mark.parametrize("kind", ["directory", "binary", "latin1", "too-big", "missing", "bad-name"])
def test_import_refuses_hostile_paths(cli, store, tmp_path, kind):
    f = tmp_path / "offers.csv"
    name = "ok"
    if kind == "directory":
        f.mkdir()
    elif kind == "binary":
        f.write_bytes(b"\x00\xff\xfe" * 100)
    elif kind == "latin1":
        f.write_bytes((IMPORT_HEADER + "caf\xe9,i,H100,8,spot,16,us\n").encode("latin-1"))
    elif kind == "too-big":
        with open(f, "wb") as fh:
            fh.truncate(40 * 2**20)  # sparse: refused by its size, never read
    elif kind == "bad-name":
        f.write_text(IMPORT_HEADER + GOOD_ROW)
        name = "../../etc"
    before = store_contents(store)
    code, out, err = cli("catalog", "import", str(f), "--name", name, "--db", str(store))
    assert_refused(code, out, err)
    assert store_contents(store) == before


def test_yaml_keeps_strings_as_strings(cli, store, tmp_path):
    f = tmp_path / "norway.yaml"
    f.write_text("- provider: no\n  instance_type: 1.10\n  gpu: H100\n  gpus_per_node: 8\n  pricing: spot\n"
                 "  price_per_hour_usd: 16\n  region: NO\n  cluster: no\n")
    code, out, err = cli("catalog", "import", str(f), "--name", "norway", "--db", str(store))
    assert code == 0, err
    from gpuplan.catalog.store import Store

    with Store(store) as s:
        (o,) = s.snapshot_offers(s.latest_complete()["user:norway"])
    assert (o.provider, o.instance_type, o.region, o.cluster) == ("no", "1.10", "NO", False)


def test_csv_formula_cells_are_escaped_on_export_and_round_trip(cli, store, tmp_path):
    f = tmp_path / "formulas.csv"
    f.write_text(IMPORT_HEADER + "=cmd|' /C calc'!A0,=HYPERLINK(\"x\"),H100,8,spot,16,+1+2\n"
                                 "@SUM(A1),-2+3,H100,8,spot,16,us\n")
    code, out, err = cli("catalog", "import", str(f), "--name", "formulas", "--db", str(store))
    assert code == 0, err
    code, out, err = cli("catalog", "export", "--source", "user:formulas", "--db", str(store))
    assert code == 0, err
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(out)))
    cells = [v for r in rows for v in r.values()]
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _is_number(c))]
    assert {r["provider"] for r in rows} == {"'=cmd|' /c calc'!a0", "'@sum(a1)"}
    # offers --csv escapes too
    code, out, err = cli("offers", "--csv", "--db", str(store), "--gpu", "H100")
    assert code == 0, err
    assert "\n=" not in out and ",=" not in out and ",@" not in out and ",+" not in out
    # and the escape round-trips through import
    (tmp_path / "again.csv").write_text(
        "provider,instance_type,gpu,gpus_per_node,pricing,price_per_hour_usd,region\n"
        + "\n".join(",".join(_csv_quote(r[k]) for k in ("provider", "instance_type", "gpu", "gpus_per_node",
                                                          "pricing", "price_per_hour_usd", "region")) for r in rows)
        + "\n")
    code, _, err = cli("catalog", "import", str(tmp_path / "again.csv"), "--name", "again", "--db", str(store))
    assert code == 0, err
    from gpuplan.catalog.store import Store

    with Store(store) as s:
        got = {o.provider for o in s.snapshot_offers(s.latest_complete()["user:again"])}
    assert got == {"=cmd|' /c calc'!a0", "@sum(a1)"}


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _csv_quote(v: str) -> str:
    return '"' + v.replace('"', '""') + '"'


# ---- 3. config.json ---------------------------------------------------------------------------------

_BASE_CFG = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
             "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}
_CONFIG_CASES = {
    "nan": '{"hidden_size": NaN, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 1, "intermediate_size": 1}',
    "infinity": json.dumps(_BASE_CFG).replace("4096", "Infinity"),
    "huge-int": json.dumps(_BASE_CFG).replace("4096", "9" * 5000),
    "negative": json.dumps({**_BASE_CFG, "num_hidden_layers": -1}),
    "zero-heads": json.dumps({**_BASE_CFG, "num_attention_heads": 0}),
    "kv-gt-heads": json.dumps({**_BASE_CFG, "num_key_value_heads": 64}),
    "string-field": json.dumps({**_BASE_CFG, "hidden_size": "big"}),
    "bool-field": json.dumps({**_BASE_CFG, "num_hidden_layers": True}),
    "array": "[1, 2, 3]",
    "null": "null",
    "empty": "",
    "binary": "\x00\x01\x02",
    "deep": "[" * 100000 + "]" * 100000,
    "missing-fields": "{}",
    "moe-topk-gt-experts": json.dumps({**_BASE_CFG, "num_local_experts": 4, "num_experts_per_tok": 8}),
    "1e30": json.dumps({**_BASE_CFG, "hidden_size": 1e30}),
}


@pytest.mark.parametrize("name", sorted(_CONFIG_CASES))
def test_config_json_refused_in_one_line(tmp_path, name):
    from gpuplan.models.hf_config import model_from_config

    f = tmp_path / "config.json"
    f.write_text(_CONFIG_CASES[name], encoding="utf-8", errors="surrogateescape")
    with pytest.raises(UsageError) as e:
        model_from_config(f)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("kind", ["sparse-3GB", "directory-without-config", "fifo", "missing"])
def test_config_json_paths_refused_fast_without_reading(cli, no_bundled_store, tmp_path, kind):
    f = tmp_path / "model"
    if kind == "sparse-3GB":
        f = tmp_path / "config.json"
        with open(f, "wb") as fh:
            fh.truncate(3 * 2**30)  # a sparse file: refused by stat() before any read
    elif kind == "directory-without-config":
        f.mkdir()
    elif kind == "fifo":
        f = tmp_path / "config.json"
        os.mkfifo(f)  # not a regular file: never opened, so no hang
    t0 = time.perf_counter()
    code, out, err = cli("estimate", "train", "--model", str(f), "--tokens", "1e10", "--gpu", "H100")
    assert_refused(code, out, err)
    assert time.perf_counter() - t0 < 5


# ---- 4. plan files ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def plan_json(tmp_path_factory) -> dict:
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.cli.output import to_jsonable
    from gpuplan.planner import plan_training
    from gpuplan.planner.requests import TrainPlanRequest

    result = plan_training(TrainPlanRequest(model=MODEL, tokens=1e10, limit=3), Catalog.load(use_store=False))
    return to_jsonable(result)


def _set(path: str, value):
    def mutate(d):
        keys = path.split(".")
        for k in keys[:-1]:
            d = d[int(k)] if isinstance(d, list) else d[k]
        d[keys[-1]] = value
    return mutate


_PLAN_VALUE_CASES = {
    "checkpoint-nan": (_set("plans.0.checkpoint_interval_min", float("nan")), "NaN"),
    "wall-infinity": (_set("plans.0.wall_hours", float("inf")), "Infinity"),
    "cost-neg-infinity": (_set("plans.0.cost_usd", float("-inf")), "Infinity"),
    "nodes-1e12": (_set("plans.0.nodes", 10**12), "nodes"),
    "nodes-zero": (_set("plans.0.nodes", 0), "nodes"),
    "gpus-negative": (_set("plans.0.gpus", -8), "gpus"),
    "gpus-more-than-nodes-hold": (_set("plans.0.gpus", 10**5), "gpus"),
    "seq-len-negative": (_set("summary.seq_len", -1), "seq_len"),
    "seq-len-zero": (_set("summary.seq_len", 0), "seq_len"),
    "tokens-zero": (_set("summary.tokens", 0), "tokens"),
    "precision-fp2": (_set("plans.0.precision", "fp2"), "precision"),
    "precision-missing": (_set("plans.0.precision", None), "precision"),
    "checkpoint-every-step": (_set("plans.0.checkpoint_interval_min", 1e-9), "checkpoint_interval_min"),
    "checkpoint-negative": (_set("plans.0.checkpoint_interval_min", -5), "checkpoint_interval_min"),
    "wall-zero": (_set("plans.0.wall_hours", 0), "wall_hours"),
    "wall-1e300": (_set("plans.0.wall_hours", 1e300), "wall_hours"),
    "tp-zero": (_set("plans.0.layout.tp", 0), "tp"),
    "zero-stage-7": (_set("plans.0.layout.zero", 7), "zero"),
    "workload-unknown": (_set("workload", "mine-bitcoin"), "workload"),
    "plans-not-list": (_set("plans", {"a": 1}), "plans"),
    "string-100k": (_set("plans.0.instance_type", "x" * 200_000), "character"),
    "gpus-per-node-zero": (_set("plans.0.gpus_per_node", 0), "gpus_per_node"),
    # A line break in a region or an instance type would start new YAML keys or documents in the exports.
    "region-yaml-document": (_set("plans.0.region", "eu\n---\napiVersion: v1\nkind: Pod\n"), "control character"),
    "instance-type-yaml-key": (_set("plans.0.instance_type", 'p5"\n  evil: true'), "control character"),
    "engine-carriage-return": (_set("plans.0.provider", "aws\rx"), "control character"),
    "recompute-shell": (_set("plans.0.layout.recompute", "$(reboot)"), "recompute"),
}
_PLAN_TEXT_CASES = {
    "deep-array": ("[" * 100_000 + "]" * 100_000, "nested"),
    "deep-object": ('{"plans":' + "[" * 5000 + "]" * 5000 + "}", "nested"),
    "overflow-1e999": ('{"plans": [], "x": 1e999}', "overflows"),
    "huge-int": ('{"plans": [], "x": ' + "9" * 5000 + "}", "plan"),
    "not-json": ("plans: yes", "not JSON"),
    "empty": ("   \n", "empty"),
    "array": ("[]", "not a plan result"),
    "null": ("null", "not a plan result"),
    "truncated": (None, "not JSON"),
}


def _plan_text(plan_json, name) -> str:
    if name in _PLAN_VALUE_CASES:
        d = copy.deepcopy(plan_json)
        _PLAN_VALUE_CASES[name][0](d)
        return json.dumps(d)  # allow_nan: writes NaN / Infinity like a careless tool would
    text = _PLAN_TEXT_CASES[name][0]
    return json.dumps(plan_json)[:500] if text is None else text


@pytest.mark.parametrize("name", sorted(_PLAN_VALUE_CASES) + sorted(_PLAN_TEXT_CASES))
def test_plan_file_values_are_validated(plan_json, tmp_path, name):
    from gpuplan.planfile import load_plan_file

    f = tmp_path / "plan.json"
    f.write_text(_plan_text(plan_json, name))
    needle = (_PLAN_VALUE_CASES.get(name) or _PLAN_TEXT_CASES[name])[1]
    with pytest.raises(UsageError) as e:
        load_plan_file(f)
    msg = str(e.value)
    assert "\n" not in msg and needle.lower() in msg.lower(), msg


def test_plan_file_limits_before_reading(tmp_path):
    from gpuplan.planfile import load_plan_file

    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(3 * 2**30)
    t0 = time.perf_counter()
    with pytest.raises(UsageError, match="too large"):
        load_plan_file(big)
    assert time.perf_counter() - t0 < 1
    with pytest.raises(UsageError, match="directory"):
        load_plan_file(tmp_path)
    with pytest.raises(UsageError, match="no such file"):
        load_plan_file(tmp_path / "nope.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00{")
    with pytest.raises(UsageError, match="UTF-8"):
        load_plan_file(tmp_path / "bin.json")


def test_real_plan_files_pass(plan_json, tmp_path):
    from gpuplan.planfile import load_plan_file

    (tmp_path / "plan.json").write_text(json.dumps(plan_json))
    assert load_plan_file(tmp_path / "plan.json")["plans"][0]["rank"] == 1
    assert load_plan_file("-", stdin_text=json.dumps(plan_json))["workload"] == "train"


def _export_validates_plan_values() -> bool:
    import inspect

    import gpuplan.cli.cmd_export as cmd_export
    import gpuplan.export.common as common

    return "load_plan_file" in inspect.getsource(common) + inspect.getsource(cmd_export)


@pytest.mark.parametrize("name", sorted(_PLAN_TEXT_CASES))
def test_export_refuses_malformed_plan_files(cli, no_bundled_store, plan_json, tmp_path, name):
    if name.startswith(("deep", "overflow", "huge")) and not _export_validates_plan_values():
        pytest.xfail("gpuplan.export.common.load_plan_result does not call gpuplan.planfile.load_plan_file yet")
    f = tmp_path / "plan.json"
    f.write_text(_plan_text(plan_json, name))
    code, out, err = cli("export", "skypilot", "--from", str(f), "--out", str(tmp_path / "out.yaml"))
    assert_refused(code, out, err)
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize("name", sorted(_PLAN_VALUE_CASES))
def test_export_refuses_plan_files_with_garbage_values(cli, no_bundled_store, plan_json, tmp_path, name):
    if not _export_validates_plan_values():
        pytest.xfail("gpuplan.export.common.load_plan_result does not call gpuplan.planfile.load_plan_file yet")
    f = tmp_path / "plan.json"
    f.write_text(_plan_text(plan_json, name))
    code, out, err = cli("export", "skypilot", "--from", str(f), "--out", str(tmp_path / "out.yaml"))
    assert_refused(code, out, err)
    assert not (tmp_path / "out.yaml").exists()


# ---- 5. output targets -------------------------------------------------------------------------------

def _export_to(cli, store, out) -> tuple:
    return cli("catalog", "export", "--source", "user:mine", "--db", str(store), "--out", str(out))


def test_out_symlink_is_written_through_and_stays_a_link(cli, store, tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("keep\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    code, out, err = _export_to(cli, store, link)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().startswith("provider,") and "mycluster" in real.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "real.csv", "store"]


@pytest.mark.parametrize("kind", ["fifo", "directory", "missing-folder", "symlink-loop", "dangling-into-missing",
                                  "stderr-alias", "fd-alias", "empty", "file-as-folder"])
def test_out_refuses_non_regular_and_impossible_targets(cli, store, tmp_path, kind):
    target = tmp_path / "t.csv"
    if kind == "fifo":
        os.mkfifo(target)  # stands in for /dev/full and other devices: never replaced
    elif kind == "directory":
        target.mkdir()
    elif kind == "missing-folder":
        target = tmp_path / "nope" / "t.csv"
    elif kind == "symlink-loop":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        target = tmp_path / "a"
    elif kind == "dangling-into-missing":
        target.symlink_to(tmp_path / "nope" / "x.csv")
    elif kind == "stderr-alias":
        target = "/dev/stderr"
    elif kind == "fd-alias":
        target = "/dev/fd/2"
    elif kind == "empty":
        target = ""
    elif kind == "file-as-folder":
        (tmp_path / "plain").write_text("x")
        target = tmp_path / "plain" / "t.csv"
    code, out, err = _export_to(cli, store, target)
    assert_refused(code, out, err)
    if kind == "fifo":
        assert stat.S_ISFIFO(os.stat(target).st_mode)
    leftovers = [p.name for p in tmp_path.rglob("*.tmp")]
    assert leftovers == []


def test_out_unwritable_folder_and_file(cli, store, tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "old.csv").write_text("old\n")
    real_access = os.access

    def access(path, mode, *a, **kw):  # root ignores permission bits: simulate a folder we may not write
        if mode & os.W_OK and str(path).startswith(str(ro)):
            return False
        return real_access(path, mode, *a, **kw)
    monkeypatch.setattr(os, "access", access)
    for target in (ro / "new.csv", ro / "old.csv"):
        code, out, err = _export_to(cli, store, target)
        assert "permission denied" in assert_refused(code, out, err)
    assert (ro / "old.csv").read_text() == "old\n" and sorted(p.name for p in ro.iterdir()) == ["old.csv"]


def test_out_full_disk_is_one_line_and_keeps_the_old_file(cli, store, tmp_path, monkeypatch):
    target = tmp_path / "c.csv"
    target.write_text("old\n")

    def full(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    code, out, err = _export_to(cli, store, target)
    assert code == 1
    assert "No space left" in assert_refused(code, out, err)
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["c.csv", "store"]


def test_out_dash_and_dev_stdout_print(cli, store):
    for out_arg in ("-", "/dev/stdout"):
        code, out, err = cli("catalog", "export", "--source", "user:mine", "--db", str(store), "--out", out_arg)
        assert code == 0 and out.startswith("provider,") and "mycluster" in out, err


# ---- 6. stores ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["text-file", "directory", "fifo", "symlink-loop", "newer-schema", "truncated"])
def test_bad_store_paths_fail_in_one_line(cli, tmp_path, monkeypatch, kind):
    db = tmp_path / "c.db"
    if kind == "text-file":
        db.write_text("hello, not sqlite")
    elif kind == "directory":
        db.mkdir()
    elif kind == "fifo":
        os.mkfifo(db)
    elif kind == "symlink-loop":
        (tmp_path / "x.db").symlink_to(db)
        db.symlink_to(tmp_path / "x.db")
    elif kind == "newer-schema":
        from gpuplan.catalog.store import SCHEMA_VERSION, Store

        Store(db, seed=None).close()
        c = sqlite3.connect(db)
        c.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 7,))
        c.commit()
        c.close()
    elif kind == "truncated":
        db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
    monkeypatch.setenv("GPUPLAN_DB", str(db))
    for args in (("offers", "--gpu", "H100"), ("catalog", "status")):
        code, out, err = cli(*args)
        assert_refused(code, out, err)


def test_read_only_store_reads_and_refuses_writes(cli, store, tmp_path, monkeypatch):
    real_access = os.access
    folder = str(store.parent)

    def access(path, mode, *a, **kw):  # a shared catalog nobody here may write (root ignores mode bits)
        if mode & os.W_OK and str(path).startswith(folder):
            return False
        return real_access(path, mode, *a, **kw)
    monkeypatch.setattr(os, "access", access)
    before = store.read_bytes()
    contents = store_contents(store)
    code, out, err = cli("offers", "--provider", "mycluster", "--db", str(store), "--json")
    assert code == 0, err
    assert [o["provider"] for o in json.loads(out)] == ["mycluster"]
    code, out, err = cli("catalog", "status", "--db", str(store), "--json")
    assert code == 0 and "user:mine" in out, err
    (tmp_path / "more.csv").write_text(IMPORT_HEADER + GOOD_ROW)
    for args in (("catalog", "import", str(tmp_path / "more.csv")), ("catalog", "remove", "mine"),
                 ("catalog", "prune"), ("catalog", "refresh", "--source", "vast")):
        code, out, err = cli(*args, "--db", str(store))
        assert "read-only" in assert_refused(code, out, err)
    assert store.read_bytes() == before and store_contents(store) == contents
    wal = Path(str(store) + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # SQLite may open an empty WAL where it can; nothing written


def test_user_provider_store_plans_everywhere(cli, store, monkeypatch):
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    monkeypatch.setenv("GPUPLAN_DB", str(store))
    code, out, err = cli("offers", "--provider", "mycluster", "--json")
    assert code == 0 and "mycluster" in out, err
    code, out, err = cli("plan", "train", "--model", MODEL, "--tokens", "1e10", "--limit", "3", "--json")
    assert code == 0 and "Traceback" not in err, err
    with TestClient(create_app(str(store))) as client:
        r = client.post("/api/plan/train", json={"model": MODEL, "tokens": 1e10, "limit": 3})
        assert r.status_code == 200, r.text


def test_remove_and_prune_lose_only_what_was_asked(cli, store, tmp_path):
    (tmp_path / "other.csv").write_text(IMPORT_HEADER + "othercloud,1xH100,H100,1,on_demand,2,eu\n")
    for _ in range(3):
        assert cli("catalog", "import", str(tmp_path / "other.csv"), "--name", "other", "--db", str(store))[0] == 0
    code, out, err = cli("catalog", "remove", "nosuch", "--db", str(store))
    assert "unknown source 'nosuch'" in assert_refused(code, out, err)
    code, out, err = cli("catalog", "remove", "bundled", "--db", str(store))
    assert_refused(code, out, err)
    code, out, err = cli("catalog", "prune", "--keep", "1", "--db", str(store), "--json")
    assert code == 0 and json.loads(out)["removed_snapshots"] == 2, err
    code, out, err = cli("catalog", "remove", "mine", "--db", str(store))
    assert code == 0 and "user:mine" in out, err
    from gpuplan.catalog.store import Store

    with Store(store) as s:
        assert set(s.latest_complete()) == {"bundled", "user:other"}
        assert [o.provider for o in s.snapshot_offers(s.latest_complete()["user:other"])] == ["othercloud"]


# ---- 7. secrets ----------------------------------------------------------------------------------

def test_no_secret_printed_or_stored(cli, store, monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GPUPLAN_VAST_API_KEY", SECRET_KEY)
    monkeypatch.setenv("LAMBDA_API_KEY", SECRET_LAMBDA)
    monkeypatch.setenv("GPUPLAN_VAST_URL", f"http://scott:{SECRET_PASSWORD}@127.0.0.1:9/")
    monkeypatch.setenv("GPUPLAN_LAMBDA_URL", f"http://admin:{SECRET_PASSWORD}@127.0.0.1:9")
    monkeypatch.setenv("GPUPLAN_HTTP_RETRIES", "0")
    monkeypatch.setenv("GPUPLAN_HTTP_TIMEOUT_S", "2")
    seen = []
    for args in (("catalog", "refresh", "--source", "vast", "--source", "lambda"),
                 ("catalog", "refresh", "--source", "vast", "--json"),
                 ("catalog", "status"), ("catalog", "status", "--json"),
                 ("offers", "--provider", "vast", "--json")):
        code, out, err = cli(*args, "--db", str(store))
        assert "Traceback" not in out + err
        seen.append(out + err)
    assert any("failed" in s for s in seen[:2])  # the refreshes did run (and failed on the dead port)
    stored = store.read_bytes() + (Path(str(store) + "-wal").read_bytes() if Path(str(store) + "-wal").exists() else b"")
    for secret in (SECRET_KEY, SECRET_LAMBDA, SECRET_PASSWORD):
        assert not [s for s in seen if secret in s], secret
        assert secret.encode() not in stored, secret


# ---- 8. the web API ----------------------------------------------------------------------------------

_WEB_ENDPOINTS = ["/api/estimate/train", "/api/estimate/serve", "/api/plan/train", "/api/plan/serve",
                  "/api/plan/project", "/api/export/skypilot", "/api/export/k8s", "/api/tco", "/api/size",
                  "/api/breakeven", "/api/plan/batch"]
_WEB_BODIES = {
    "not-json": b"{not json",
    "empty": b"",
    "array": b"[]",
    "null": b"null",
    "string": b'"hello"',
    "nan-tokens": b'{"model": "llama-3.1-8b", "tokens": NaN}',
    "infinity": b'{"model": "llama-3.1-8b", "tokens": Infinity, "gpu": "H100"}',
    "huge-int": b'{"model": "llama-3.1-8b", "tokens": ' + b"9" * 5000 + b"}",
    "deep": b"[" * 20000 + b"]" * 20000,
    "wrong-types": b'{"model": 5, "tokens": "lots", "gpu": [1], "limit": "x"}',
    "negative": b'{"model": "llama-3.1-8b", "tokens": -1, "gpu": "H100", "gpus": -8, "requests_per_s": -1}',
    "path-model": b'{"model": "../../../etc/passwd", "tokens": 1e10, "gpu": "H100", "requests_per_s": 1}',
    "unknown-gpu": b'{"model": "llama-3.1-8b", "tokens": 1e10, "gpu": "H1000", "requests_per_s": 1}',
    "extra-fields": b'{"model": "llama-3.1-8b", "tokens": 1e10, "__proto__": {"x": 1}, "rm": "-rf"}',
    "binary": b"\x00\xff\xfe\xfd",
}


@pytest.fixture(scope="module")
def web_client():
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    os.environ.pop("GPUPLAN_DB", None)
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("endpoint", _WEB_ENDPOINTS)
def test_web_never_answers_5xx_to_malformed_bodies(web_client, endpoint):
    for name, body in _WEB_BODIES.items():
        r = web_client.post(endpoint, content=body, headers={"content-type": "application/json"})
        assert r.status_code < 500, (name, r.status_code, r.text[:200])
        assert 400 <= r.status_code < 500, (name, r.status_code, r.text[:200])
        detail = r.json().get("detail")
        assert isinstance(detail, str) and "\n" not in detail and "Traceback" not in r.text, (name, r.text[:200])


@pytest.mark.parametrize("query", ["limit=-1", "limit=abc", "limit=99999999999999999999", "gpu=H1000",
                                   "provider=%00", "max_price=nan", "max_price=-inf", "sort=;DROP TABLE offers"])
def test_web_offers_query_params_never_5xx(web_client, query):
    r = web_client.get(f"/api/offers?{query}")
    assert r.status_code < 500, r.text[:200]


def test_web_oversized_and_foreign_host(web_client):
    r = web_client.post("/api/plan/train", content=b'{"model": "' + b"x" * (2 * 2**20) + b'"}',
                        headers={"content-type": "application/json"})
    assert r.status_code == 413
    for path in ("/static/../../etc/passwd", "/static/%2e%2e/%2e%2e/etc/passwd", "/api/nope"):
        assert web_client.get(path).status_code in (400, 404)


@pytest.mark.parametrize("args", [["report", "--from", "{f}", "--out", "{d}/r.html"], ["export", "k8s", "--from", "{f}"],
                                  ["catalog", "import", "{f}", "--db", "{d}/c.db"], ["testtime", "{f}", "--budget", "3"],
                                  ["calibrate", "{f}"], ["models", "show", "{f}"]])
def test_a_named_pipe_as_input_is_refused_not_waited_on(cli, tmp_path, args):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, out, err = cli(*[a.format(f=fifo, d=tmp_path) for a in args])
    assert code == 2 and err.count("\n") == 1 and ("pipe" in err or "FIFO" in err), err


def test_a_store_with_a_corrupt_schema_byte_is_one_line_and_no_5xx(cli, store, tmp_path):
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    data = bytearray(store.read_bytes())
    text = b"snapshots_by_source ON snapshots (source, s"  # an index's CREATE statement in sqlite_master
    i = data.find(text)
    assert i >= 0
    data[i + len(text) - 1] = 0x97  # not UTF-8 on its own
    bad = tmp_path / "bad.db"
    bad.write_bytes(bytes(data))
    code, _, err = cli("offers", "--db", str(bad))
    assert code == 2 and "unreadable" in err and err.count("\n") == 1
    assert TestClient(create_app(str(bad))).get("/api/health").status_code < 500


def test_a_tiny_ownership_life_is_refused_and_huge_dollars_still_print(cli, no_bundled_store):
    from gpuplan.display import fixed, fmt_usd

    code, out, err = cli("own-vs-rent", "--gpu", "H100", "--life-years", "1e-50")
    assert code == 2 and "life" in err and err.count("\n") == 1 and "Traceback" not in err
    assert fixed(1e40, 2).startswith("1000000000000000030") and fmt_usd(3e35).endswith("B")


@pytest.mark.parametrize("args", [["catalog", "import", "{f}", "--db", "{d}/c.db"], ["calibrate", "{f}"]])
def test_a_file_that_is_not_a_table_is_not_echoed(cli, tmp_path, args):
    f = tmp_path / "secrets.csv"
    f.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n")
    code, out, err = cli(*[a.format(f=f, d=tmp_path) for a in args])
    assert code == 2 and "root:x" not in err and "column" in err and err.count("\n") == 1, err
