"""Fault injection through the CLI: HTTP 500, timeouts, malformed JSON, wrong shapes, empty and
huge answers. In every case the previous snapshot stays current and the command says what
failed. Also: API keys never appear in output, errors or the store."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "sources"))
from fake_server import FakeServer, Reply, file_reply, json_reply, serve_all  # noqa: E402

SECRET = "sk-SECRET-7f3a9c51e0"


@pytest.fixture(scope="module")
def server():
    s = FakeServer()
    env = serve_all(s)
    yield s, env
    s.close()


@pytest.fixture
def env(server, monkeypatch, tmp_path):
    s, urls = server
    serve_all(s)  # reset routes a previous test replaced
    for k, v in urls.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # a developer's proxy must not intercept
    monkeypatch.setenv("GPUPLAN_HTTP_TIMEOUT_S", "0.25")
    monkeypatch.setenv("GPUPLAN_HTTP_RETRIES", "1")
    monkeypatch.setenv("GPUPLAN_HTTP_BACKOFF_S", "0.001")
    monkeypatch.setenv("GPUPLAN_HTTP_MAX_BYTES", str(256 * 1024))
    monkeypatch.delenv("LAMBDA_API_KEY", raising=False)
    monkeypatch.setenv("GPUPLAN_CONFIG", str(tmp_path / "no-config.toml"))
    return s, str(tmp_path / "store.db")


def current_of(db: str, source: str):
    from gpuplan.catalog.store import Store

    with Store(db) as st:
        sid = st.latest_complete().get(source)
        return sid, [o.model_dump() for o in st.snapshot_offers(sid)] if sid else []


FAULTS = {
    "http_500": (Reply(500, b"internal error"), "HTTP 500"),
    "timeout": (Reply(200, b'{"offers": []}', delay_s=0.8), "timed out"),
    "malformed_json": (Reply(200, b'{"offers": [ {"id": 1,'), "malformed JSON"),
    "wrong_shape_offers_object": (json_reply({"offers": {"id": 1}}), "unexpected answer shape"),
    "wrong_shape_top_list": (json_reply([1, 2, 3]), "should be an object"),
    "missing_key": (json_reply({"results": []}), "has no 'offers'"),
    "empty_body": (Reply(200, b""), "empty answer"),
    "empty_offers": (json_reply({"offers": []}), "no valid offers"),
    "all_rows_invalid": (json_reply({"offers": [{"gpu_name": "Nope 9000", "num_gpus": 1, "dph_base": 1}]}),
                         "all skipped"),
    "huge_declared": (Reply(200, b"{}", declared_length=10**10), "cap; refused"),
    "huge_streamed": (Reply(200, stream_bytes=2 * 2**20), "cap; refused"),
    "http_404": (Reply(404, b"nope"), "HTTP 404"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_keeps_previous_snapshot(env, cli, fault):
    s, db = env
    code, out, err = cli("catalog", "refresh", "--source", "vast", "--db", db)
    assert code == 0, err
    before = current_of(db, "vast")
    assert len(before[1]) == 11

    reply, message = FAULTS[fault]
    s.set("POST", "/api/v0/bundles/", reply)
    code, out, err = cli("catalog", "refresh", "--source", "vast", "--db", db)
    assert code == 1
    assert message in out + err, out + err
    assert "no source refreshed" in err
    assert current_of(db, "vast") == before  # same snapshot id, same offers

    code, out, _ = cli("catalog", "status", "--db", db, "--json")
    row = next(r for r in json.loads(out)["sources"] if r["source"] == "vast")
    assert row["last_status"] == "failed" and message in row["last_error"] and row["offers"] == 11


def test_retry_after_429_then_success(env, cli):
    s, db = env
    good = file_reply("vast_bundles.json")
    s.set("POST", "/api/v0/bundles/", [Reply(429, b"slow down", {"Retry-After": "0"}), Reply(503, b""), good])
    from gpuplan.catalog.sources.http import HttpSettings, make_client
    from gpuplan.catalog.sources.vast import VastSource

    with make_client(HttpSettings(timeout_s=1, retries=2, backoff_s=0.001)) as client:
        r = VastSource().fetch(client)
    assert len(r.offers) == 11
    assert len([q for q in s.requests if q["path"] == "/api/v0/bundles/"][-3:]) == 3


def test_azure_failure_on_page_two_keeps_everything(env, cli):
    s, db = env
    assert cli("catalog", "refresh", "--source", "azure", "--db", db)[0] == 0
    before = current_of(db, "azure")

    def fail_page_two(req):
        return Reply(500) if "skip=1000" in req["query"] else file_reply("azure_page1.json")
    s.set("GET", "/api/retail/prices", fail_page_two)
    code, out, err = cli("catalog", "refresh", "--source", "azure", "--db", db)
    assert code == 1 and "HTTP 500" in out
    assert current_of(db, "azure") == before  # page 1 alone never replaces the full answer


def test_next_page_link_to_other_host_refused(env, cli):
    s, db = env
    s.set("GET", "/api/retail/prices", json_reply({"Items": [], "NextPageLink": "http://evil.example/x"}))
    code, out, err = cli("catalog", "refresh", "--source", "azure", "--db", db)
    assert code == 1 and "another host" in out


def test_pagination_loop_is_an_error(env, cli):
    s, db = env
    s.set("GET", "/v2/plans", json_reply({"plans": [], "meta": {"links": {"next": "same"}}}))
    code, out, _ = cli("catalog", "refresh", "--source", "vultr", "--db", db)
    assert code == 1 and "pagination loops" in out


def test_one_source_failing_does_not_stop_others(env, cli):
    s, db = env
    s.set("POST", "/graphql", json_reply({"errors": [{"message": "rate limited"}]}))
    code, out, err = cli("catalog", "refresh", "--source", "runpod", "--source", "vast", "--db", db)
    assert code == 0  # one source succeeded
    assert "rate limited" in out and "ok" in out


def test_bad_zip_and_bad_csv(env, cli):
    s, db = env
    s.set("GET", "/hunt/aws/20261120-1532/catalog.zip", Reply(200, b"PK\x03\x04 not really a zip"))
    code, out, _ = cli("catalog", "refresh", "--source", "gpuhunt:aws", "--db", db)
    assert code == 1 and "not a readable zip" in out
    s.set("GET", "/sky/v8/gcp/vms.csv", Reply(200, b"foo,bar\n1,2\n"))
    code, out, _ = cli("catalog", "refresh", "--source", "skypilot:gcp", "--db", db)
    assert code == 1 and "lacks column" in out


def test_shrinking_answer_needs_force(env, cli):
    s, db = env
    rows = json.loads((Path(__file__).parent / "fixtures/sources/vast_bundles.json").read_text())["offers"][0]
    many = [dict(rows, machine_id=i, id=i) for i in range(40)]
    s.set("POST", "/api/v0/bundles/", json_reply({"offers": many}))
    assert cli("catalog", "refresh", "--source", "vast", "--db", db)[0] == 0
    s.set("POST", "/api/v0/bundles/", json_reply({"offers": many[:3]}))
    code, out, _ = cli("catalog", "refresh", "--source", "vast", "--db", db)
    assert code == 1 and "shrank from 80 to 6" in out
    assert cli("catalog", "refresh", "--source", "vast", "--db", db, "--force")[0] == 0
    assert len(current_of(db, "vast")[1]) == 6


# ---- secrets -----------------------------------------------------------------------------------
def _store_bytes(db: str) -> bytes:
    return b"".join(p.read_bytes() for p in Path(db).parent.glob(Path(db).name + "*"))


@pytest.mark.parametrize("reply", [
    Reply(500, f"boom {SECRET}".encode()),
    Reply(401, f'{{"error": "bad key {SECRET}"}}'.encode()),
    Reply(200, f'{{"data": {{"x": "{SECRET}"'.encode()),
    Reply(200, json.dumps({"data": [SECRET]}).encode()),
])
def test_key_never_leaks(env, cli, monkeypatch, reply):
    s, db = env
    monkeypatch.setenv("LAMBDA_API_KEY", SECRET)
    s.set("GET", "/api/v1/instance-types", reply)
    code, out, err = cli("catalog", "refresh", "--source", "lambda", "--db", db)
    assert code == 1
    assert SECRET not in out + err
    code, out2, err2 = cli("catalog", "status", "--db", db, "--json")
    assert SECRET not in out2 + err2 and "lambda" in out2
    assert SECRET.encode() not in _store_bytes(db)
    from gpuplan.catalog.sources import SourceError
    from gpuplan.catalog.sources.http import HttpSettings, make_client
    from gpuplan.catalog.sources.lambdalabs import LambdaSource

    with make_client(HttpSettings(timeout_s=1, retries=0)) as client, pytest.raises(SourceError) as ei:
        LambdaSource().fetch(client)
    assert SECRET not in str(ei.value) and SECRET not in repr(ei.value)


def test_key_from_config_file_used_and_not_printed(env, cli, monkeypatch, tmp_path):
    s, db = env
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[keys]\nlambda_api_key = "{SECRET}"\n')
    monkeypatch.setenv("GPUPLAN_CONFIG", str(cfg))
    code, out, err = cli("catalog", "refresh", "--source", "lambda", "--db", db)
    assert code == 0 and SECRET not in out + err
    req = [q for q in s.requests if q["path"] == "/api/v1/instance-types"][-1]
    assert SECRET in {k.lower(): v for k, v in req["headers"].items()}["authorization"]
    code, out, err = cli("catalog", "export", "--db", db)
    assert code == 0 and SECRET not in out + err and "gpu_8x_h100_sxm5" in out
    assert SECRET.encode() not in _store_bytes(db)


def test_broken_config_file_error_does_not_echo_it(env, cli, monkeypatch, tmp_path):
    s, db = env
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[keys]\nLAMBDA_API_KEY = "{SECRET}\n')  # unterminated string
    monkeypatch.setenv("GPUPLAN_CONFIG", str(cfg))
    code, out, err = cli("catalog", "refresh", "--source", "lambda", "--db", db)
    assert code == 2 and "not valid TOML" in err and SECRET not in out + err


def test_a_yaml_config_repeating_a_key_is_refused_without_echoing_it(env, cli, monkeypatch, tmp_path):
    s, db = env
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"keys:\n  LAMBDA_API_KEY: {SECRET}\n  LAMBDA_API_KEY: other\n")  # which one wins?
    monkeypatch.setenv("GPUPLAN_CONFIG", str(cfg))
    code, out, err = cli("catalog", "refresh", "--source", "lambda", "--db", db)
    assert code == 2 and "not valid YAML" in err and SECRET not in out + err


def test_missing_key_skips_with_reason(env, cli):
    s, db = env
    code, out, err = cli("catalog", "refresh", "--source", "lambda", "--db", db)
    assert code == 1 and "no API key (set LAMBDA_API_KEY)" in out


def test_redact_replaces_known_secrets(monkeypatch):
    from gpuplan.catalog.secrets import get_secret, redact

    monkeypatch.setenv("SOME_API_KEY", SECRET)
    assert get_secret("SOME_API_KEY") == SECRET
    assert redact(f"failed with {SECRET} inside") == "failed with *** inside"
