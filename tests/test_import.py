"""User offers in and out: CSV/YAML import and export, row/column error messages, atomic
writes, and a property test feeding random and hostile files to the importer."""
from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan.catalog.imports import COLUMNS, parse_offers_file, render_offers, write_atomic
from gpuplan.catalog.records import Offer
from gpuplan.catalog.store import Store
from gpuplan.errors import GpuplanError, UsageError

HEADER = "provider,instance_type,gpu,gpus_per_node,region,pricing,price_per_hour_usd"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "store.db")


def test_import_minimal_csv_computes_per_gpu_and_marks_user(cli, tmp_path, db):
    f = write(tmp_path, "deal.csv", HEADER + "\nmycloud,8x H100 reserved,H100 SXM,8,us-east,reserved,16.0\n")
    code, out, err = cli("catalog", "import", str(f), "--name", "deal", "--db", db)
    assert code == 0 and "imported 1 offers as source user:deal" in out
    with Store(db) as s:
        got = s.snapshot_offers(s.latest_complete()["user:deal"])
    assert len(got) == 1
    o = got[0]
    assert (o.gpu, o.price_per_gpu_hour_usd, o.confidence, o.as_of) == ("H100-SXM", 2.0, "user", dt.date.today())
    # the user's price outranks everything else in the merged view
    with Store(db) as s:
        assert o in s.current_offers()


@pytest.mark.parametrize("text, message", [
    (HEADER + "\nx,a,H100,1,,on_demand,2\nx,b,H100,1,,on_demand,abc\n",
     "deal.csv row 3, column price_per_hour_usd: not a number"),
    (HEADER + "\nx,a,H100,0,,on_demand,2\n", "deal.csv row 2, column gpus_per_node: must be greater than 0"),
    (HEADER + "\nx,a,H100,1,,on_demand,nan\n", "row 2, column price_per_hour_usd: must be a finite number"),
    (HEADER + "\nx,a,H100,1,,on_demand,-3\n", "row 2, column price_per_hour_usd: must be greater than 0"),
    (HEADER + "\nx,a,H100,1,,on_demand,1e300\n", "column price_per_hour_usd: 1e+300 is implausibly large"),
    (HEADER + "\nx,a,H100,1,,on_demand,250\n", "$250 per GPU-hour is above the $60 ceiling"),
    (HEADER + "\nx,a,H100,1e-300,,on_demand,1\n", "column gpus_per_node: 1e-300 is implausibly small"),
    (HEADER + "\nx,a,H1000,1,,on_demand,2\n", "row 2, column gpu: unknown GPU 'H1000'"),
    (HEADER + "\nx,a,H100,1,,cheap,2\n", "row 2, column pricing: 'cheap' is not one of"),
    (HEADER + "\n,a,H100,1,,on_demand,2\n", "row 2, column provider: is empty"),
    (HEADER + ",as_of\nx,a,H100,1,,on_demand,2,yesterday\n", "column as_of: 'yesterday' is not a date"),
    (HEADER + ",as_of\nx,a,H100,1,,on_demand,2,2999-01-01\n", "column as_of: 2999-01-01 is out of range"),
    (HEADER + ",price_per_gpu_hour_usd\nx,a,H100,2,,on_demand,4,3\n", "column price_per_gpu_hour_usd: 3 !="),
    (HEADER + "\nx,a,H100,1,,on_demand,2\nx,a,H100,1,,on_demand,3\n", "row 3: duplicates row 2"),
    (HEADER + ",colour\nx,a,H100,1,,on_demand,2,red\n", "unknown column 'colour'"),
    ("provider,gpu\nx,H100\n", "missing column(s) instance_type, gpus_per_node, pricing, price_per_hour_usd"),
    (HEADER + "\nx,a,H100,1,,on_demand,2,extra\n", "row 2: 8 cells but the header has 7"),
    ("", "deal.csv is empty"),
    (HEADER + "\n", "holds no offers"),
])
def test_csv_errors_name_row_and_column(cli, tmp_path, db, text, message):
    f = write(tmp_path, "deal.csv", text)
    code, out, err = cli("catalog", "import", str(f), "--db", db)
    assert code == 2
    assert err.startswith("error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("text, message", [
    ("offers:\n  - provider: x\n    instance_type: a\n    gpu: H100\n    gpus_per_node: 1\n    pricing: on_demand\n"
     "    price_per_hour_usd: [1, 2]\n", "deal.yaml row 1, column price_per_hour_usd: not a number"),
    ("offers: {a: 1}\n", "expected a list of offers"),
    ("- 1\n- 2\n", "row 1: expected a mapping"),
    ("offers:\n  - provider: x\n   bad: indent\n", "not valid YAML at line"),
    ("other: 1\n", "expected a list of offers"),
    ("offers: []\nextra: 1\n", "unknown top-level key 'extra'"),
    ("offers: []\noffers: []\n", "line 2: duplicate key 'offers'"),
    ("- provider: x\n  provider: y\n", "line 2: duplicate key 'provider'"),
    ("- {provider: x, instance_type: a, gpu: H100, gpus_per_node: 1, pricing: on_demand, price_per_hour_usd: 1, "
     "cluster: perhaps}\n", "column cluster: 'perhaps' is not yes or no"),
])
def test_yaml_errors(cli, tmp_path, db, text, message):
    f = write(tmp_path, "deal.yaml", text)
    code, out, err = cli("catalog", "import", str(f), "--db", db)
    assert code == 2 and message in err, err


