"""Plan reports: one self-contained HTML file (inline CSS and SVG) or Markdown.

    from gpuplan.report import build_report
    text = build_report(result, request, catalog, fmt="html")

A report is written for the person who books the compute (or their manager): the
recommendation and its cost band first, then the alternatives, the assumptions, the risks and
the price ages; the request's raw parameters go last, in human units. `request` may be None
(`gpuplan report --from plan.json`): the plan's own summary then describes the workload.

Presentation only: a report lays out what the planner returned (`PlanResult`) next to the
request that produced it and the catalog's prices for the chosen GPU; it computes nothing
that the planner did not (no import from gpuplan.perf or gpuplan.economics).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplan.display import (
    date_is_nominal, fmt_duration, fmt_hours_range, fmt_ms, fmt_pricing, fmt_quantity, fmt_usd, fmt_usd_short,
    plan_layout_text, region_full,
)
from gpuplan.errors import UsageError

FORMATS = ("html", "md")
SLOW_TPOT_MS = 100.0  # slower than ~10 tokens/s per stream: below reading speed


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
    # the recommendation, first in every report
    subtitle: str = ""
    headline: str = ""
    facts: list[tuple[str, str, str]] = field(default_factory=list)  # (label, value, band)
    checks: list[str] = field(default_factory=list)  # what to check before booking #1
    ties: list[str] = field(default_factory=list)
    flips: list[str] = field(default_factory=list)
    alternatives: list[str] = field(default_factory=list)
    next_steps: list[tuple[str, str]] = field(default_factory=list)  # (what, command)
    closest: list[str] = field(default_factory=list)  # when nothing fits
    price_ages: list[tuple[str, str]] = field(default_factory=list)  # per provider shown
    source: str = ""  # "planned now" or the plan file it was read from
    # chart inputs (numbers, not text)
    scatter: list[dict[str, Any]] = field(default_factory=list)
    scatter_axes: tuple[str, str] = ("", "")
    breakdown: list[tuple[str, float]] = field(default_factory=list)
    breakdown_title: str = ""
    provider_prices: list[tuple[str, float, str]] = field(default_factory=list)
    provider_prices_title: str = ""
    top_provider: str | None = None


def build_report(result, request, catalog=None, fmt: str = "html", source: str = "") -> str:
    """The report text for a `PlanResult` and the request that produced it (None: from a plan file)."""
    fmt = resolve_format(fmt)
    data = collect(result, request, catalog, source=source)
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


# ---- numbers for people ----------------------------------------------------------------------

# How numbers read is gpuplan.display's (the CLI and the page use the same rules).
usd = fmt_usd
usd_short = fmt_usd_short
duration = fmt_duration
duration_range = fmt_hours_range
quantity = fmt_quantity


pricing = fmt_pricing


def prose(text: str) -> str:
    """Planner sentences use the CLI's enum spellings; a report says 'on-demand'."""
    return str(text).replace("on_demand", "on-demand").replace(" (--offline for none)", "")


# ---- collecting display values --------------------------------------------------------------

# Request fields a reader of the report does not need (work limits, seeds, the row mode).
_QUIET = {"limit", "seed", "all_rows"}
_NAMES = {"tokens": "training tokens", "params": "parameters", "active_params": "active parameters",
          "seq_len": "sequence length", "sample_len": "packed example length (tokens)",
          "global_batch": "global batch (sequences)", "dataset_gb": "dataset stored (GB)",
          "requests_per_s": "requests per second", "tokens_per_month": "tokens per month",
          "input_len": "input tokens per request", "output_len": "output tokens per request",
          "horizon_months": "horizon (months)", "max_ttft_ms": "max TTFT (ms)", "max_tpot_ms": "max TPOT (ms)",
          "budget_usd": "budget", "deadline_hours": "deadline", "max_wall_hours": "max wall time",
          "max_price_age_days": "max price age (days)", "kv_precision": "KV cache precision"}


