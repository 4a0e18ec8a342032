"""Inline SVG charts for reports: a scatter with its Pareto front, horizontal bars, one stacked bar.

Pure presentation: each function takes the numbers to draw and returns one `<svg>` element
as text, with no external reference (no fonts, no images, no scripts), so a report that
embeds it stays a single self-contained file.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif\""
INK, MUTED, GRID = "#1f2933", "#616e7c", "#e4e7eb"
POINT, FRONT, ACCENT = "#9aa5b1", "#0b6bcb", "#d9480f"
PALETTE = ("#0b6bcb", "#f59f00", "#2b8a3e", "#c2255c", "#5f3dc4", "#0c8599", "#e8590c", "#495057")


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    label: str
    front: bool = False
    highlight: bool = False


def _num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values spanning [lo, hi] (linear)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks per decade spanning [lo, hi] (both > 0)."""
    out = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** e
            if lo / 1.0001 <= v <= hi * 1.0001:
                out.append(v)
    if len(out) > 8:
        out = [v for v in out if f"{v:e}".startswith("1")]
    return out or [lo, hi]


def _scale(lo: float, hi: float, a: float, b: float, log: bool) -> Callable[[float], float]:
    if log:
        llo, lhi = math.log10(lo), math.log10(hi)
        span = (lhi - llo) or 1.0
        return lambda v: a + (math.log10(max(v, lo)) - llo) / span * (b - a)
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def scatter_svg(points: Sequence[Point], x_label: str, y_label: str, *, title: str = "",
                x_fmt: Callable[[float], str] = _num, y_fmt: Callable[[float], str] = _num,
                width: int = 640, height: int = 380, chart_id: str = "scatter") -> str:
    """Every plan as a dot, the Pareto front as filled dots joined by a step line.

    Axes switch to log scale when the data spans more than a factor of 30."""
    pts = [p for p in points if math.isfinite(p.x) and math.isfinite(p.y) and p.x > 0 and p.y > 0]
    left, right, top, bottom = 78, 20, 34 if title else 14, 52
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="{escape(chart_id)}" class="chart" role="img" '
           f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" {FONT} font-size="12">']
    out.append(f"<title>{escape(title or f'{y_label} vs {x_label}')}</title>")
    if title:
        out.append(f'<text x="{left}" y="20" fill="{INK}" font-size="14" font-weight="600">{escape(title)}</text>')
    if not pts:
        out.append(f'<text x="{width / 2}" y="{height / 2}" fill="{MUTED}" text-anchor="middle">no plans to draw</text>')
        out.append("</svg>")
        return "".join(out)
    xs, ys = [p.x for p in pts], [p.y for p in pts]
    x_log = max(xs) / min(xs) > 30
    y_log = max(ys) / min(ys) > 30
    x_lo, x_hi = _padded(min(xs), max(xs), x_log)
    y_lo, y_hi = _padded(min(ys), max(ys), y_log)
    sx = _scale(x_lo, x_hi, left, width - right, x_log)
    sy = _scale(y_lo, y_hi, height - bottom, top, y_log)
    x_ticks = log_ticks(x_lo, x_hi) if x_log else [t for t in nice_ticks(x_lo, x_hi) if x_lo <= t <= x_hi]
    y_ticks = log_ticks(y_lo, y_hi) if y_log else [t for t in nice_ticks(y_lo, y_hi) if y_lo <= t <= y_hi]
    for t in x_ticks:
        x = sx(t)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - bottom}" stroke="{GRID}"/>')
        out.append(f'<text x="{x:.1f}" y="{height - bottom + 16}" fill="{MUTED}" text-anchor="middle">'
                   f"{escape(x_fmt(t))}</text>")
    for t in y_ticks:
        y = sy(t)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="{GRID}"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" fill="{MUTED}" text-anchor="end">{escape(y_fmt(t))}</text>')
    out.append(f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="{MUTED}"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="{MUTED}"/>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 12}" fill="{INK}" text-anchor="middle">'
               f"{escape(x_label)}{' (log)' if x_log else ''}</text>")
    out.append(f'<text transform="translate(16 {(top + height - bottom) / 2}) rotate(-90)" fill="{INK}" '
               f'text-anchor="middle">{escape(y_label)}{" (log)" if y_log else ""}</text>')
    front = sorted((p for p in pts if p.front), key=lambda p: (p.x, p.y))
    if len(front) > 1:
        # A step line: between two front plans, nothing is both cheaper and faster.
        d = [f"M{sx(front[0].x):.1f},{sy(front[0].y):.1f}"]
        for a, b in zip(front, front[1:]):
            d.append(f"H{sx(b.x):.1f}V{sy(b.y):.1f}" if b.y <= a.y else f"L{sx(b.x):.1f},{sy(b.y):.1f}")
        out.append(f'<path class="pareto" d="{"".join(d)}" fill="none" stroke="{FRONT}" stroke-width="1.5" '
                   'stroke-dasharray="4 3"/>')
    for p in sorted(pts, key=lambda p: (p.front, p.highlight)):
        fill = ACCENT if p.highlight else FRONT if p.front else POINT
        r = 6 if p.highlight else 5 if p.front else 4
        cls = "front" if p.front else "plan"
        out.append(f'<circle class="{cls}" cx="{sx(p.x):.1f}" cy="{sy(p.y):.1f}" r="{r}" fill="{fill}" '
                   f'fill-opacity="0.9" stroke="#fff" stroke-width="1"><title>{escape(p.label)}</title></circle>')
    lx = width - right - 190
    out.append(f'<circle cx="{lx}" cy="{top + 8}" r="5" fill="{FRONT}"/>'
               f'<text x="{lx + 10}" y="{top + 12}" fill="{INK}">Pareto front</text>'
               f'<circle cx="{lx + 100}" cy="{top + 8}" r="4" fill="{POINT}"/>'
               f'<text x="{lx + 110}" y="{top + 12}" fill="{INK}">other plans</text>')
    out.append("</svg>")
    return "".join(out)