def test_other_file_problems(cli, tmp_path, db):
    assert "no such file" in cli("catalog", "import", str(tmp_path / "nope.csv"), "--db", db)[2]
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in cli("catalog", "import", str(tmp_path / "bin.csv"), "--db", db)[2]
    f = write(tmp_path, "x.json", "{}")
    assert "unknown file type" in cli("catalog", "import", str(f), "--db", db)[2]
    f = write(tmp_path, "ok.csv", HEADER + "\nx,a,H100,1,,on_demand,2\n")
    assert "import name" in cli("catalog", "import", str(f), "--name", "bad name!", "--db", db)[2]


@pytest.mark.parametrize("fmt", ["csv", "yaml"])
def test_export_import_round_trip(cli, tmp_path, db, fmt):
    out_file = tmp_path / f"all.{fmt}"
    code, out, err = cli("catalog", "export", "--out", str(out_file), "--db", db)
    assert code == 0 and out_file.exists()
    with Store(db) as s:
        current = s.current_offers()
    parsed = parse_offers_file(out_file)
    assert len(parsed) == len(current) > 100
    # every field survives except confidence, which becomes 'user' for an import
    strip = lambda o: o.model_dump(exclude={"confidence"})  # noqa: E731
    assert [strip(o) for o in parsed] == [strip(o) for o in current]
    code, out, err = cli("catalog", "import", str(out_file), "--name", "copy", "--db", db)
    assert code == 0, err
    code, out, err = cli("catalog", "export", "--source", "user:copy", "--format", fmt, "--db", db)
    assert code == 0 and out.splitlines()[0] == (",".join(COLUMNS) if fmt == "csv" else "offers:")
    again = write(tmp_path, f"again.{fmt}", out)
    assert [strip(o) for o in parse_offers_file(again)] == [strip(o) for o in current]


def test_export_filters_and_json_columns_match(cli, tmp_path, db):
    code, out, err = cli("catalog", "export", "--gpu", "h100", "--provider", "lambda", "--db", db)
    lines = out.strip().splitlines()
    assert lines[0].split(",") == list(COLUMNS) and len(lines) > 1
    assert all(",H100-SXM," in ln and ln.startswith("lambda,") for ln in lines[1:])
    code, out, err = cli("catalog", "export", "--source", "user:none", "--db", db)
    assert code == 2 and "unknown source" in err


