"""The HTTP API and the page: `create_app(db_path)` returns a FastAPI app mirroring the CLI.

Presentation only: every number comes from the library (catalog, perf, planner, economics,
export). The catalog is loaded once per app; plan results are kept in a small LRU so an
export of a plan just shown costs nothing. Endpoints are plain `def` so FastAPI runs the
CPU-bound planner in its threadpool instead of blocking the event loop.

Robustness: request bodies over `max_body_bytes` get 413 before they are parsed; work per
request is capped (web/schemas.py); invalid input is 422, a library `GpuplanError` 400,
both as `{"detail": "<one line>"}`; no endpoint takes a server path; every JSON answer
passes through the secrets redactor.
"""
from __future__ import annotations

import collections
import json
import threading
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from gpuplan.economics.tco import TcoResult
from gpuplan.errors import GpuplanError, UnknownNameError
from gpuplan.perf.inference_estimate import ServingEstimate
from gpuplan.perf.training_estimate import TrainingEstimate
from gpuplan.planner.records import PlanResult
from gpuplan.web.schemas import (
    MAX_OFFERS, BreakevenBody, ErrorBody, ExportBody, ProjectBody, ProjectResult, ServeEstimateBody, ServePlanBody,
    SizeBody, TcoBody, TrainEstimateBody, TrainPlanBody, ValidationErrorBody,
)

MAX_BODY_BYTES = 64 * 1024
PLAN_CACHE_SIZE = 64
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
# The page and its assets may load only from this server (the app works offline).
PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
            "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
            "frame-ancestors 'none'")

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "The library refused the input (unknown model, GPU, provider...)"},
    413: {"model": ErrorBody, "description": "Request body too large"},
    422: {"model": ValidationErrorBody, "description": "Invalid input"},
}


def _ok(model) -> dict[int | str, dict[str, Any]]:
    return {200: {"model": model, "description": "Successful Response"}, **ERRORS}


def static_dir() -> Path:
    return Path(str(resources.files("gpuplan.web").joinpath("static")))


# ---- responses ------------------------------------------------------------------------------

def _one_line(text: str) -> str:
    from gpuplan.catalog.secrets import redact

    return " ".join(redact(str(text)).split()) or "invalid input"


