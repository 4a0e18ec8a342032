"""The HTTP API (gpuplan.web.app) through FastAPI's TestClient, and `gpuplan web`'s settings.

Plan requests are kept small (llama-3.1-8b, 1e10 tokens, limit 5) so the module runs in seconds.
"""
from __future__ import annotations

import json
import math

import pytest
import yaml
from fastapi.testclient import TestClient

from gpuplan.web import app as web_app
from gpuplan.web.app import MAX_BODY_BYTES, PLAN_CACHE_SIZE, create_app

TRAIN = {"model": "llama-3.1-8b", "tokens": 1e10, "limit": 5}
SERVE = {"model": "llama-3.1-8b", "requests_per_s": 5, "limit": 5}
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@pytest.fixture(scope="module")
def app():
    return create_app()


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app) as c:
        yield c


def _one_line_detail(r, status: int) -> str:
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and detail.strip()
    assert "\n" not in detail and "\r" not in detail
    return detail


# ---- lists ------------------------------------------------------------------------------------

def test_health_counts_match_the_lists(client):
    h = client.get("/api/health").json()
    assert h["status"] == "ok"
    assert h["catalog"] == "bundled"  # conftest isolates the user store
    assert h["offers"] > 100
    assert h["providers"] == len(client.get("/api/providers").json())
    assert h["gpus"] == len(client.get("/api/gpus").json())
    assert client.get("/api/offers", params={"limit": 1}).json()["count"] == h["offers"]


def test_models_list_the_presets(client):
    rows = client.get("/api/models").json()
    by_id = {r["id"]: r for r in rows}
    assert len(by_id) == len(rows) > 10
    llama = by_id["llama-3.1-8b"]
    assert 7.9e9 < llama["params"] < 8.1e9
    assert llama["active_params"] == llama["params"] and llama["moe"] is False
    assert any(r["moe"] and r["active_params"] < r["params"] for r in rows)


def test_gpus_and_providers(client):
    gpus = {g["id"]: g for g in client.get("/api/gpus").json()}
    assert gpus["H100-SXM"]["memory_gb"] == 80
    assert gpus["H100-SXM"]["vendor"] == "NVIDIA"
    providers = client.get("/api/providers").json()
    ids = [p["id"] for p in providers]
    assert len(ids) == len(set(ids)) and "aws" in ids
    aws = next(p for p in providers if p["id"] == "aws")
    assert aws["name"] == "AWS" and aws["kind"] == "hyperscaler"


def test_offers_filter_sort_and_limit(client):
    data = client.get("/api/offers", params={"gpu": "H100-SXM", "limit": 5}).json()
    assert data["returned"] == len(data["offers"]) == 5
    assert data["count"] > 5
    prices = [o["price_per_gpu_hour_usd"] for o in data["offers"]]
    assert prices == sorted(prices)
    for o in data["offers"]:
        assert o["gpu"] == "H100-SXM"
        assert {"provider_name", "provider_kind", "age_days", "stale", "as_of", "confidence"} <= o.keys()
    family = client.get("/api/offers", params={"gpu": "H100", "limit": 1000}).json()
    assert {"H100-SXM", "H100-PCIe"} <= {o["gpu"] for o in family["offers"]}
    aws = client.get("/api/offers", params={"provider": "aws", "limit": 1000}).json()
    assert aws["count"] > 0 and {o["provider"] for o in aws["offers"]} == {"aws"}


@pytest.mark.parametrize("params", [{"limit": 1001}, {"limit": 0}, {"min_confidence": "sure"}, {"sort": "random"},
                                    {"max_price": -1}])
def test_offers_bad_query_is_422(client, params):
    detail = _one_line_detail(client.get("/api/offers", params=params), 422)
    assert next(iter(params)) in detail


# ---- estimates ---------------------------------------------------------------------------------

def test_estimate_train(client):
    r = client.post("/api/estimate/train", json={"model": "llama-3.1-8b", "gpu": "H100", "tokens": 1e10})
    assert r.status_code == 200, r.text
    est = r.json()
    assert est["gpu"] == "H100-SXM" and est["tokens"] == 1e10
    assert est["gpu_hours"] > 0 and est["wall_hours"] > 0 and 0 < est["mfu"] < 1
    assert math.isclose(est["wall_hours"] * est["n_gpus"], est["gpu_hours"], rel_tol=0.05)


def test_estimate_serve(client):
    r = client.post("/api/estimate/serve", json={"model": "llama-3.1-8b", "gpu": "H100-SXM", "output_len": 200})
    assert r.status_code == 200, r.text
    est = r.json()
    assert est["fits"] is True and est["gpu"] == "H100-SXM" and est["output_len"] == 200
    assert est["output_tokens_per_s"] > 0 and est["tpot_ms"] > 0 and est["ttft_ms"] > 0