def test_export_atomic_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "out.csv"
    target.write_text("old content\n")

    def boom(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(GpuplanError, match="No space left"):  # a failed write is exit 1, not a usage error
        write_atomic(target, "new content\n" * 1000)
    assert target.read_text() == "old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # no temp file left behind
    with pytest.raises(UsageError, match="does not exist"):
        write_atomic(tmp_path / "missing" / "x.csv", "x")


# ---- property test: random and hostile files ----------------------------------------------------
_cells = st.one_of(
    st.sampled_from(["", "H100", "h100", "A100-80GB", "RTX 4090", "MI300X", "on_demand", "spot", "reserved", "nan",
                     "inf", "-1", "0", "1", "8", "2.5", "1e308", "2026-01-01", "2031-01-01", "x" * 300,
                     "=cmd|' /C calc'!A0", "\x00", "\"", "'", ",", "\n", "üñí", "lambda", "1_000"]),
    st.text(max_size=12),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
_headers = st.lists(st.sampled_from(list(COLUMNS) + ["bogus", "", "price"]), min_size=0, max_size=9)


_valid_cells = {
    "provider": st.sampled_from(["lambda", "mycluster", "aws", "Vast"]),
    "gpu": st.sampled_from(["H100", "h100 sxm", "A100-80GB", "RTX 4090", "MI300X", "l40s"]),
    "gpus_per_node": st.sampled_from(["1", "2", "8", "0.5", "16"]),
    "region": st.sampled_from(["", "us-east-1", "eu, west"]),
    "pricing": st.sampled_from(list(["on_demand", "spot", "reserved", "community", "interruptible", "on-demand"])),
    "price_per_hour_usd": st.floats(0.05, 400).map(lambda f: f"{f:.4f}"),
}


@st.composite
def valid_row(draw, i):
    cells = [draw(_valid_cells[c]) if c in _valid_cells else f"node-{i}" for c in HEADER.split(",")]
    if draw(st.integers(0, 3)) == 0:  # one hostile cell
        cells[draw(st.integers(0, len(cells) - 1))] = draw(_cells)
    return cells


@st.composite
def csv_files(draw):
    import csv
    import io

    if draw(st.integers(0, 4)) == 0:  # random header and random cells
        header = draw(_headers)
        rows = draw(st.lists(st.lists(_cells, min_size=len(header), max_size=len(header) + 1), max_size=6))
    else:  # mostly valid rows with occasional hostile cells
        header = HEADER.split(",")
        rows = [draw(valid_row(i)) for i in range(draw(st.integers(0, 6)))]
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    text = buf.getvalue()
    if draw(st.integers(0, 4)) == 0:
        cut = draw(st.integers(0, max(0, len(text))))
        text = text[:cut] + draw(st.sampled_from(['"', "\r", "\x00", ",,,", "\ufeff", ""])) + text[cut:]
    return text


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(), st.text(max_size=10),
                     st.sampled_from(["H100", "on_demand", "lambda", "2026-01-01"]))
@st.composite
def valid_yaml_doc(draw):
    rows = []
    for i in range(draw(st.integers(1, 4))):
        row = dict(zip(HEADER.split(","), draw(valid_row(i))))
        if draw(st.booleans()):  # YAML numbers, not strings
            try:
                row["gpus_per_node"] = float(row["gpus_per_node"])
            except ValueError:
                pass
        if draw(st.booleans()):
            row[draw(st.sampled_from(list(COLUMNS)))] = draw(_scalars)
        rows.append(row)
    return {"offers": rows}


_yaml_docs = st.one_of(
    valid_yaml_doc(),
    st.lists(st.dictionaries(st.sampled_from(list(COLUMNS) + ["junk"]), st.one_of(_scalars, st.lists(_scalars, max_size=2)),
                             max_size=12), max_size=4),
    st.dictionaries(st.sampled_from(["offers", "x"]), st.lists(st.dictionaries(st.sampled_from(list(COLUMNS)), _scalars)),
                    max_size=2),
    _scalars,
)


@pytest.fixture(scope="module")
def prop_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("prop")
    s = Store(d / "store.db")
    yield s, d
    s.close()


def _check_import(store: Store, path: Path) -> None:
    from gpuplan.catalog.imports import import_offers

    before = store.counts()
    try:
        snap = import_offers(store, path, "prop")
    except UsageError as e:
        msg = str(e)
        assert msg and "\n" not in msg and len(msg) < 400
        assert store.counts() == before  # nothing half-written
        return
    after = store.counts()
    assert snap.rows_added >= 1
    assert after["offers"] == before["offers"] + snap.rows_added and after["complete"] == before["complete"] + 1
    for o in store.snapshot_offers(snap.id):
        Offer.model_validate(o.model_dump())  # every stored row is a fully valid Offer
        assert o.confidence == "user" and o.price_per_hour_usd > 0


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(text=csv_files())
def test_property_random_csv(prop_store, text):
    store, d = prop_store
    p = d / "offers.csv"
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    _check_import(store, p)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(doc=_yaml_docs, raw=st.booleans(), junk=st.text(max_size=40))
def test_property_random_yaml(prop_store, doc, raw, junk):
    import yaml

    store, d = prop_store
    p = d / "offers.yaml"
    try:
        text = junk if raw else yaml.safe_dump(doc)
        p.write_text(text, encoding="utf-8")
    except (UnicodeEncodeError, yaml.YAMLError):
        return
    _check_import(store, p)


def test_valid_rows_always_import(prop_store):
    store, d = prop_store
    p = d / "good.yaml"
    p.write_text("offers:\n  - {provider: lab, instance_type: rack-1, gpu: a100-80gb, gpus_per_node: 8, "
                 "pricing: reserved, price_per_hour_usd: 9.6, commitment_term_h: 8760, as_of: 2026-02-01}\n")
    _check_import(store, p)
    o = store.snapshot_offers(store.latest_complete()["user:prop"])[0]
    assert (o.gpu, o.price_per_gpu_hour_usd, o.commitment_term_h, o.as_of) == ("A100-80GB-SXM", 1.2, 8760.0,
                                                                              dt.date(2026, 2, 1))


def test_private_cluster_import_plans_with_its_own_size_and_fabric(cli, tmp_path, db):
    """The README's use case: a private provider known only from an import works in planning, and
    a cluster of N nodes is N nodes, on the fabric the file states."""
    f = write(tmp_path, "mine.csv", HEADER + ",cluster,fabric_gbps_per_node,max_nodes,interconnect\n"
              "mycluster,8xH100,H100,8,us,reserved,16,yes,3200,4,infiniband\n")
    code, out, err = cli("catalog", "import", str(f), "--name", "mine", "--db", db)
    assert code == 0, err
    code, out, err = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e11", "--providers", "mycluster",
                         "--json", "--db", db)
    assert code == 0, err
    plans = json.loads(out)["plans"]
    assert plans and all(p["provider"] == "mycluster" and p["nodes"] <= 4 for p in plans)
    assert plans[0]["assumptions"]["fabric_gbps_per_node"] == 3200
    assert plans[0]["assumptions"]["fabric_basis"] == "known"
    # a one-node private box is never clustered
    code, out, err = cli("plan", "serve", "--model", "llama-3.1-8b", "--requests-per-s", "1", "--providers",
                         "mycluster", "--json", "--db", db)
    assert code == 0, err
    assert json.loads(out)["plans"][0]["provider_name"] == "mycluster"


