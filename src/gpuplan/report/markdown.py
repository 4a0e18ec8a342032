"""The Markdown report: the same sections as the HTML one, tables instead of charts."""
from __future__ import annotations

from gpuplan.report import ReportData


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _kv(pairs: list[tuple[str, str]]) -> list[str]:
    if not pairs:
        return ["_none_", ""]
    return [f"- **{_cell(k.replace('_', ' '))}**: {_cell(v)}" for k, v in pairs] + [""]


def _table(columns: list[tuple[str, str]], rows: list[dict[str, str]]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for _, h in columns) + " |",
           "|" + "|".join("---:" if k in ("rank", "cost", "cost_p90", "risk", "gpus") else "---" for k, _ in columns) + "|"]
    for r in rows:
        cells = [_cell(r.get(k, "-")) for k, _ in columns]
        if r.get("front"):
            cells[0] += " ★"
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def render_markdown(d: ReportData) -> str:
    lines = [f"# {d.title}", "", f"_generated {d.generated} by gpuplan {d.version}; "
             f"{len(d.rows)} plans ranked by expected total job cost_", ""]
    lines += ["## Request", ""] + _kv(d.request)
    lines += ["## Constraints", ""] + _kv(d.constraints)
    lines += ["## Workload", ""] + _kv(d.summary)
    lines += ["## Why the first choice wins", ""] + [f"- {w}" for w in d.why] + [""]
    if d.placement:
        lines += [f"_placement: {d.placement}_", ""]
    if d.rows:
        lines += ["## Ranked plans", "", "★ = on the cost/time Pareto front; p90 = 90th percentile of a seeded "
                  "simulation of failures and preemptions.", ""] + _table(d.columns, d.rows)
        lines += ["## Pareto front", ""] + _table(d.columns, [{**r, "front": ""} for r in d.front])
        if d.breakdown:
            lines += [f"## {d.breakdown_title}", ""]
            total = sum(v for _, v in d.breakdown) or 1.0
            lines += [f"- {k}: ${v:,.2f} ({v / total:.1%})" for k, v in d.breakdown if v > 0] + [""]
        if d.provider_prices:
            lines += [f"## {d.provider_prices_title}", "", "| Provider | $/GPU-hour | Pricing, date |", "|---|---:|---|"]
            lines += [f"| {_cell(n)} | ${v:,.2f} | {_cell(note)} |" for n, v, note in d.provider_prices] + [""]
    lines += ["## Risk (top plans)", ""]
    if d.risks:
        for name, notes in d.risks:
            lines.append(f"- **{_cell(name)}**")
            lines += [f"  - {n}" for n in notes]
        lines.append("")
    else:
        lines += ["_no risk notes on the top plans_", ""]
    lines += ["## Price dates and confidence", ""] + _kv(d.prices)
    lines += ["## Assumptions", ""] + _kv(d.assumptions)
    if d.rejected:
        lines += ["## Offers not ranked", ""] + [f"- {k}: {v}" for k, v in d.rejected] + [""]
    if d.thresholds:
        lines += ["## Compute thresholds (information)", ""] + [f"- {t}" for t in d.thresholds] + [""]
    lines += ["_Estimates, not quotes: prices carry their date and source; refresh the catalog before relying "
              "on stale ones._", ""]
    return "\n".join(lines)