def test_estimate_serve_takes_the_engine_sequence_cap(client):
    body = {"model": "llama-3.1-8b", "gpu": "A100-80GB-SXM", "input_len": 500, "output_len": 500}
    default = client.post("/api/estimate/serve", json=body).json()
    wider = client.post("/api/estimate/serve", json={**body, "max_num_seqs": 1024}).json()
    assert default["assumptions"]["max_num_seqs"] == 256 and wider["assumptions"]["max_num_seqs"] == 1024
    assert wider["max_concurrency"] > default["max_concurrency"] == 256
    assert "max_num_seqs" in _one_line_detail(client.post("/api/estimate/serve", json={**body, "max_num_seqs": 0}), 422)


def test_estimate_from_params(client):
    r = client.post("/api/estimate/train", json={"params": 7e9, "gpu": "A100-80GB-SXM", "tokens": 1e10})
    assert r.status_code == 200, r.text
    assert r.json()["gpu"] == "A100-80GB-SXM"


# ---- plans -------------------------------------------------------------------------------------

def test_plan_train(client):
    r = client.post("/api/plan/train", json=TRAIN)
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["workload"] == "train" and res["model"] == "llama-3.1-8b"
    assert res["summary"]["tokens"] == 1e10
    plans = res["plans"]
    assert 0 < len(plans) <= 5
    assert [p["rank"] for p in plans] == list(range(1, len(plans) + 1))
    assert set(res["pareto_ranks"]) <= {p["rank"] for p in plans} and 1 in res["pareto_ranks"]
    assert res["why"] and all(isinstance(w, str) for w in res["why"])
    for p in plans:
        parts = p["cost"]
        assert math.isclose(sum(parts.values()), p["cost_usd"], rel_tol=1e-6)
        assert p["gpus"] == p["nodes"] * p["gpus_per_node"]
        assert p["wall_hours"] > 0 and 0 <= p["risk"] <= 1
        assert p["offer"]["gpu"] == p["gpu"] and p["offer"]["provider"] == p["provider"]


def test_plan_train_constraints_are_applied(client):
    body = {**TRAIN, "constraints": {"gpus": ["H100-SXM"], "exclude": ["nebius"], "no_spot": True}}
    res = client.post("/api/plan/train", json=body).json()
    assert res["plans"]
    for p in res["plans"]:
        assert p["gpu"] == "H100-SXM" and p["provider"] != "nebius" and p["pricing"] != "spot"
    res = client.post("/api/plan/train", json={**TRAIN, "constraints": {"budget_usd": 1}}).json()
    assert res["plans"] == [] and res["pareto_ranks"] == []
    assert any("budget" in reason for reason in res["rejected"])


def test_plan_serve(client):
    r = client.post("/api/plan/serve", json={**SERVE, "users": ["eu"]})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["workload"] == "serve" and res["summary"]["average_requests_per_s"] == 5
    assert 0 < len(res["plans"]) <= 5
    for p in res["plans"]:
        assert p["replicas"] >= 1 and p["cost_per_million_output_tokens_usd"] > 0
        assert p["assumptions"]["tpot_ms"] > 0
        assert p["network_rtt_ms"] is not None  # users given: every plan has a round trip


def test_plan_serve_tokens_per_month(client):
    res = client.post("/api/plan/serve", json={"model": "llama-3.1-8b", "tokens_per_month": 5e9, "limit": 3}).json()
    assert res["summary"]["average_requests_per_s"] == pytest.approx(5e9 / 1250 / (730 * 3600))


def test_plan_project(client):
    r = client.post("/api/plan/project", json={"train": TRAIN, "serve": SERVE})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["train"]["workload"] == "train" and res["serve"]["workload"] == "serve"
    assert res["total_usd"] == pytest.approx(res["train"]["plans"][0]["cost_usd"] + res["serve"]["plans"][0]["cost_usd"])
    assert isinstance(res["feasible"], bool) and res["notes"]


def test_plan_cache_answers_the_same_request(app, client, monkeypatch):
    import gpuplan.planner as planner

    calls = []
    real = planner.plan_training

    def counting(body, catalog):
        calls.append(body.tokens)
        return real(body, catalog)

    monkeypatch.setattr(planner, "plan_training", counting)
    body = {**TRAIN, "tokens": 1.234e10}
    first = client.post("/api/plan/train", json=body)
    second = client.post("/api/plan/train", json=body)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert calls == [1.234e10]
    client.post("/api/plan/train", json={**body, "tokens": 1.235e10})
    assert calls == [1.234e10, 1.235e10]
    state = app.state.gpuplan
    assert len(state._plans) <= PLAN_CACHE_SIZE