@pytest.mark.parametrize("cell, message", [("maybe", "not yes or no"), ("", None)])
def test_cluster_column_is_yes_or_no(cli, tmp_path, db, cell, message):
    f = write(tmp_path, "c.csv", HEADER + ",cluster\nmine,8xH100,H100,8,us,on_demand,16," + cell + "\n")
    code, out, err = cli("catalog", "import", str(f), "--db", db)
    if message:
        assert code != 0 and message in err and "Traceback" not in err
    else:
        assert code == 0, err


def test_yaml_plain_scalars_stay_text_where_columns_are_text(tmp_path):
    """The YAML 1.1 'Norway problem': `no` is the text "no" in text columns; only `cluster` reads yes/no."""
    f = write(tmp_path, "n.yaml", "- provider: no\n  instance_type: 1.10\n  gpu: H100\n  gpus_per_node: 8\n"
                                  "  pricing: on_demand\n  price_per_hour_usd: 16\n  region: NO\n  interconnect: off\n"
                                  "  cluster: yes\n  as_of: 2026-01-02\n")
    (o,) = parse_offers_file(f)
    assert (o.provider, o.instance_type, o.region, o.interconnect) == ("no", "1.10", "NO", "off")
    assert o.cluster is True and o.as_of == dt.date(2026, 1, 2) and o.gpus_per_node == 8


def test_csv_export_escapes_formula_cells_and_reimports_them(tmp_path):
    rows = [Offer(provider="=cmd", instance_type="+1+2", gpu="H100-SXM", gpus_per_node=1, region="@SUM(A1)",
                  pricing="on_demand", price_per_hour_usd=2.0, price_per_gpu_hour_usd=2.0, as_of=dt.date(2026, 1, 2),
                  as_of_note="-note", source="'=quoted", confidence="user")]
    text = render_offers(rows, "csv")
    body = text.splitlines()[1]
    assert body.startswith("'=cmd,'+1+2,H100-SXM,1,'@SUM(A1),on_demand,2,2,")
    assert "'-note" in body and "''=quoted" in body
    f = write(tmp_path, "back.csv", text)
    (o,) = parse_offers_file(f)
    assert (o.provider, o.instance_type, o.region, o.as_of_note, o.source) == ("=cmd", "+1+2", "@SUM(A1)", "-note",
                                                                               "'=quoted")


def test_credentials_in_an_imported_source_are_not_stored_or_shown(cli, tmp_path, db):
    f = write(tmp_path, "cred.csv", "provider,instance_type,gpu,gpus_per_node,region,pricing,price_per_hour_usd,"
              "as_of,source\ncredcloud,x1,H100-SXM,8,us-east,on_demand,16,2026-11-01,"
              "https://user:S3CRETPASS@example.com/p?api_key=TOPSECRET123&page=2\n")
    code, _, err = cli("catalog", "import", str(f), "--db", db)
    assert code == 0, err
    code, out, _ = cli("offers", "--provider", "credcloud", "--json", "--db", db)
    assert code == 0 and "example.com/p?api_key=***&page=2" in out
    with Store(db) as s:
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = Path(db).read_bytes()
    assert b"S3CRETPASS" not in data and b"TOPSECRET123" not in data and "S3CRETPASS" not in out