def _padded(lo: float, hi: float, log: bool) -> tuple[float, float]:
    if log:
        return lo / 1.25, hi * 1.25
    if hi == lo:
        return max(lo * 0.9, 0.0) if lo > 0 else lo - 1, hi * 1.1 if hi > 0 else hi + 1
    pad = (hi - lo) * 0.08
    return max(lo - pad, 0.0), hi + pad


def bar_svg(items: Sequence[tuple[str, float, str]], *, title: str = "", value_fmt: Callable[[float], str] = _num,
            width: int = 640, bar_h: int = 20, chart_id: str = "bars", highlight: str | None = None) -> str:
    """Horizontal bars, one per (label, value, note), in the given order; `highlight` names one label."""
    rows = [(lbl, v, note) for lbl, v, note in items if math.isfinite(v) and v >= 0]
    label_w, right, top = 170, 150, 34 if title else 10
    height = top + max(len(rows), 1) * (bar_h + 6) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="{escape(chart_id)}" class="chart" role="img" '
           f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" {FONT} font-size="12">']
    out.append(f"<title>{escape(title or 'bar chart')}</title>")
    if title:
        out.append(f'<text x="8" y="20" fill="{INK}" font-size="14" font-weight="600">{escape(title)}</text>')
    if not rows:
        out.append(f'<text x="{width / 2}" y="{top + 14}" fill="{MUTED}" text-anchor="middle">no data</text></svg>')
        return "".join(out)
    vmax = max(v for _, v, _ in rows) or 1.0
    span = width - label_w - right
    for i, (lbl, v, note) in enumerate(rows):
        y = top + i * (bar_h + 6)
        w = max(1.0, v / vmax * span)
        fill = ACCENT if highlight is not None and lbl == highlight else FRONT
        out.append(f'<text x="{label_w - 8}" y="{y + bar_h * 0.7:.1f}" fill="{INK}" text-anchor="end">'
                   f"{escape(_clip(lbl, 26))}</text>")
        out.append(f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" rx="2" fill="{fill}">'
                   f"<title>{escape(lbl)}: {escape(value_fmt(v))}{(' — ' + escape(note)) if note else ''}</title></rect>")
        out.append(f'<text x="{label_w + w + 6:.1f}" y="{y + bar_h * 0.7:.1f}" fill="{INK}">{escape(value_fmt(v))}'
                   f'{(" <tspan fill=" + chr(34) + MUTED + chr(34) + ">" + escape(_clip(note, 22)) + "</tspan>") if note else ""}'
                   "</text>")
    out.append("</svg>")
    return "".join(out)


def stacked_bar_svg(parts: Sequence[tuple[str, float]], *, title: str = "",
                    value_fmt: Callable[[float], str] = _num, width: int = 640, chart_id: str = "breakdown") -> str:
    """One horizontal bar split into its parts (e.g. compute, storage, egress), with a legend."""
    rows = [(lbl, v) for lbl, v in parts if math.isfinite(v) and v > 0]
    top = 34 if title else 10
    bar_h, left, right = 28, 8, 8
    legend_rows = max(1, math.ceil(len(rows) / 3))
    height = top + bar_h + 14 + legend_rows * 20 + 6
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="{escape(chart_id)}" class="chart" role="img" '
           f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" {FONT} font-size="12">']
    out.append(f"<title>{escape(title or 'breakdown')}</title>")
    if title:
        out.append(f'<text x="8" y="20" fill="{INK}" font-size="14" font-weight="600">{escape(title)}</text>')
    total = sum(v for _, v in rows)
    if total <= 0:
        out.append(f'<text x="{width / 2}" y="{top + 18}" fill="{MUTED}" text-anchor="middle">nothing to split</text></svg>')
        return "".join(out)
    x, span = float(left), width - left - right
    for i, (lbl, v) in enumerate(rows):
        w = v / total * span
        out.append(f'<rect class="part" x="{x:.1f}" y="{top}" width="{max(w, 0.5):.1f}" height="{bar_h}" '
                   f'fill="{PALETTE[i % len(PALETTE)]}"><title>{escape(lbl)}: {escape(value_fmt(v))} '
                   f"({v / total:.1%})</title></rect>")
        x += w
    for i, (lbl, v) in enumerate(rows):
        col, row = i % 3, i // 3
        lx, ly = left + col * (span / 3), top + bar_h + 14 + row * 20
        out.append(f'<rect x="{lx:.1f}" y="{ly}" width="12" height="12" fill="{PALETTE[i % len(PALETTE)]}"/>'
                   f'<text x="{lx + 18:.1f}" y="{ly + 10}" fill="{INK}">{escape(lbl)} {escape(value_fmt(v))} '
                   f"({v / total:.0%})</text>")
    out.append("</svg>")
    return "".join(out)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
