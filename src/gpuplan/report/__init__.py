"""Plan reports: one self-contained HTML file (inline CSS and SVG) or Markdown.

    from gpuplan.report import build_report
    text = build_report(result, request, catalog, fmt="html")

Presentation only: a report lays out what the planner returned (`PlanResult`) next to the
request that produced it and the catalog's prices for the chosen GPU; it computes nothing
that the planner did not.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplan.errors import UsageError

FORMATS = ("html", "md")


@dataclass
class ReportData:
    """Everything a renderer needs, already flattened into display values."""

    title: str
    workload: str
    model: str
    generated: str
    version: str
    request: list[tuple[str, str]]
    constraints: list[tuple[str, str]]
    summary: list[tuple[str, str]]
    assumptions: list[tuple[str, str]]
    columns: list[tuple[str, str]]
    rows: list[dict[str, str]]
    why: list[str]
    front: list[dict[str, str]]
    risks: list[tuple[str, list[str]]]
    prices: list[tuple[str, str]]
    rejected: list[tuple[str, int]]
    thresholds: list[str]
    placement: str
    # chart inputs (numbers, not text)
    scatter: list[dict[str, Any]] = field(default_factory=list)
    scatter_axes: tuple[str, str] = ("", "")
    breakdown: list[tuple[str, float]] = field(default_factory=list)
    breakdown_title: str = ""
    provider_prices: list[tuple[str, float, str]] = field(default_factory=list)
    provider_prices_title: str = ""
    top_provider: str | None = None


def build_report(result, request, catalog=None, fmt: str = "html") -> str:
    """The report text for a `PlanResult` and the request that produced it."""
    fmt = resolve_format(fmt)
    data = collect(result, request, catalog)
    if fmt == "md":
        from gpuplan.report.markdown import render_markdown

        return render_markdown(data)
    from gpuplan.report.html import render_html

    return render_html(data)


def resolve_format(fmt: str | None, out: str | None = None) -> str:
    """'html' or 'md'; without one, from the --out suffix (.md/.markdown), else html."""
    if fmt is None:
        suffix = Path(out).suffix.lower() if out and out != "-" else ""
        return "md" if suffix in (".md", ".markdown") else "html"
    f = fmt.strip().lower()
    f = {"markdown": "md", "htm": "html"}.get(f, f)
    if f not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use html or md")
    return f


def write_report(out: str, text: str) -> Path:
    """Write the report atomically (see gpuplan.files.write_atomic)."""
    from gpuplan.files import write_atomic

    return write_atomic(out, text)


# ---- collecting display values --------------------------------------------------------------

def collect(result, request, catalog=None) -> ReportData:
    import gpuplan
    from gpuplan.cli.output import fmt_usd
    from gpuplan.cli.render_plans import fmt_hours

    data = result.model_dump(mode="json")
    serve = data["workload"] == "serve"
    plans = data["plans"]
    front = set(data["pareto_ranks"])
    req = request.model_dump(mode="json") if request is not None else {}
    cons = req.pop("constraints", {}) or {}
    for k in ("model", "params", "active_params"):
        if req.get(k) is None:
            req.pop(k, None)

    rows = [_row(p, serve, p["rank"] in front) for p in plans]
    if serve:
        columns = [("rank", "#"), ("provider", "Provider"), ("gpu", "GPU"), ("gpus", "GPUs"), ("replicas", "Replicas"),
                   ("pricing", "Pricing"), ("region", "Region"), ("cost", "Cost"), ("cost_p90", "p90 cost"),
                   ("per_mtok", "$/M out"), ("tpot", "TPOT"), ("rtt", "RTT"), ("risk", "Risk"),
                   ("as_of", "Price date"), ("confidence", "Confidence")]
        horizon = data["summary"].get("horizon_months")
        cost_note = f" over {horizon:g} month(s)" if isinstance(horizon, (int, float)) else ""
    else:
        columns = [("rank", "#"), ("provider", "Provider"), ("gpu", "GPU"), ("shape", "Nodes × GPUs"),
                   ("pricing", "Pricing"), ("layout", "Layout"), ("wall", "Wall"), ("wall_p90", "p90 wall"),
                   ("cost", "Expected cost"), ("cost_p90", "p90 cost"), ("risk", "Risk"),
                   ("as_of", "Price date"), ("confidence", "Confidence")]
        cost_note = ""

    scatter = []
    for p in plans:
        y = p["cost_usd"]
        x = _latency_ms(p) if serve else p["wall_hours"]
        if x is None:
            continue
        label = (f"#{p['rank']} {p['provider_name']} {p['gpus']}× {p['gpu']} ({p['pricing']}): {fmt_usd(y)}, "
                 + (f"{x:.1f} ms/token" if serve else fmt_hours(x)))
        scatter.append({"x": x, "y": y, "label": label, "front": p["rank"] in front, "rank": p["rank"]})
    axes = ("time per output token, ms" if serve else "expected wall time, hours", f"expected cost{cost_note}, USD")

    top = plans[0] if plans else None
    breakdown, provider_prices, prices_title, breakdown_title = [], [], "", ""
    if top:
        c = top["cost"]
        breakdown = [("compute", c["compute_usd"]), ("storage", c["storage_usd"]), ("egress", c["egress_usd"]),
                     ("other", c["other_usd"])]
        breakdown_title = f"Cost breakdown of #1: {top['provider_name']} {top['gpu']} ({fmt_usd(top['cost_usd'])})"
        if catalog is not None:
            provider_prices = _cheapest_by_provider(catalog, top["gpu"])
            prices_title = f"Cheapest {top['gpu']} price per GPU-hour by provider (catalog)"

    risks = [(f"#{p['rank']} {p['provider_name']} {p['gpu']}", p["risk_notes"] + p["warnings"])
             for p in plans[:5] if p["risk_notes"] or p["warnings"]]
    dates = sorted({p["offer"]["as_of"] for p in plans})
    conf: dict[str, int] = {}
    for p in plans:
        conf[p["confidence"]] = conf.get(p["confidence"], 0) + 1
    prices = []
    if plans:
        prices = [("price dates", f"{dates[0]} to {dates[-1]}" if len(dates) > 1 else dates[0]),
                  ("stale prices (older than 180 days)", f"{sum(p['stale'] for p in plans)} of {len(plans)} plans"),
                  ("confidence", ", ".join(f"{k}: {v}" for k, v in sorted(conf.items(), key=lambda kv: -kv[1]))),
                  ("catalog", getattr(catalog, "origin", "bundled") if catalog is not None else "-")]
        if prices[-1][1] not in ("bundled", "-"):
            prices[-1] = ("catalog", "local store")

    placement = ""
    if data.get("placement", {}).get("reasons"):
        placement = f"{data['placement'].get('coupling', '')}: {'; '.join(data['placement']['reasons'])}"

    return ReportData(
        title=f"gpuplan {data['workload']} plan: {data['model']}",
        workload=data["workload"], model=data["model"],
        generated=dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip(),
        version=getattr(gpuplan, "__version__", ""),
        request=[(k, _value(v)) for k, v in req.items() if v is not None],
        constraints=[(k, _value(v)) for k, v in cons.items() if v not in (None, False, [], "")],
        summary=[(k, _value(v)) for k, v in data["summary"].items() if v is not None],
        assumptions=[(k, _value(v)) for k, v in data["assumptions"].items()],
        columns=columns, rows=rows, why=list(data["why"]),
        front=[r for r in rows if r["front"]],
        risks=risks, prices=prices,
        rejected=sorted(data.get("rejected", {}).items(), key=lambda kv: -kv[1]),
        thresholds=[f"{t['name']}: {t['threshold_flops']:.0e} FLOPs ({'exceeded' if t.get('exceeded') else 'not exceeded'}"
                    f", ratio {t.get('ratio', 0):.3g})" for t in data.get("thresholds", []) if t.get("active", True)],
        placement=placement,
        scatter=scatter, scatter_axes=axes, breakdown=breakdown, breakdown_title=breakdown_title,
        provider_prices=provider_prices, provider_prices_title=prices_title,
        top_provider=top["provider_name"] if top else None,
    )


def _latency_ms(p: dict[str, Any]) -> float | None:
    """The serving plan's per-token latency as the planner ranks its Pareto front."""
    tpot = (p.get("assumptions") or {}).get("tpot_ms")
    return float(tpot) if isinstance(tpot, (int, float)) else None