class SafeJSONResponse(JSONResponse):
    """Strict JSON (non-finite floats become null), with every known secret redacted."""

    def render(self, content: Any) -> bytes:
        from gpuplan.catalog.secrets import redact
        from gpuplan.display import to_jsonable

        text = json.dumps(to_jsonable(content), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return redact(text).encode("utf-8")


def _error(status: int, detail: str, **extra: Any) -> SafeJSONResponse:
    return SafeJSONResponse({"detail": _one_line(detail), **extra}, status_code=status)


# ---- the ASGI guard: host check, body limit, security headers ----------------------------

class Guard:
    """Pure ASGI middleware (streaming-safe): refuses foreign Host headers when bound to
    loopback (DNS rebinding), buffers the body up to `max_body` bytes and answers 413 past
    it, and adds security headers (a strict CSP on the page)."""

    def __init__(self, app, max_body: int, allowed_hosts: tuple[str, ...] | None):
        self.app = app
        self.max_body = max_body
        self.allowed_hosts = {h.lower() for h in allowed_hosts} if allowed_hosts else None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if self.allowed_hosts is not None and _host_of(headers.get(b"host", b"")) not in self.allowed_hosts:
            await _error(400, "unexpected Host header; this server answers on its loopback address only")(
                scope, receive, send)
            return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                n = int(length)
            except ValueError:
                await _error(400, "bad Content-Length header")(scope, receive, send)
                return
            if n > self.max_body:
                await _error(413, f"request body over {self.max_body} bytes")(scope, receive, send)
                return
        chunks, total = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            total += len(body)
            if total > self.max_body:
                await _error(413, f"request body over {self.max_body} bytes")(scope, receive, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole = b"".join(chunks)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()

        path = scope.get("path", "")
        page = path == "/" or path.startswith("/static/")

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                extra = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                         (b"x-frame-options", b"DENY")]
                if page:
                    extra.append((b"content-security-policy", PAGE_CSP.encode()))
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        await self.app(scope, replay, send_with_headers)


def _host_of(raw: bytes) -> str:
    host = raw.decode("latin-1").strip().lower()
    if host.startswith("["):  # [::1]:8000
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


# ---- state: the catalog (once) and recent plan results --------------------------------------

class _State:
    def __init__(self, db_path: str | None):
        self.db_path = db_path
        self._catalog = None
        self._lock = threading.Lock()
        # key -> (PlanResult, its JSON bytes or None until first sent)
        self._plans: collections.OrderedDict[str, list[Any]] = collections.OrderedDict()
        self._plans_lock = threading.Lock()
        self._in_flight: dict[str, threading.Lock] = {}

    def catalog(self):
        if self._catalog is None:
            with self._lock:
                if self._catalog is None:
                    from gpuplan.catalog.catalog import Catalog

                    self._catalog = Catalog.load(self.db_path)
        return self._catalog

    def _cached(self, key: str) -> list[Any] | None:
        with self._plans_lock:
            hit = self._plans.get(key)
            if hit is not None:
                self._plans.move_to_end(key)
            return hit

    def _entry(self, kind: str, body) -> list[Any]:
        """The cache entry for a plan request. Identical requests arriving together are planned
        once: the first computes under a per-request lock, the others wait for its result."""
        from gpuplan.planner import plan_serving, plan_training

        key = kind + ":" + body.model_dump_json()
        hit = self._cached(key)
        if hit is not None:
            return hit
        with self._plans_lock:
            gate = self._in_flight.setdefault(key, threading.Lock())
        with gate:
            hit = self._cached(key)
            if hit is not None:
                return hit
            try:
                result = (plan_training if kind == "train" else plan_serving)(body, self.catalog())
                entry = [result, None]
                with self._plans_lock:
                    self._plans[key] = entry
                    while len(self._plans) > PLAN_CACHE_SIZE:
                        self._plans.popitem(last=False)
            finally:
                with self._plans_lock:
                    self._in_flight.pop(key, None)
        return entry

    def plan(self, kind: str, body) -> Any:
        """A plan result, from the LRU when the same request was planned recently."""
        return self._entry(kind, body)[0]

    def plan_response(self, kind: str, body) -> Response:
        """The plan as a JSON response; its bytes are encoded once per cached result."""
        entry = self._entry(kind, body)
        if entry[1] is None:
            entry[1] = SafeJSONResponse(entry[0]).body
        return Response(entry[1], media_type="application/json")


def _check_model(name: str | None) -> None:
    """Presets only over HTTP: a model name must never reach the config.json path loader."""
    from gpuplan.models import preset_ids
    from gpuplan.models.presets import resolve_preset_id

    if name is not None and resolve_preset_id(name) is None:
        raise UnknownNameError("model", name, preset_ids())


def _serve_body(body: ServePlanBody) -> ServePlanBody:
    _check_model(body.model)
    if body.users:
        from gpuplan.planner.geography import parse_user_geographies

        body = body.model_copy(update={"users": parse_user_geographies(",".join(body.users))})
    return body


# ---- the app ----------------------------------------------------------------------------------

def create_app(db_path: str | None = None, *, allowed_hosts: tuple[str, ...] | None = None,
               max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The web app over the catalog at `db_path` (default: $GPUPLAN_DB, the user store, else bundled).

    `allowed_hosts`: Host header names accepted (None = any; `gpuplan web` passes the loopback
    names when it binds loopback)."""
    import gpuplan

    state = _State(db_path)
    app = FastAPI(
        title="gpuplan", version=getattr(gpuplan, "__version__", "0"),
        description="Plan LLM compute across GPU clouds: the CLI's estimates and plans as a JSON API.",
        default_response_class=SafeJSONResponse,
        # FastAPI's own /docs and /redoc load their scripts from a CDN (blank offline): /docs below
        # is a bundled page that renders /openapi.json instead.
        docs_url=None, redoc_url=None,
    )
    app.state.gpuplan = state

    @app.exception_handler(GpuplanError)
    async def _gpuplan_error(request: Request, exc: GpuplanError):
        return _error(400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        errors = []
        for e in exc.errors():
            loc = [p for p in e.get("loc", ()) if p != "body"]
            msg = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
            errors.append({"loc": [p if isinstance(p, int) else str(p) for p in loc], "msg": _one_line(msg),
                           "type": str(e.get("type", "value_error"))})
        first = errors[0] if errors else {"loc": [], "msg": "invalid input"}
        where = ".".join(str(p) for p in first["loc"])
        return _error(422, f"{where}: {first['msg']}" if where else first["msg"], errors=errors)

    app.add_middleware(Guard, max_body=max_body_bytes, allowed_hosts=allowed_hosts)
    app.mount("/static", StaticFiles(directory=static_dir()), name="static")

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(static_dir() / "index.html", media_type="text/html; charset=utf-8")

    @app.api_route("/docs", methods=["GET", "HEAD"], include_in_schema=False)
    def docs() -> FileResponse:
        """The API described from /openapi.json by a bundled script (no CDN: it works offline)."""
        return FileResponse(static_dir() / "docs.html", media_type="text/html; charset=utf-8",
                            headers={"content-security-policy": PAGE_CSP})

    # ---- lists ------------------------------------------------------------------------------
    @app.get("/api/health", tags=["lists"])
    def health() -> dict[str, Any]:
        """Liveness, and where the offers come from (bundled files or the user's store)."""
        cat = state.catalog()
        return {"status": "ok", "catalog": "bundled" if cat.origin == "bundled" else "store",
                "offers": len(cat.all_offers), "providers": len(cat.providers), "gpus": len(cat.gpus)}

    @app.get("/api/models", tags=["lists"])
    def models() -> list[dict[str, Any]]:
        """Model presets (the page's model dropdown): id, name, parameters."""
        return _model_rows()

    @app.get("/api/gpus", tags=["lists"])
    def gpus() -> list[dict[str, Any]]:
        """The GPU spec table (`gpuplan gpus`)."""
        return [g.model_dump(mode="json") for g in state.catalog().gpus.values()]

    @app.get("/api/providers", tags=["lists"])
    def providers() -> list[dict[str, Any]]:
        """Every provider with its kind, features and cheapest prices (`gpuplan providers`)."""
        return state.catalog().provider_summary()

    @app.get("/api/offers", tags=["lists"], responses=ERRORS)
    def offers(
        gpu: Annotated[str | None, Query(max_length=200, description="GPU name(s), comma-separated; 'H100' = every variant")] = None,
        provider: Annotated[str | None, Query(max_length=500)] = None,
        kind: Annotated[str | None, Query(max_length=200)] = None,
        pricing: Annotated[str | None, Query(max_length=200)] = None,
        region: Annotated[str | None, Query(max_length=100)] = None,
        min_gpus: Annotated[float | None, Query(gt=0, le=1024, allow_inf_nan=False)] = None,
        max_price: Annotated[float | None, Query(gt=0, le=1e5, allow_inf_nan=False)] = None,
        max_price_age: Annotated[int | None, Query(ge=0, le=100_000)] = None,
        min_confidence: Annotated[Literal["primary", "aggregated", "third-party", "unverified"] | None, Query()] = None,
        sort: Annotated[Literal["price", "node-price", "gpus", "provider", "gpu", "age", "confidence"], Query()] = "price",
        limit: Annotated[int, Query(ge=1, le=MAX_OFFERS)] = 200,
    ) -> dict[str, Any]:
        """Matching offers, cheapest per GPU-hour first (`gpuplan offers`)."""
        import datetime as dt

        cat = state.catalog()
        found = cat.offers(gpu=gpu, min_gpus=min_gpus, provider=provider, kind=kind, pricing=pricing, region=region,
                           max_price=max_price, max_age_days=max_price_age, min_confidence=min_confidence,
                           sort=sort, limit=None)
        today = dt.date.today()
        rows = []
        for o in found[:limit]:
            r = o.model_dump(mode="json")
            p = cat.providers.get(o.provider)
            r.update(age_days=o.age_days(today), stale=o.is_stale(today),
                     provider_name=p.name if p else o.provider, provider_kind=p.kind if p else None)
            rows.append(r)
        return {"count": len(found), "returned": len(rows), "offers": rows}

    # ---- estimates --------------------------------------------------------------------------
    @app.post("/api/estimate/train", tags=["estimate"], responses=_ok(TrainingEstimate))
    def estimate_train(body: TrainEstimateBody) -> Response:
        """GPU-hours, wall time, MFU, memory and layout on one GPU type (`gpuplan estimate train`)."""
        from gpuplan.planner.requests import estimate_train

        _check_model(body.model)
        return SafeJSONResponse(estimate_train(body))

    @app.post("/api/estimate/serve", tags=["estimate"], responses=_ok(ServingEstimate))
    def estimate_serve(body: ServeEstimateBody) -> Response:
        """Throughput, TTFT/TPOT, KV cache and concurrency for a model on a GPU (`gpuplan estimate serve`)."""
        from gpuplan.planner.requests import estimate_serve

        _check_model(body.model)
        return SafeJSONResponse(estimate_serve(body))

    # ---- plans ------------------------------------------------------------------------------
    @app.post("/api/plan/train", tags=["plan"], responses=_ok(PlanResult))
    def plan_train(body: TrainPlanBody) -> Response:
        """Every training offer ranked by expected total cost, with time, p90 and risk (`gpuplan plan train`)."""
        _check_model(body.model)
        return state.plan_response("train", body)

    @app.post("/api/plan/serve", tags=["plan"], responses=_ok(PlanResult))
    def plan_serve(body: ServePlanBody) -> Response:
        """Every offer ranked for serving a traffic profile (`gpuplan plan serve`)."""
        return state.plan_response("serve", _serve_body(body))

    @app.post("/api/plan/project", tags=["plan"], responses=_ok(ProjectResult))
    def plan_project_endpoint(body: ProjectBody) -> Response:
        """Train on one provider, serve on another: the best of each and the total (`gpuplan plan project`)."""
        from gpuplan.planner import plan_project

        _check_model(body.train.model)
        return SafeJSONResponse(plan_project(body.train, _serve_body(body.serve), state.catalog()))

    # ---- export -----------------------------------------------------------------------------
    @app.post("/api/export/{target}", tags=["export"], response_class=Response,
              responses={200: {"content": {"application/yaml": {}}, "description": "the launch file"}, **ERRORS})
    def export(target: Literal["skypilot", "dstack", "k8s"], body: ExportBody) -> Response:
        """The launch file of the plan of `rank` for the given plan request (`gpuplan export`)."""
        from gpuplan.export import ExportOptions, export_result

        if body.train is not None:
            _check_model(body.train.model)
            result = state.plan("train", body.train)
        else:
            result = state.plan("serve", _serve_body(body.serve))
        options = ExportOptions(name=body.name, image=body.image, script=body.script,
                                script_args=tuple(body.script_args), model_id=body.model_id,
                                max_restarts=body.max_restarts, megatron_args=body.megatron_args)
        out = export_result(result, target, body.rank, options)
        from gpuplan.catalog.secrets import redact

        filename = f"{result.model}-{result.workload}-rank{body.rank}.{target}.yaml"
        filename = "".join(c if c.isalnum() or c in "._-" else "-" for c in filename)
        return Response(redact(out.text), media_type="application/yaml",
                        headers={"content-disposition": f'attachment; filename="{filename}"'})

    # ---- economics --------------------------------------------------------------------------
    @app.post("/api/tco", tags=["economics"], responses=_ok(TcoResult))
    def tco(body: TcoBody) -> Response:
        """Full cost of a training project: final run, experiments, data, labour, safety, hosting (`gpuplan tco`)."""
        from gpuplan.planner.requests import tco as answer_tco

        _check_model(body.model)
        return SafeJSONResponse(answer_tco(body, state.catalog()))

    @app.post("/api/size", tags=["economics"], responses=ERRORS)
    def size(body: SizeBody) -> Response:
        """Compute-optimal or inference-aware model size (`gpuplan size`)."""
        from gpuplan.economics import scaling_laws as sl
        from gpuplan.economics.thresholds import exceeded_active

        if body.compute is not None:
            res = sl.size_for_compute(body.compute, body.laws)
        else:
            cost = sl.CostModel.defaults() if body.cost else None
            if body.quality_of is not None:
                res = sl.size_for_quality_of(body.quality_of, body.inference_tokens, laws=body.laws, cost=cost)
            else:
                res = sl.size_for_loss(body.loss, body.inference_tokens, laws=body.laws, cost=cost)
        out = res.model_dump()
        out["thresholds_exceeded"] = [c.model_dump() for c in exceeded_active(res.training_flops)]
        return SafeJSONResponse(out)

    @app.post("/api/breakeven", tags=["economics"], responses=ERRORS)
    def breakeven_endpoint(body: BreakevenBody) -> Response:
        """Self-host vs hosted APIs: monthly cost, break-even volume and utilisation (`gpuplan breakeven`)."""
        from gpuplan.planner.requests import breakeven

        _check_model(body.model)
        return SafeJSONResponse(breakeven(body, state.catalog()))

    from gpuplan.web.batch import register_batch_routes; register_batch_routes(app)  # POST /api/plan/batch
    return app


# ---- helpers ------------------------------------------------------------------------------------

_MODEL_ROWS: list[dict[str, Any]] | None = None


def _model_rows() -> list[dict[str, Any]]:
    global _MODEL_ROWS
    if _MODEL_ROWS is None:
        from gpuplan.models import get_preset
        from gpuplan.models.presets import preset_records

        rows = []
        for rec in preset_records():
            spec = get_preset(rec["id"])
            rows.append({"id": rec["id"], "display_name": rec.get("display_name") or rec["id"],
                         "params": spec.total_params(), "active_params": spec.active_params(),
                         "moe": bool(spec.is_moe), "max_seq_len": spec.max_seq_len})
        _MODEL_ROWS = rows
    return _MODEL_ROWS
