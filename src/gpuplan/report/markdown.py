"""The Markdown report: the same sections in the same order as the HTML one, tables instead of charts."""
from __future__ import annotations

from gpuplan.report import ReportData


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _kv(pairs: list[tuple[str, str]]) -> list[str]:
    if not pairs:
        return ["_none_", ""]
    return [f"- **{_cell(k.replace('_', ' '))}**: {_cell(v)}" for k, v in pairs] + [""]


NUMERIC = ("rank", "cost", "cost_p90", "band", "risk", "gpus", "wall", "wall_p90", "tpot", "rtt", "per_mtok")


def _table(columns: list[tuple[str, str]], rows: list[dict[str, str]]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for _, h in columns) + " |",
           "|" + "|".join("---:" if k in NUMERIC else "---" for k, _ in columns) + "|"]
    for r in rows:
        cells = [_cell(r.get(k, "-")) for k, _ in columns]
        if r.get("front"):
            cells[0] += " ★"
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def render_markdown(d: ReportData) -> str:
    lines = [f"# {d.title}", ""]
    if d.subtitle:
        lines += [d.subtitle, ""]
    lines += [f"_generated {d.generated} by gpuplan {d.version}; {d.source}; {len(d.rows)} plans ranked by the "
              "75th percentile of their cost band (expected cost shown)_", ""]
    lines += ["## Recommendation", "", f"**{_cell(d.headline)}**", ""]
    if d.rows:
        lines += [f"- **{_cell(k)}**: {_cell(v)}" + (f" ({_cell(band)})" if band else "") for k, v, band in d.facts] + [""]
        if d.checks:
            lines += ["**Check before booking**", ""] + [f"- {_cell(c)}" for c in d.checks[:6]] + [""]
        lines += ["**Why**", ""] + [f"- {w}" for w in d.why] + [""]
        if d.ties:
            lines += [f"**Ties with #1** (cost bands overlap): {', '.join(d.ties)}", ""]
        if d.flips:
            lines += ["**What would change the recommendation**", ""] + [f"- {f}" for f in d.flips] + [""]
        if d.next_steps:
            lines += ["**Next steps**", ""] + [f"- {what}: `{cmd}`" for what, cmd in d.next_steps] + [""]
    else:
        lines += [f"- {w}" for w in d.why] + [""]
        if d.closest:
            lines += ["**Nearest candidates (not ranked)**", ""] + [f"- {c}" for c in d.closest] + [""]
    if d.rows:
        lines += ["## Alternatives", ""] + [f"{i}. {a}" for i, a in enumerate(d.alternatives, 1)] + [""]
        lines += ["### Every ranked plan", "", "★ = on the cost/time Pareto front; cost band = p10 to p90 (= overlaps "
                  "#1's); risk 0 = no known risk, 1 = likely to overrun or fail.", ""] + _table(d.columns, d.rows)
    lines += ["## Assumptions", ""]
    if d.request:
        lines += ["### Request", ""] + _kv(d.request)
    lines += ["### Constraints", ""] + _kv(d.constraints)
    lines += ["### Workload", ""] + _kv(d.summary)
    lines += ["### How plans are costed and ranked", ""] + _kv(d.assumptions)
    if d.placement:
        lines += [f"_placement: {d.placement}_", ""]
    lines += ["## Risks (top plans)", ""]
    if d.risks:
        for name, notes in d.risks:
            lines.append(f"- **{_cell(name)}**")
            lines += [f"  - {n}" for n in notes]
        lines.append("")
    else:
        lines += ["_no risk notes on the top plans_", ""]
    lines += ["## Price ages and confidence", ""] + _kv(d.prices)
    if d.price_ages:
        lines += _kv(d.price_ages)
    if d.rows:
        lines += ["## Pareto front", ""] + _table(d.columns, [{**r, "front": ""} for r in d.front])
        if d.breakdown:
            lines += [f"## {d.breakdown_title}", ""]
            total = sum(v for _, v in d.breakdown) or 1.0
            lines += [f"- {k}: ${v:,.2f} ({v / total:.1%})" for k, v in d.breakdown if v > 0] + [""]
        if d.provider_prices:
            lines += [f"## {d.provider_prices_title}", "", "| Provider | $/GPU-hour | Pricing, date |", "|---|---:|---|"]
            lines += [f"| {_cell(n)} | ${v:,.2f} | {_cell(note)} |" for n, v, note in d.provider_prices] + [""]
    if d.rejected:
        lines += ["## Offers not ranked", ""] + [f"- {k}: {v}" for k, v in d.rejected] + [""]
    if d.thresholds:
        lines += ["## Compute thresholds (information)", ""] + [f"- {t}" for t in d.thresholds] + [""]
    lines += ["_Estimates, not quotes: prices carry their date and source; refresh the catalog before relying "
              "on stale ones._", ""]
    # Markdown renders raw HTML: names and notes from a plan file (a provider called "<script>") stay text.
    return "\n".join(lines).replace("<", "&lt;")
