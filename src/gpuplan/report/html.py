"""The HTML report: one file, inline CSS, inline SVG, no scripts and no external references.

Order: the recommendation and its cost band, the alternatives (one line each, then every ranked
plan), the assumptions, the risks, the price ages; charts and the raw tables after. Printed (A4
or Letter, portrait) the ranked table keeps every cost column: it drops only the layout/instance
column, wraps text cells and uses a smaller font (see PRINT_CSS).
"""
from __future__ import annotations

from html import escape

from gpuplan.report import ReportData
from gpuplan.report.charts import Point, bar_svg, scatter_svg, stacked_bar_svg

CSS = """
:root { --ink: #1f2933; --muted: #52606d; --line: #e4e7eb; --accent: #0b6bcb; --bg: #f7f9fb; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 24px 48px; }
header { border-bottom: 3px solid var(--accent); margin-bottom: 20px; padding-bottom: 10px; }
h1 { font-size: 24px; margin: 0 0 2px; }
h2 { font-size: 17px; margin: 0 0 10px; }
h3 { font-size: 14px; margin: 14px 0 4px; }
.subtitle { font-size: 15px; margin: 0 0 4px; }
.meta { color: var(--muted); font-size: 13px; }
section.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin: 16px 0; }
section.rec { border-left: 5px solid var(--accent); }
.headline { font-size: 20px; font-weight: 650; margin: 2px 0 10px; line-height: 1.3; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 16px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; overflow-wrap: anywhere; }
dl.facts dd { font-weight: 600; }
dl.facts .band { font-weight: 400; color: var(--muted); }
.checks { background: #fff4e5; color: #8a4b00; border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
.checks ul { margin: 4px 0 0; padding-left: 18px; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
th, td { padding: 4px 6px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
td { white-space: nowrap; }
td.text { white-space: normal; min-width: 70px; }
th { background: #f0f4f8; font-weight: 600; vertical-align: bottom; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.front td:first-child { box-shadow: inset 3px 0 0 var(--accent); font-weight: 600; }
.scroll { overflow-x: auto; }
ul.why li, ol.alternatives li { margin: 3px 0; }
.note { color: var(--muted); font-size: 12px; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
svg.chart { max-width: 100%; height: auto; }
.tag { display: inline-block; padding: 0 6px; border-radius: 9px; background: #e7f0fb; color: #0a5cad; font-size: 12px; }
"""

# A4 is 210 mm wide, Letter 216 mm: with 12 mm margins the narrower page leaves 186 mm (~700 CSS px).
PRINT_CSS = """
@page { margin: 12mm; }
@media print {
  body { background: #fff; font-size: 10pt; }
  main { max-width: none; padding: 0; }
  header { margin-bottom: 8px; }
  section.card { border: 0; border-radius: 0; padding: 0; margin: 10px 0; }
  section.rec { border-left: 4px solid var(--accent); padding-left: 10px; break-inside: avoid; }
  section.card:not(#alternatives) { break-inside: avoid; }
  .scroll { overflow: visible; }
  table { font-size: 7pt; width: 100%; }
  th, td { padding: 2px 3px; }
  th { white-space: normal; }
  td.text { white-space: normal; min-width: 0; overflow-wrap: anywhere; }
  tr { break-inside: avoid; }
  thead { display: table-header-group; }
  .opt { display: none; }
  svg.chart { width: 100%; height: auto; }
  .grid { display: block; }
}
"""

NUMERIC = {"rank", "gpus", "wall", "wall_p90", "cost", "cost_p90", "band", "per_mtok", "tpot", "rtt", "risk"}
TEXT = {"provider", "gpu", "region", "pricing", "confidence", "as_of", "replicas", "shape"}
OPTIONAL = {"layout", "instance"}  # dropped when printed


def _kv(pairs: list[tuple[str, str]], cls: str = "kv") -> str:
    if not pairs:
        return '<p class="note">none</p>'
    return f'<dl class="{cls}">' + "".join(
        f"<dt>{escape(k.replace('_', ' '))}</dt><dd>{escape(v)}</dd>" for k, v in pairs) + "</dl>"


def _facts(facts: list[tuple[str, str, str]]) -> str:
    return '<dl class="kv facts">' + "".join(
        f"<dt>{escape(k)}</dt><dd>{escape(v)}"
        + (f' <span class="band">({escape(band)})</span>' if band else "") + "</dd>"
        for k, v, band in facts) + "</dl>"


def _cls(k: str) -> str:
    parts = ["num" if k in NUMERIC else "text" if k in TEXT else ""]
    if k in OPTIONAL:
        parts.append("opt")
    return " ".join(p for p in parts if p)


