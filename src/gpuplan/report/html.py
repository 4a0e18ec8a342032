"""The HTML report: one file, inline CSS, inline SVG, no scripts and no external references."""
from __future__ import annotations

from html import escape

from gpuplan.report import ReportData
from gpuplan.report.charts import Point, bar_svg, scatter_svg, stacked_bar_svg

CSS = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #e4e7eb; --accent: #0b6bcb; --bg: #f7f9fb; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 24px 48px; }
header { border-bottom: 3px solid var(--accent); margin-bottom: 20px; padding-bottom: 10px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 10px; }
.meta { color: var(--muted); font-size: 13px; }
section.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin: 16px 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 16px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; word-break: break-word; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 5px 8px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
th { background: #f0f4f8; font-weight: 600; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.front td:first-child { box-shadow: inset 3px 0 0 var(--accent); font-weight: 600; }
.scroll { overflow-x: auto; }
ul.why li { margin: 3px 0; }
.note { color: var(--muted); font-size: 12px; }
svg.chart { max-width: 100%; height: auto; }
.tag { display: inline-block; padding: 0 6px; border-radius: 9px; background: #e7f0fb; color: var(--accent); font-size: 12px; }
@media print { body { background: #fff; } section.card { break-inside: avoid; } }
"""

NUMERIC = {"rank", "gpus", "wall", "wall_p90", "cost", "cost_p90", "per_mtok", "tpot", "rtt", "risk"}


def _kv(pairs: list[tuple[str, str]]) -> str:
    if not pairs:
        return '<p class="note">none</p>'
    return "<dl class=\"kv\">" + "".join(
        f"<dt>{escape(k.replace('_', ' '))}</dt><dd>{escape(v)}</dd>" for k, v in pairs) + "</dl>"


def _table(columns: list[tuple[str, str]], rows: list[dict[str, str]], table_id: str) -> str:
    head = "".join(f'<th class="{"num" if k in NUMERIC else ""}" scope="col">{escape(h)}</th>' for k, h in columns)
    body = []
    for r in rows:
        cls = ' class="front"' if r.get("front") else ""
        cells = "".join(f'<td class="{"num" if k in NUMERIC else ""}">{escape(r.get(k, "-"))}</td>' for k, _ in columns)
        body.append(f"<tr{cls}>{cells}</tr>")
    return (f'<div class="scroll"><table id="{table_id}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def render_html(d: ReportData) -> str:
    from gpuplan.cli.output import fmt_usd

    points = [Point(p["x"], p["y"], p["label"], front=p["front"], highlight=p["rank"] == 1) for p in d.scatter]
    x_label, y_label = d.scatter_axes
    scatter = scatter_svg(points, x_label, y_label, title="Cost vs time: every plan, Pareto front highlighted",
                          y_fmt=_usd_short, x_fmt=_short, chart_id="scatter")
    breakdown = stacked_bar_svg(d.breakdown, title=d.breakdown_title, value_fmt=fmt_usd, chart_id="breakdown") \
        if d.breakdown else ""
    prices = bar_svg(d.provider_prices, title=d.provider_prices_title, value_fmt=lambda v: f"${v:,.2f}/h",
                     chart_id="provider-prices", highlight=d.top_provider) if d.provider_prices else ""
    front_rows = [{**r, "front": ""} for r in d.front]
    risk_items = "".join(
        f"<li><strong>{escape(name)}</strong><ul>{''.join(f'<li>{escape(n)}</li>' for n in notes)}</ul></li>"
        for name, notes in d.risks)
    rejected = "".join(f"<li>{escape(k)}: {v}</li>" for k, v in d.rejected)
    thresholds = "".join(f"<li>{escape(t)}</li>" for t in d.thresholds)
    empty = not d.rows
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<meta name=\"generator\" content=\"gpuplan {escape(d.version)}\">",
        f"<title>{escape(d.title)}</title>",
        f"<style>{CSS}</style></head><body><main>",
        f"<header><h1>{escape(d.title)}</h1>",
        f'<div class="meta">generated {escape(d.generated)} by gpuplan {escape(d.version)} · '
        f"{len(d.rows)} plans ranked by expected total job cost</div></header>",
        '<div class="grid">',
        f'<section class="card" id="request"><h2>Request</h2>{_kv(d.request)}</section>',
        f'<section class="card" id="constraints"><h2>Constraints</h2>{_kv(d.constraints)}</section>',
        f'<section class="card" id="summary"><h2>Workload</h2>{_kv(d.summary)}</section>',
        "</div>",
        '<section class="card" id="why"><h2>Why the first choice wins</h2>',
        f'<ul class="why">{"".join(f"<li>{escape(w)}</li>" for w in d.why)}</ul>',
        (f'<p class="note">placement: {escape(d.placement)}</p>' if d.placement else ""),
        "</section>",
    ]
    if not empty:
        parts += [
            f'<section class="card" id="charts-cost"><h2>Cost vs time</h2>{scatter}'
            '<p class="note">Each dot is a plan; blue dots are the Pareto front (no other plan is both cheaper '
            "and faster), the orange dot is the first choice. Hover a dot for its plan.</p></section>",
            '<section class="card" id="plans"><h2>Ranked plans</h2>',
            _table(d.columns, d.rows, "plan-table"),
            '<p class="note"><span class="tag">marked</span> rows (bar on the left) are on the cost/time Pareto '
            "front. p90 = the 90th percentile of a seeded simulation of failures and preemptions.</p></section>",
            '<div class="grid">',
            f'<section class="card" id="breakdown-card"><h2>Cost breakdown</h2>{breakdown}</section>',
            f'<section class="card" id="prices-card"><h2>Price by provider</h2>{prices or "<p class=note>no catalog prices</p>"}'
            "</section>",
            "</div>",
            '<section class="card" id="pareto"><h2>Pareto front</h2>',
            _table(d.columns, front_rows, "pareto-table"),
            "</section>",
        ]
    parts += [
        '<div class="grid">',
        f'<section class="card" id="risk"><h2>Risk (top plans)</h2>'
        f'{f"<ul>{risk_items}</ul>" if risk_items else "<p class=note>no risk notes on the top plans</p>"}</section>',
        f'<section class="card" id="prices"><h2>Price dates and confidence</h2>{_kv(d.prices)}</section>',
        "</div>",
        f'<section class="card" id="assumptions"><h2>Assumptions</h2>{_kv(d.assumptions)}</section>',
    ]
    if rejected:
        parts.append(f'<section class="card" id="rejected"><h2>Offers not ranked</h2><ul>{rejected}</ul></section>')
    if thresholds:
        parts.append(f'<section class="card" id="thresholds"><h2>Compute thresholds (information)</h2>'
                     f"<ul>{thresholds}</ul></section>")
    parts.append('<p class="note">Estimates, not quotes: prices carry their date and source; refresh the catalog '
                 "(gpuplan catalog refresh) before relying on stale ones.</p>")
    parts.append("</main></body></html>\n")
    return "\n".join(p for p in parts if p)


def _short(v: float) -> str:
    if v >= 1000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def _usd_short(v: float) -> str:
    for div, suf in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"${v / div:g}{suf}"
    return f"${v:g}"