def test_plan_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(web_app, "PLAN_CACHE_SIZE", 2)
    app = create_app()
    with TestClient(app) as c:
        for tokens in (1e9, 2e9, 3e9):
            assert c.post("/api/plan/train", json={**TRAIN, "tokens": tokens, "limit": 1}).status_code == 200
    keys = list(app.state.gpuplan._plans)
    assert len(keys) == 2
    assert all('"tokens":1000000000.0' not in k for k in keys)  # the oldest went first


# ---- exports -----------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["skypilot", "dstack", "k8s"])
@pytest.mark.parametrize("kind", ["train", "serve"])
def test_export_is_yaml_naming_the_accelerator(client, target, kind):
    from gpuplan.export.common import supported_targets

    request = TRAIN if kind == "train" else SERVE
    plans = client.post(f"/api/plan/{kind}", json=request).json()["plans"]
    # a plan past #1 that the target can provision (unsupported providers: a clear 400, tested elsewhere)
    rank = next(i for i, p in enumerate(plans, 1)
                if i >= 2 and target in supported_targets(p["provider"], kind == "train" and (p.get("nodes") or 1) > 1))
    plan = plans[rank - 1]
    r = client.post(f"/api/export/{target}", json={kind: request, "rank": rank})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/yaml")
    assert f"rank{rank}.{target}.yaml" in r.headers["content-disposition"]
    docs = [d for d in yaml.safe_load_all(r.text) if d is not None]
    assert docs and all(isinstance(d, dict) for d in docs)
    assert f"plan rank {rank} ({kind}" in r.text
    accelerator = plan["gpu"].split("-")[0]  # e.g. H100 in H100:8, MI300X as is
    assert accelerator in r.text
    assert plan["provider_name"] in r.text


def test_export_unknown_rank_and_bad_bodies(client):
    detail = _one_line_detail(client.post("/api/export/skypilot", json={"train": TRAIN, "rank": 6}), 400)
    assert "rank" in detail and "1..5" in detail
    detail = _one_line_detail(client.post("/api/export/skypilot", json={"rank": 1}), 422)
    assert "exactly one of train or serve" in detail
    _one_line_detail(client.post("/api/export/slurm", json={"train": TRAIN}), 422)


# ---- economics ---------------------------------------------------------------------------------

def test_tco(client):
    r = client.post("/api/tco", json={"final_run_usd": 10000})
    assert r.status_code == 200, r.text
    res = r.json()
    final = next(line for line in res["lines"] if line["key"] == "final_run")
    assert final["usd"] == 10000
    assert res["total_usd"] == pytest.approx(sum(line["usd"] for line in res["lines"]))
    assert res["total_usd"] > 10000 and "chart" in res


def test_size(client):
    r = client.post("/api/size", json={"compute": 1e22})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["training_flops"] == pytest.approx(1e22)
    assert res["params"] > 0 and res["tokens"] > 0
    assert res["params"] * res["tokens"] * 6 == pytest.approx(1e22, rel=0.05)
    assert res["thresholds_exceeded"] == []
    big = client.post("/api/size", json={"compute": 1e24}).json()
    assert big["params"] > res["params"]
    assert "eu-ai-act-gpai-indicative" in {t["id"] for t in big["thresholds_exceeded"]}
    _one_line_detail(client.post("/api/size", json={"compute": 1e23, "loss": 2.0}), 422)


def test_breakeven(client):
    r = client.post("/api/breakeven", json={"model": "llama-3.1-8b", "tokens_per_month": 1e9})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["model"] == "llama-3.1-8b" and res["tokens_per_month"] == 1e9
    assert res["self_host_usd_per_month"] > 0 and res["api_usd_per_month"] > 0
    assert res["price_source"].startswith("median of")
    r = client.post("/api/breakeven", json={"model": "llama-3.1-8b", "tokens_per_month": 1e9, "price_per_gpu_hour": 2.5})
    assert r.json()["price_per_gpu_hour_usd"] == 2.5 and r.json()["price_source"] == "given"


# ---- invalid input -----------------------------------------------------------------------------