def _table(columns: list[tuple[str, str]], rows: list[dict[str, str]], table_id: str) -> str:
    head = "".join(f'<th class="{_cls(k)}" scope="col">{escape(h)}</th>' for k, h in columns)
    body = []
    for r in rows:
        cls = ' class="front"' if r.get("front") else ""
        cells = "".join(f'<td class="{_cls(k)}">{escape(r.get(k, "-"))}</td>' for k, _ in columns)
        body.append(f"<tr{cls}>{cells}</tr>")
    return (f'<div class="scroll"><table id="{table_id}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _list(items: list[str], tag: str = "ul", cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<{tag}{attr}>" + "".join(f"<li>{escape(i)}</li>" for i in items) + f"</{tag}>"


def _recommendation(d: ReportData) -> list[str]:
    out = ['<section class="card rec" id="recommendation"><h2>Recommendation</h2>',
           f'<p class="headline" id="headline">{escape(d.headline)}</p>']
    if d.rows:
        out.append(_facts(d.facts))
        if d.checks:
            out.append(f'<div class="checks" id="checks"><strong>Check before booking</strong>{_list(d.checks[:6])}</div>')
        out.append(f"<h3>Why</h3>{_list(d.why, cls='why')}")
        if d.ties:
            out.append(f"<p id=\"ties\"><strong>Ties with #1</strong> (cost bands overlap, as good a bet within the "
                       f"estimate's uncertainty): {escape(', '.join(d.ties))}</p>")
        elif len(d.rows) > 1:
            out.append('<p id="ties">No other plan\'s cost band overlaps #1\'s.</p>')
        if d.flips:
            out.append(f"<h3>What would change the recommendation</h3>{_list(d.flips)}")
        if d.next_steps:
            out.append("<h3>Next steps</h3><ul>" + "".join(
                f"<li>{escape(what)}: <code>{escape(cmd)}</code></li>" for what, cmd in d.next_steps) + "</ul>")
    else:
        out.append(f"<h3>Why</h3>{_list(d.why, cls='why')}")
        if d.closest:
            out.append(f"<h3>Nearest candidates (not ranked)</h3>{_list(d.closest)}")
    out.append("</section>")
    return out


def render_html(d: ReportData) -> str:
    from gpuplan.report import usd

    points = [Point(p["x"], p["y"], p["label"], front=p["front"], highlight=p["rank"] == 1) for p in d.scatter]
    x_label, y_label = d.scatter_axes
    scatter = scatter_svg(points, x_label, y_label, title="Cost vs time: every plan, Pareto front highlighted",
                          y_fmt=_usd_short, x_fmt=_short, chart_id="scatter")
    breakdown = stacked_bar_svg(d.breakdown, title=d.breakdown_title, value_fmt=usd, chart_id="breakdown") \
        if d.breakdown else ""
    prices = bar_svg(d.provider_prices, title=d.provider_prices_title, value_fmt=lambda v: f"${v:,.2f}/h",
                     chart_id="provider-prices", highlight=d.top_provider) if d.provider_prices else ""
    front_rows = [{**r, "front": ""} for r in d.front]
    risk_items = "".join(
        f"<li><strong>{escape(name)}</strong><ul>{''.join(f'<li>{escape(n)}</li>' for n in notes)}</ul></li>"
        for name, notes in d.risks)
    rejected = "".join(f"<li>{escape(k)}: {v}</li>" for k, v in d.rejected)
    thresholds = "".join(f"<li>{escape(t)}</li>" for t in d.thresholds)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<meta name=\"generator\" content=\"gpuplan {escape(d.version)}\">",
        f"<title>{escape(d.title)}</title>",
        f"<style>{CSS}{PRINT_CSS}</style></head><body><main>",
        f"<header><h1>{escape(d.title)}</h1>",
        f'<p class="subtitle">{escape(d.subtitle)}</p>' if d.subtitle else "",
        f'<div class="meta">generated {escape(d.generated)} by gpuplan {escape(d.version)} · {escape(d.source)} · '
        f"{len(d.rows)} plans ranked by the 75th percentile of their cost band (expected cost shown)</div></header>",
    ]
    parts += _recommendation(d)
    if d.rows:
        parts += [
            '<section class="card" id="alternatives"><h2>Alternatives</h2>',
            _list(d.alternatives, "ol", "alternatives") if d.alternatives else '<p class="note">no other plan</p>',
            "<h3>Every ranked plan</h3>",
            _table(d.columns, d.rows, "plan-table"),
            '<p class="note"><span class="tag">marked</span> rows (bar on the left) are on the cost/time Pareto '
            "front. Cost band = p10 to p90 of expected total cost; = marks bands that overlap #1's. "
            "Risk: 0 = no known risk, 1 = likely to overrun or fail. Region +N: the same choice in N more places "
            "within 3% of the price.</p></section>",
            f'<section class="card" id="charts-cost"><h2>Cost vs time</h2>{scatter}'
            '<p class="note">Each dot is a plan; blue dots are the Pareto front (no other plan is both cheaper '
            "and faster), the orange dot is the first choice.</p></section>",
        ]
    parts += [
        '<section class="card" id="assumptions"><h2>Assumptions</h2><div class="grid">',
        f"<div><h3>Request</h3>{_kv(d.request)}</div>" if d.request else "",
        f"<div><h3>Constraints</h3>{_kv(d.constraints)}</div>",
        f"<div><h3>Workload</h3>{_kv(d.summary)}</div>",
        "</div>",
        f"<h3>How plans are costed and ranked</h3>{_kv(d.assumptions)}",
        (f'<p class="note">placement: {escape(d.placement)}</p>' if d.placement else ""),
        "</section>",
        f'<section class="card" id="risk"><h2>Risks (top plans)</h2>'
        f'{f"<ul>{risk_items}</ul>" if risk_items else "<p class=note>no risk notes on the top plans</p>"}</section>',
        f'<section class="card" id="prices"><h2>Price ages and confidence</h2>{_kv(d.prices)}'
        + (f"<h3>Per provider and GPU shown</h3>{_kv(d.price_ages)}" if d.price_ages else "") + "</section>",
    ]
    if d.rows:
        parts += [
            '<div class="grid">',
            f'<section class="card" id="breakdown-card"><h2>Cost breakdown</h2>{breakdown}</section>',
            f'<section class="card" id="prices-card"><h2>Price by provider</h2>{prices or "<p class=note>no catalog prices</p>"}'
            "</section>",
            "</div>",
            '<section class="card" id="pareto"><h2>Pareto front</h2>',
            _table(d.columns, front_rows, "pareto-table"),
            "</section>",
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