def _request_rows(req: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    method = req.get("method")
    for k, v in req.items():
        if v is None or k in _QUIET:
            continue
        if k == "lora_rank" and method not in ("lora", "qlora"):
            continue
        if k in ("tokens", "params", "active_params", "tokens_per_month", "dataset_tokens") and isinstance(v, (int, float)):
            text = quantity(v)
        elif k in ("deadline_hours", "max_wall_hours") and isinstance(v, (int, float)):
            text = duration(v)
        elif k == "budget_usd":
            text = usd(v)
        else:
            text = _value(v)
        rows.append((_NAMES.get(k, k.replace("_", " ")), text))
    return rows


def _summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for k, v in summary.items():
        if v is None or k in ("flips_first", "ranked_by"):
            continue
        if k in ("params", "active_params", "tokens", "global_batch_tokens", "output_tokens_per_month") \
                and isinstance(v, (int, float)):
            text = quantity(v)
        elif k == "training_flops" and isinstance(v, (int, float)):
            text = f"{v:.3g} FLOPs"
        elif isinstance(v, float):
            text = f"{v:.3g}" if abs(v) < 1e4 else quantity(v)
        else:
            text = _value(v)
        rows.append((_NAMES.get(k, k.replace("_", " ")), prose(text)))
    return rows


def headline(p: dict[str, Any]) -> str:
    """'Book 64× MI300X on TensorWave (US), on-demand: 8 nodes × 8 GPUs'."""
    where = f"{p['provider_name']} ({region_full(p['region']) or '?'})"
    more = len(p.get("also_at") or [])
    if more:
        where += f" or {more} more place{'s' if more > 1 else ''}"
    if p["workload"] == "serve":
        reps = ""
        if p.get("replicas"):
            per = p.get("gpus_per_replica") or p["layout"]["tp"]
            reps = f": {p['replicas']} replica{'s' if p['replicas'] > 1 else ''} × {per} GPU{'s' if per > 1 else ''}"
        return f"Book {p['gpus']}× {p['gpu']} on {where}, {pricing(p['pricing'])}{reps}"
    return (f"Book {p['gpus']}× {p['gpu']} on {where}, {pricing(p['pricing'])}: {p['nodes']} "
            f"node{'s' if p['nodes'] > 1 else ''} × {p['gpus_per_node']:g} GPUs")


def cost_band(p: dict[str, Any]) -> str:
    lo = p.get("cost_p10_usd")
    if isinstance(lo, (int, float)):
        return f"p10-p90 {usd(lo)} to {usd(p['cost_p90_usd'])}"
    return f"p90 {usd(p['cost_p90_usd'])}"


def plan_facts(p: dict[str, Any], summary: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value, band) lines: cost, time or latency, price, risk."""
    facts = []
    serve = p["workload"] == "serve"
    horizon = summary.get("horizon_months")
    over = f" for {horizon:g} month(s)" if serve and isinstance(horizon, (int, float)) else ""
    facts.append(("Expected cost", usd(p["cost_usd"]) + over, cost_band(p)))
    if serve:
        a = p.get("assumptions") or {}
        lat = f"TTFT {_ms(a.get('ttft_ms'))}, TPOT {_ms(a.get('tpot_ms'))}"
        if p.get("network_rtt_ms") is not None:
            lat += f", RTT {_ms(p['network_rtt_ms'])}"
        target = summary.get("latency_target") or ""
        facts.append(("Latency", lat, prose(target)))
        facts.append(("Per million output tokens", usd(p.get("cost_per_million_output_tokens_usd")),
                      f"{quantity(p['output_tokens_per_s'])} output tokens/s" if p.get("output_tokens_per_s") else ""))
    else:
        band = (f"p10-p90 {duration_range(p['wall_p10_hours'], p['wall_p90_hours'])}"
                if isinstance(p.get("wall_p10_hours"), (int, float)) else f"p90 {duration(p['wall_p90_hours'])}")
        facts.append(("Time", duration(p["wall_hours"]), band))
        facts.append(("GPU-hours", f"{p['gpu_hours']:,.0f}", ""))
    offer = p.get("offer") or {}
    facts.append(("Price", f"{usd(offer.get('price_per_gpu_hour_usd'))}/GPU-hour, {pricing(p['pricing'])}",
                  f"as of {offer.get('as_of', '?')}: {'at least ' if date_is_nominal(p) else ''}"
                  f"{p['price_age_days']} days old, {p['confidence']}"
                  + (", stale" if p["stale"] else "")))
    dominant = (p.get("uncertainty") or {}).get("dominant")
    facts.append(("Risk (0-1)", f"{p['risk']:.2f}", f"widest uncertainty: {dominant}" if dominant else ""))
    return facts


def plan_checks(p: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """What to check before booking: a slow answer, users far away, an old or unverified price, the plan's notes."""
    out = []
    a = p.get("assumptions") or {}
    tpot = a.get("tpot_ms")
    if p["workload"] == "serve" and isinstance(tpot, (int, float)) and tpot > SLOW_TPOT_MS:
        out.append(f"TPOT {tpot:.0f} ms is slower than reading speed (about {1000 / tpot:.0f} tokens/s per user): "
                   "set a max TPOT for interactive use")
    users = summary.get("users") or []
    if p["workload"] == "serve" and len(users) > 1 and p.get("network_rtt_ms") is not None:
        out.append(f"users are in {', '.join(users)} but every replica runs in {region_full(p['region'])}"
                   f" (RTT {p['network_rtt_ms']:.0f} ms as planned): consider one replica set per region")
    if p["stale"]:
        out.append(f"the price is {p['price_age_days']} days old: check it before booking")
    if p["confidence"] == "unverified":
        out.append("the price is unverified")
    for n in list(p.get("warnings") or []) + list(p.get("risk_notes") or []):
        if p["stale"] and "days old" in n and "price" in n:
            continue
        out.append(prose(n))
    return out


def _one_line(p: dict[str, Any], first: dict[str, Any]) -> str:
    delta = p["cost_usd"] - first["cost_usd"]
    time = duration(p["wall_hours"]) if p["workload"] == "train" else \
        f"TPOT {_ms((p.get('assumptions') or {}).get('tpot_ms'))}"
    more = f" (+{len(p['also_at'])} more places)" if p.get("also_at") else ""
    return (f"#{p['rank']} {p['provider_name']} {p['gpus']}× {p['gpu']}, {pricing(p['pricing'])}, {region_full(p['region'])}{more}: "
            f"{usd(p['cost_usd'])} ({'+' if delta >= 0 else '-'}{usd(abs(delta))}), {time}"
            + (" - ties with #1" if p.get("ties_first") else ""))


def collect(result, request, catalog=None, source: str = "") -> ReportData:
    import gpuplan

    data = result.model_dump(mode="json")
    serve = data["workload"] == "serve"
    plans = data["plans"]
    summary = data.get("summary") or {}
    front = set(data["pareto_ranks"])
    req = request.model_dump(mode="json") if request is not None else {}
    cons = req.pop("constraints", {}) or {}
    for k in ("model", "params", "active_params"):
        if req.get(k) is None:
            req.pop(k, None)
    if serve:
        cons.pop("allow_decentralized", None)  # the serving default, not something the user asked for

    rows = [_row(p, serve, p["rank"] in front) for p in plans]
    if serve:
        columns = [("rank", "#"), ("provider", "Provider"), ("gpu", "GPUs"), ("replicas", "Replicas"),
                   ("pricing", "Pricing"), ("region", "Region"), ("tpot", "TPOT"), ("rtt", "RTT"),
                   ("per_mtok", "$/M out"), ("cost", "Expected cost"), ("band", "Cost band p10-p90"),
                   ("risk", "Risk"), ("as_of", "Price date"), ("confidence", "Confidence"), ("instance", "Instance")]
        horizon = summary.get("horizon_months")
        cost_note = f" over {horizon:g} month(s)" if isinstance(horizon, (int, float)) else ""
    else:
        columns = [("rank", "#"), ("provider", "Provider"), ("gpu", "GPUs"), ("shape", "Nodes × GPUs"),
                   ("pricing", "Pricing"), ("region", "Region"), ("wall", "Wall"), ("wall_p90", "p90 wall"),
                   ("cost", "Expected cost"), ("band", "Cost band p10-p90"), ("risk", "Risk"),
                   ("as_of", "Price date"), ("confidence", "Confidence"), ("layout", "Layout")]
        cost_note = ""

    scatter = []
    for p in plans:
        y = p["cost_usd"]
        x = _latency_ms(p) if serve else p["wall_hours"] / 24
        if x is None:
            continue
        label = (f"#{p['rank']} {p['provider_name']} {p['gpus']}× {p['gpu']} ({pricing(p['pricing'])}): {usd(y)}, "
                 + (f"{x:.1f} ms/token" if serve else duration(p["wall_hours"])))
        scatter.append({"x": x, "y": y, "label": label, "front": p["rank"] in front, "rank": p["rank"]})
    axes = ("time per output token, ms" if serve else "expected wall time, days", f"expected cost{cost_note}, USD")

    top = plans[0] if plans else None
    breakdown, provider_prices, prices_title, breakdown_title = [], [], "", ""
    facts, checks, ties, flips, alternatives, next_steps, closest = [], [], [], [], [], [], []
    if top:
        c = top["cost"]
        egress_unknown = any("egress price unknown" in w for w in top["warnings"])
        breakdown = [("compute", c["compute_usd"]), ("storage", c["storage_usd"]),
                     ("egress" + (" (price unknown, not included)" if egress_unknown else ""), c["egress_usd"]),
                     ("other", c["other_usd"])]
        breakdown_title = f"Cost breakdown of #1: {top['provider_name']} {top['gpu']} ({usd(top['cost_usd'])})"
        if catalog is not None:
            provider_prices = _cheapest_by_provider(catalog, top["gpu"])
            prices_title = f"Cheapest {top['gpu']} price per GPU-hour by provider (catalog)"
        facts = plan_facts(top, summary)
        checks = plan_checks(top, summary)
        ties = [f"#{p['rank']} {p['provider_name']} {p['gpu']} {usd_short(p['cost_usd'])}"
                for p in plans[1:] if p.get("ties_first")]
        if len(ties) > 6:
            ties = ties[:6] + [f"and {len(ties) - 6} more"]
        flips = [prose(f) for f in summary.get("flips_first") or []]
        alternatives = [_one_line(p, top) for p in plans[1:5]]
        plan_file = source or "plan.json"
        made = "" if source else f" (after `gpuplan plan {data['workload']} ... --json > {plan_file}`)"
        next_steps = [(f"launch files for #1{made}", f"gpuplan export skypilot|dstack|k8s --from {plan_file} --rank 1")]
        if any(p["stale"] for p in plans[:5]):
            next_steps.append(("refresh stale prices, then plan again", "gpuplan catalog refresh"))
    else:
        for p in (data.get("closest") or [])[:3]:
            time = duration(p["wall_hours"]) if p["workload"] == "train" else f"TPOT {_ms(_latency_ms(p))}"
            closest.append(f"{p['provider_name']} {p['gpus']}× {p['gpu']} ({pricing(p['pricing'])}): "
                           f"{usd(p['cost_usd'])}, {time}")

    risks = [(f"#{p['rank']} {p['provider_name']} {p['gpu']}", [prose(n) for n in p["risk_notes"] + p["warnings"]])
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
    price_ages: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for p in plans:
        key = (p["provider_name"], p["gpu"])
        if key in seen:
            continue
        seen.add(key)
        price_ages.append((f"{p['provider_name']} {p['gpu']}",
                           f"{p['offer']['as_of']}: {p['price_age_days']} days old, {p['confidence']}"
                           + (" (stale)" if p["stale"] else "")))

    placement = ""
    if data.get("placement", {}).get("reasons"):
        placement = f"{data['placement'].get('coupling', '')}: {'; '.join(data['placement']['reasons'])}"
    assumptions = []
    if summary.get("ranked_by"):
        assumptions.append(("ranked by", prose(summary["ranked_by"])))
    assumptions += [(k.replace("_", " "), prose(_value(v))) for k, v in data["assumptions"].items()]

    return ReportData(
        title=f"gpuplan {data['workload']} plan: {data['model']}",
        workload=data["workload"], model=data["model"],
        generated=dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip(),
        version=getattr(gpuplan, "__version__", ""),
        request=_request_rows(req),
        constraints=_request_rows({k: v for k, v in cons.items() if v not in (None, False, [], "")}),
        summary=_summary_rows(summary),
        assumptions=assumptions,
        columns=columns, rows=rows,
        # the tie and flip sentences have sections of their own
        why=[prose(w) for w in data["why"]
             if not (top and (w in (summary.get("flips_first") or []) or "tie with #1 within the bands" in w))],
        front=[r for r in rows if r["front"]],
        risks=risks, prices=prices,
        rejected=sorted(data.get("rejected", {}).items(), key=lambda kv: -kv[1]),
        thresholds=[f"{t['name']}: {t['threshold_flops']:.0e} FLOPs ({'exceeded' if t.get('exceeded') else 'not exceeded'}"
                    f", ratio {t.get('ratio', 0):.3g})" for t in data.get("thresholds", []) if t.get("active", True)],
        placement=placement,
        subtitle=_subtitle(data["workload"], summary),
        headline=headline(top) if top else "No plan meets the constraints",
        facts=facts, checks=checks, ties=ties, flips=flips, alternatives=alternatives, next_steps=next_steps,
        closest=closest, price_ages=price_ages,
        source=f"read from {source}" if source else "planned when this report was written",
        scatter=scatter, scatter_axes=axes, breakdown=breakdown, breakdown_title=breakdown_title,
        provider_prices=provider_prices, provider_prices_title=prices_title,
        top_provider=top["provider_name"] if top else None,
    )


def _subtitle(workload: str, s: dict[str, Any]) -> str:
    if workload == "train":
        tokens = s.get("tokens")
        method = s.get("method")
        parts = [f"{quantity(tokens)} training tokens" if isinstance(tokens, (int, float)) else "training"]
        if method and method != "full":
            parts.append(method)
        if isinstance(s.get("params"), (int, float)):
            parts.append(f"{quantity(s['params'])} parameters")
        return ", ".join(parts)
    parts = []
    if isinstance(s.get("average_requests_per_s"), (int, float)):
        parts.append(f"{s['average_requests_per_s']:.3g} requests/s on average")
    if isinstance(s.get("output_tokens_per_month"), (int, float)):
        parts.append(f"{quantity(s['output_tokens_per_month'])} output tokens/month")
    if isinstance(s.get("horizon_months"), (int, float)):
        parts.append(f"{s['horizon_months']:g} month(s)")
    if s.get("users"):
        parts.append(f"users in {', '.join(s['users'])}")
    return ", ".join(parts) or "serving"


_ms = fmt_ms


def _latency_ms(p: dict[str, Any]) -> float | None:
    """The serving plan's per-token latency as the planner ranks its Pareto front."""
    tpot = (p.get("assumptions") or {}).get("tpot_ms")
    return float(tpot) if isinstance(tpot, (int, float)) else None


def _row(p: dict[str, Any], serve: bool, on_front: bool) -> dict[str, str]:
    tpot = _latency_ms(p)
    lo = p.get("cost_p10_usd")
    more = len(p.get("also_at") or [])
    return {
        "rank": str(p["rank"]), "front": "yes" if on_front else "",
        "provider": p["provider_name"], "gpu": f"{p['gpus']}× {p['gpu']}", "gpus": str(p["gpus"]),
        "replicas": f"{p['replicas']} × TP{p.get('gpus_per_replica') or p['layout']['tp']}" if p.get("replicas") else "-",
        "shape": f"{p['nodes']} × {p['gpus_per_node']:g}", "pricing": pricing(p["pricing"]),
        "region": (region_full(p["region"]) or "-") + (f" +{more}" if more else ""), "layout": plan_layout_text(p),
        "wall": duration(p["wall_hours"]), "wall_p90": duration(p["wall_p90_hours"]),
        "cost": usd(p["cost_usd"]), "cost_p90": usd(p["cost_p90_usd"]),
        "band": f"{usd_short(lo if isinstance(lo, (int, float)) else p['cost_usd'])}-{usd_short(p['cost_p90_usd'])}"
                + (" =" if p.get("ties_first") else ""),
        "per_mtok": usd(p["cost_per_million_output_tokens_usd"]) if serve else "-",
        "tpot": _ms(tpot) if tpot is not None else "-",
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
        return "; ".join(f"{str(k).replace('_', ' ')} {_value(x)}" for k, x in v.items())
    return str(v)


__all__ = ["FORMATS", "ReportData", "build_report", "collect", "resolve_format", "write_report"]