@pytest.mark.parametrize("body, field", [
    ({**TRAIN, "tokens": -1}, "tokens"),
    ({**TRAIN, "tokens": 0}, "tokens"),
    ({**TRAIN, "unknown_field": 1}, "unknown_field"),
    ({**TRAIN, "limit": 201}, "limit"),
    ({**TRAIN, "constraints": {"max_gpus": 10**6}}, "constraints.max_gpus"),
    ({**TRAIN, "constraints": {"exclude": ["x"] * 65}}, "constraints.exclude"),
    ({**TRAIN, "method": "magic"}, "method"),
    ({"tokens": 1e10}, "give exactly one of model or params"),
])
def test_plan_train_invalid_is_422_one_line(client, body, field):
    r = client.post("/api/plan/train", json=body)
    detail = _one_line_detail(r, 422)
    assert field in detail
    assert r.json()["errors"] and r.json()["errors"][0]["msg"]


@pytest.mark.parametrize("raw", [b'{"model": "llama-3.1-8b", "tokens": NaN}', b'{"model": "llama-3.1-8b", "tokens": Infinity}',
                                 b'{"model": "llama-3.1-8b", "tokens": 1e10, "constraints": {"budget_usd": NaN}}'])
def test_non_finite_numbers_are_422(client, raw):
    r = client.post("/api/plan/train", content=raw, headers={"content-type": "application/json"})
    assert "finite" in _one_line_detail(r, 422)


def test_malformed_json_is_422(client):
    r = client.post("/api/plan/train", content=b'{"model": ', headers={"content-type": "application/json"})
    _one_line_detail(r, 422)


def test_serve_needs_exactly_one_traffic_figure(client):
    detail = _one_line_detail(client.post("/api/plan/serve", json={"model": "llama-3.1-8b"}), 422)
    assert "requests_per_s" in detail and "tokens_per_month" in detail


@pytest.mark.parametrize("path, body, needle", [
    ("/api/plan/train", {**TRAIN, "model": "llama-9-zillion"}, "unknown model 'llama-9-zillion'"),
    ("/api/plan/serve", {**SERVE, "model": "llama-9-zillion"}, "unknown model 'llama-9-zillion'"),
    ("/api/plan/train", {**TRAIN, "constraints": {"gpus": ["NOPE-9000"]}}, "unknown GPU 'NOPE-9000'"),
    ("/api/estimate/train", {"model": "llama-3.1-8b", "gpu": "NOPE-9000", "tokens": 1e10}, "unknown GPU 'NOPE-9000'"),
    ("/api/estimate/serve", {"model": "llama-3.1-8b", "gpu": "NOPE-9000"}, "unknown GPU 'NOPE-9000'"),
    ("/api/breakeven", {"model": "llama-3.1-8b", "tokens_per_month": 1e9, "gpu": "NOPE-9000"}, "unknown GPU 'NOPE-9000'"),
])
def test_unknown_names_are_400_naming_the_problem(client, path, body, needle):
    assert needle in _one_line_detail(client.post(path, json=body), 400)


def test_body_over_the_limit_is_413(client):
    big = json.dumps({**TRAIN, "padding": "x" * (MAX_BODY_BYTES + 10)}).encode()
    detail = _one_line_detail(client.post("/api/plan/train", content=big, headers={"content-type": "application/json"}), 413)
    assert str(MAX_BODY_BYTES) in detail