def _row(p: dict[str, Any], serve: bool, on_front: bool) -> dict[str, str]:
    from gpuplan.cli.output import fmt_usd
    from gpuplan.cli.render_plans import _layout_text, fmt_hours

    tpot = _latency_ms(p)
    return {
        "rank": str(p["rank"]), "front": "yes" if on_front else "",
        "provider": p["provider_name"], "gpu": p["gpu"], "gpus": str(p["gpus"]),
        "replicas": f"{p['replicas']} × TP{p.get('gpus_per_replica') or p['layout']['tp']}" if p.get("replicas") else "-",
        "shape": f"{p['nodes']} × {p['gpus_per_node']:g}", "pricing": p["pricing"].replace("_", "-"),
        "region": p["region"] or "-", "layout": _layout_text(p),
        "wall": fmt_hours(p["wall_hours"]), "wall_p90": fmt_hours(p["wall_p90_hours"]),
        "cost": fmt_usd(p["cost_usd"]), "cost_p90": fmt_usd(p["cost_p90_usd"]),
        "per_mtok": fmt_usd(p["cost_per_million_output_tokens_usd"]) if serve else "-",
        "tpot": f"{tpot:.1f} ms" if tpot is not None else "-",
        "rtt": f"{p['network_rtt_ms']:.0f} ms" if p.get("network_rtt_ms") is not None else "-",
        "risk": f"{p['risk']:.2f}",
        "as_of": p["offer"]["as_of"] + (" (stale)" if p["stale"] else ""),
        "age": f"{p['price_age_days']} d", "confidence": p["confidence"],
        "instance": p["instance_type"],
    }


def _cheapest_by_provider(catalog, gpu: str) -> list[tuple[str, float, str]]:
    """One bar per provider: its cheapest offer of exactly this GPU, cheapest provider first."""
    best: dict[str, Any] = {}
    for o in catalog.offers(gpu=gpu):
        if o.gpu != gpu:
            continue
        if o.provider not in best or o.price_per_gpu_hour_usd < best[o.provider].price_per_gpu_hour_usd:
            best[o.provider] = o
    rows = []
    for pid, o in sorted(best.items(), key=lambda kv: kv[1].price_per_gpu_hour_usd):
        name = catalog.providers[pid].name if pid in catalog.providers else pid
        rows.append((name, o.price_per_gpu_hour_usd, f"{o.pricing.replace('_', '-')}, {o.as_of.isoformat()}"))
    return rows[:20]


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return "-"
        if v == int(v) and abs(v) < 1e6:
            return str(int(v))
        return f"{v:.4g}"
    if isinstance(v, list):
        return ", ".join(_value(x) for x in v) if v else "-"
    if isinstance(v, dict):
        return "; ".join(f"{k} {_value(x)}" for k, x in v.items())
    return str(v)


__all__ = ["FORMATS", "ReportData", "build_report", "collect", "resolve_format", "write_report"]