def test_streamed_body_over_the_limit_is_413():
    app = create_app(max_body_bytes=100)

    def chunks():
        for _ in range(10):
            yield b"x" * 50

    with TestClient(app) as c:
        r = c.post("/api/plan/train", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "100 bytes" in r.json()["detail"]


def test_model_paths_are_never_read(client, tmp_path, monkeypatch):
    """A model given as a path is refused as an unknown preset; no config loader is reached."""
    import gpuplan.models as models
    import gpuplan.models.hf_config as hf_config

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
                               "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000}))
    touched = []
    monkeypatch.setattr(hf_config, "load_config", lambda *a, **k: touched.append(a) or pytest.fail("read a config"))
    monkeypatch.setattr(models, "model_from_config", lambda *a, **k: touched.append(a) or pytest.fail("read a config"))
    for name in ("/etc/passwd", "../config.json", str(cfg), str(tmp_path), "~/.ssh/id_rsa"):
        for path, body in [
            ("/api/plan/train", {**TRAIN, "model": name}),
            ("/api/plan/serve", {**SERVE, "model": name}),
            ("/api/estimate/train", {"model": name, "gpu": "H100", "tokens": 1e10}),
            ("/api/estimate/serve", {"model": name, "gpu": "H100"}),
            ("/api/breakeven", {"model": name, "tokens_per_month": 1e9}),
            ("/api/export/skypilot", {"train": {**TRAIN, "model": name}}),
            ("/api/plan/project", {"train": TRAIN, "serve": {**SERVE, "model": name}}),
        ]:
            r = client.post(path, json=body)
            detail = _one_line_detail(r, 400)
            assert detail.startswith("unknown model"), (path, detail)
            assert "root:" not in r.text
    assert touched == []


# ---- the page, hosts, headers ------------------------------------------------------------------

def test_page_is_served_with_a_strict_csp(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "style-src 'self'" in csp and "'unsafe-inline'" not in csp
    assert "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert '<script src="/static/app.js"' in r.text and 'data-testid="plan-table"' in r.text
    assert "<style" not in r.text and "onclick" not in r.text.lower()


def test_static_assets_are_served(client):
    js = client.get("/static/app.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert "/api/plan/" in js.text
    assert "innerHTML" not in js.text and "eval(" not in js.text  # text is never parsed as HTML or code
    assert "content-security-policy" in js.headers
    css = client.get("/static/app.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert client.get("/static/../app.py").status_code == 404


def test_api_answers_have_no_page_csp_but_nosniff(client):
    r = client.get("/api/health")
    assert "content-security-policy" not in r.headers
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("host, ok", [
    ("127.0.0.1:8000", True), ("localhost:8000", True), ("[::1]:8000", True), ("LOCALHOST", True),
    ("evil.example", False), ("evil.example:8000", False), ("127.0.0.1.evil.example", False), ("", False),
])
def test_foreign_host_header_is_refused_on_loopback(host, ok):
    with TestClient(create_app(allowed_hosts=LOOPBACK)) as c:
        r = c.get("/api/health", headers={"host": host})
    if ok:
        assert r.status_code == 200 and r.json()["status"] == "ok"
    else:
        assert "Host" in _one_line_detail(r, 400)


def test_any_host_is_answered_without_allowed_hosts(client):
    assert client.get("/api/health", headers={"host": "planner.internal:9000"}).status_code == 200


def test_openapi_lists_the_endpoints(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    for p in ["/api/health", "/api/models", "/api/gpus", "/api/providers", "/api/offers"]:
        assert "get" in paths[p], p
    for p in ["/api/estimate/train", "/api/estimate/serve", "/api/plan/train", "/api/plan/serve", "/api/plan/project",
              "/api/export/{target}", "/api/tco", "/api/size", "/api/breakeven"]:
        assert "post" in paths[p], p
    assert "/" not in paths  # the page is not an API endpoint
    plan = paths["/api/plan/train"]["post"]["responses"]
    assert {"200", "400", "413", "422"} <= set(plan)
    assert "TrainPlanBody" in spec["components"]["schemas"]


# ---- `gpuplan web` settings --------------------------------------------------------------------

def test_server_config_defaults_to_loopback():
    from gpuplan.cli.cmd_web import DEFAULT_PORT, server_config

    cfg = server_config()
    assert cfg.host == "127.0.0.1" and cfg.port == DEFAULT_PORT == 8000
    assert cfg.loopback is True and cfg.db is None
    assert set(cfg.allowed_hosts) == {"127.0.0.1", "localhost", "::1"}
    assert cfg.url == "http://127.0.0.1:8000/"


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.0.0.5", True), ("localhost", True), ("LOCALHOST", True), ("::1", True), ("[::1]", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.10", False), ("10.0.0.1", False), ("example.com", False),
    ("localhost.example.com", False),
])
def test_loopback_detection(host, loopback):
    from gpuplan.cli.cmd_web import is_loopback, server_config

    assert is_loopback(host) is loopback
    cfg = server_config(host, 8080)
    assert cfg.loopback is loopback
    if loopback:
        assert "127.0.0.1" in cfg.allowed_hosts and host.strip("[]").lower() in cfg.allowed_hosts
    else:
        assert cfg.allowed_hosts is None


def test_server_config_ipv6_url_and_db():
    from gpuplan.cli.cmd_web import server_config

    cfg = server_config("::1", 9000, "/tmp/x.db")
    assert cfg.url == "http://[::1]:9000/" and cfg.db == "/tmp/x.db"


@pytest.mark.parametrize("host, port, needle", [("127.0.0.1", 0, "--port"), ("127.0.0.1", 65536, "--port"),
                                                ("127.0.0.1", -1, "--port"), ("", 8000, "--host"), ("   ", 8000, "--host")])
def test_server_config_bad_values_are_usage_errors(host, port, needle):
    from gpuplan.cli.cmd_web import server_config
    from gpuplan.errors import UsageError

    with pytest.raises(UsageError, match=needle):
        server_config(host, port)
