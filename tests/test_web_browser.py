"""The planning page in a real browser: headless Chromium (Playwright) against uvicorn on loopback.

One browser for the module, two window sizes: a 1440x900 desktop and a 390x844 phone. Checks
what a person sees: the results come into view (not under the form) after Plan, the
recommendation leads, every control has a label, text and buttons meet WCAG AA contrast
(computed from the browser's own styles), keyboard focus is visible, a shared link reproduces
the plan, the review scenarios (benchmarks/scenarios.json) can be planned from the page and
match the API, and the downloads and exports give feedback. Skips (with the reason) when
Playwright or Chromium is not installed. Screenshots go to test-artifacts/ (gitignored).
"""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import socket
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


def _chromium() -> str | None:
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = _chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (/usr/bin/chromium or `chromium` on PATH)")

expect = sync_api.expect
expect.set_options(timeout=15_000)
# No string predicates (page.wait_for_function): the page's CSP forbids eval, so they fail.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
SCENARIOS = json.loads((ROOT / "benchmarks" / "scenarios.json").read_text())["scenarios"]
APP_JS = ROOT / "src" / "gpuplan" / "web" / "static" / "app.js"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}

# Registered before any page script runs: records every CSP violation the page reports.
CSP_PROBE = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""

# WCAG 2.x contrast from computed styles: the text colour over the background it is drawn on
# (the element's and its ancestors' backgrounds composited, white at the bottom).
CONTRAST_JS = """
(selectors) => {
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  };
  const blend = (top, bottom) => ({r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a),
                                    b: top.b * top.a + bottom.b * (1 - top.a), a: 1});
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const background = (node) => {
    const layers = [];
    for (let n = node; n; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = {r: 255, g: 255, b: 255, a: 1};
    for (const c of layers.reverse()) bg = blend(c, bg);
    return bg;
  };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  return selectors.map(([sel, what]) => {
    const node = document.querySelector(sel);
    if (!node) return [sel, what, null, 'missing'];
    const st = getComputedStyle(node);
    const bg = background(what === 'outline' ? node.parentElement : node);
    const colour = parse(what === 'outline' ? st.outlineColor : st.color);
    const extra = what === 'outline' ? `${st.outlineStyle} ${st.outlineWidth}` : st.color;
    return [sel, what, Math.round(ratio(blend(colour, bg), bg) * 100) / 100, extra];
  });
}
"""

# Controls with no accessible name: no <label>, aria-label(ledby), text (buttons) or title.
UNLABELLED_JS = """
() => Array.from(document.querySelectorAll('input, select, textarea, button')).filter((e) => {
  if (e.type === 'hidden') return false;
  const byId = (e.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean)
    .map((id) => (document.getElementById(id) || {}).textContent || '').join('');
  const name = (e.getAttribute('aria-label') || '').trim() || byId.trim()
    || Array.from(e.labels || []).map((l) => l.textContent).join('').trim()
    || (e.tagName === 'BUTTON' ? e.textContent.trim() : '') || (e.getAttribute('title') || '').trim();
  return !name;
}).map((e) => e.id || e.outerHTML.slice(0, 80))
"""

# What is drawn at a point of the viewport: inside the form panel, the results, or elsewhere.
HIT_JS = """
([x, y]) => {
  const n = document.elementFromPoint(x, y);
  if (!n) return 'nothing';
  if (n.closest('.panel')) return 'form';
  if (n.closest('#results')) return 'results';
  return n.tagName.toLowerCase();
}
"""

TEXT_CONTRAST = [  # (selector, 'text') pairs checked on the page with results
    ("#bands dd", "text"), ("#bands .band", "text"), ("#why li", "text"), ("#headline", "text"),
    ("#plan-table tbody td.num", "text"), ("#plan-table tbody td .sub", "text"), ("th button.sort", "text"),
    ("label[for=tokens]", "text"), (".hint", "text"), ("#result-title", "text"), (".badge", "text"),
    ("#submit", "text"), ("#download-csv", "text"), ("#export-k8s", "text"),
    (".segmented label:has(input:checked)", "text"), (".tagline", "text"), (".links a", "text"),
    ("#status", "text"), (".muted.small", "text"), ("#alternatives li", "text"),
]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """uvicorn serving create_app() on 127.0.0.1:<free port> in a thread, over the bundled catalog."""
    import uvicorn

    from gpuplan.web.app import create_app

    home = tmp_path_factory.mktemp("browser-home")
    with pytest.MonkeyPatch.context() as mp:
        for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
            mp.setenv(var, str(home / var.lower()))
        mp.delenv("GPUPLAN_DB", raising=False)
        app = create_app(allowed_hosts=("127.0.0.1", "localhost", "::1"))
        app.state.gpuplan.catalog()  # the bundled catalog, loaded under the isolated environment
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", ws="none"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start within 10 s")
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no Chromium found")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class Watch:
    """Console errors, page errors, failed responses and foreign requests of one browser context."""

    def __init__(self, context, base: str):
        self.console: list[str] = []
        self.errors: list[str] = []
        self.bad: list[str] = []
        self.foreign: list[str] = []
        self.allow_status: set[int] = set()
        self.allowed_seen: set[int] = set()
        context.add_init_script(CSP_PROBE)
        context.on("console", lambda m: self.console.append(m.text) if m.type == "error" else None)
        context.on("weberror", lambda e: self.errors.append(str(e.error)))
        context.on("response", self._response)
        context.on("request", lambda r: self.foreign.append(r.url)
                   if not r.url.startswith((base, "blob:", "data:", "about:")) else None)

    def _response(self, r) -> None:
        if r.status in self.allow_status:
            self.allowed_seen.add(r.status)
        elif r.status >= 400:
            self.bad.append(f"{r.status} {r.url}")

    def check(self, *pages):
        for page in pages:
            assert page.evaluate("window.__cspViolations") == [], "CSP violations"
        assert self.errors == [], self.errors
        assert self.bad == [], self.bad
        assert self.foreign == [], self.foreign  # nothing fetched from elsewhere: the page works offline
        # Chromium logs every 4xx answer; those the test provoked on purpose are expected.
        console = [c for c in self.console
                   if not any(f"status of {code}" in c for code in self.allowed_seen)]
        assert console == [], console


def _new_page(browser, base: str, viewport: dict, mobile: bool = False):
    context = browser.new_context(accept_downloads=True, viewport=viewport, is_mobile=mobile, has_touch=mobile,
                                  device_scale_factor=1)
    watch = Watch(context, base)
    page = context.new_page()
    page.set_default_timeout(15_000)
    return context, page, watch


def _open(page, url: str) -> None:
    response = page.goto(url)
    assert response is not None and response.status == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector("#model option:nth-child(6)", state="attached")


def _plan(page) -> None:
    """Press Plan and wait for the new result (the status line changes on every result)."""
    before = page.locator("#status").text_content() or ""
    page.click("#submit")
    page.wait_for_selector("#plan-table tbody tr.plan-row")
    expect(page.locator("#status")).not_to_have_text(before or "\u0000")
    expect(page.locator("#headline")).to_contain_text("Book")


def _api_plan(page, base: str, kind: str, body: dict) -> dict:
    r = page.request.post(f"{base}/api/plan/{kind}", data=body)
    assert r.ok, r.text()
    return r.json()


def _assert_shows(page, result: dict) -> None:
    """The page shows this API result: same count, same #1 in the headline and the first row."""
    top = result["plans"][0]
    assert page.locator("#result-count").get_attribute("data-count") == str(len(result["plans"]))
    headline = page.locator("#headline").inner_text()
    assert top["provider_name"] in headline and top["gpu"] in headline and f"{top['gpus']}×" in headline, headline
    first = page.locator("#plan-table tbody tr.plan-row").first
    assert first.get_attribute("data-rank") == "1"
    assert top["provider_name"] in first.inner_text()
    rows = page.locator("#plan-table tbody tr.plan-row")
    assert rows.count() == len(result["plans"])


def _assert_results_in_view(page, viewport: dict) -> None:
    """After Plan: the recommendation's heading is inside the window, focused, and nothing covers it."""
    box = page.locator("#recommended-title").bounding_box()
    assert box is not None and 0 <= box["y"] < viewport["height"] * 0.5, box
    assert page.evaluate("document.activeElement.id") == "recommended-title"
    headline = page.locator("#headline").bounding_box()
    assert page.evaluate(HIT_JS, [headline["x"] + 20, headline["y"] + headline["height"] / 2]) == "results"


def _assert_contrast(page, pairs, minimum: float) -> None:
    found = page.evaluate(CONTRAST_JS, [list(p) for p in pairs])
    missing = [f[0] for f in found if f[2] is None]
    assert missing == [], f"selectors not on the page: {missing}"
    low = [f for f in found if f[2] < minimum]
    assert low == [], f"contrast below {minimum}:1: {low}"


def _assert_focus_ring(page, selector: str) -> None:
    """The focused element (or, for the hidden radio, its label) draws a >= 2 px ring at >= 3:1."""
    sel, _, ratio, style = page.evaluate(CONTRAST_JS, [[selector, "outline"]])[0]
    kind, width = style.split()
    assert kind != "none" and float(width.removesuffix("px")) >= 2, (sel, style)
    assert ratio >= 3, (sel, ratio)


def _assert_labelled(page) -> None:
    assert page.evaluate(UNLABELLED_JS) == []


def _save(page, name: str, full: bool = False) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=full)


def _scenario(sid: str) -> dict:
    return next(s for s in SCENARIOS if s["id"] == sid)


def _scenario_query(s: dict) -> str:
    """A review scenario as the page's link parameters (the names the page writes itself)."""
    q: dict[str, str] = {"workload": s["kind"]}
    flat = {k: v for k, v in s["request"].items() if k != "constraints"} | s["request"].get("constraints", {})
    for k, v in flat.items():
        q[k] = ",".join(v) if isinstance(v, list) else ("1" if v else "0") if isinstance(v, bool) else f"{v:g}" \
            if isinstance(v, float) else str(v)
    if "model" not in q:
        q["model"] = "__custom__"
    return urlencode(q)


def _assert_prints_on_a4(browser, html: str) -> None:
    """The page's downloaded report, laid out with its print styles at A4's printable width
    (186 mm, 703 px), keeps its whole table on the page."""
    context = browser.new_context(viewport={"width": 703, "height": 1000}, java_script_enabled=False)
    try:
        page = context.new_page()
        page.set_content(html)
        page.emulate_media(media="print")
        right = page.evaluate("document.querySelector('#alternatives table').getBoundingClientRect().right")
        assert right <= 703.5 and page.evaluate("document.documentElement.scrollWidth") <= 703
    finally:
        context.close()


def _download(page, selector: str):
    with page.expect_download() as info:
        page.click(selector)
    return info.value


# ---- without a browser: the page's link covers every scenario's request ------------------------------

def test_every_review_scenario_can_be_written_as_a_page_link():
    """Each key of each scenario's request (constraints flattened) is a field the page reads from its link."""
    keys = set(re.findall(r'\bkey: "(\w+)"', APP_JS.read_text()))
    keys |= {"workload", "model", "deadline_hours", "max_wall_hours"}
    for s in SCENARIOS:
        flat = set(s["request"]) - {"constraints"} | set(s["request"].get("constraints", {}))
        assert flat <= keys, (s["id"], flat - keys)


# ---- desktop ----------------------------------------------------------------------------------------

@needs_chromium
def test_desktop_plan_recommendation_table_whatif_exports_and_link(server, browser, tmp_path, cli):
    started = time.monotonic()
    context, page, watch = _new_page(browser, server, DESKTOP)
    shared = None
    try:
        _open(page, server + "/")
        assert page.locator("#model").input_value() == "llama-3.1-8b"
        info = page.locator("#catalog-info").inner_text()
        assert re.search(r"\d+ offers · \d+ providers · (bundled catalog|your store)", info), info
        assert page.locator("#exclude input[type=checkbox]").count() > 5
        assert page.locator(".links a[href='/docs']").count() == 1

        # Defaults are shown, not "none": the 30-day count target, the 90-day cap, native precision.
        assert page.locator("#deadline").get_attribute("placeholder") == "30 days (default)"
        assert page.locator("#max-wall").get_attribute("placeholder") == "90 days (default)"
        assert "native" in page.locator("#serve-precision option:checked").inner_text()
        assert page.locator("#max-tpot").get_attribute("placeholder") == "50 (default)"

        # Every control is labelled; keyboard focus draws a visible ring (inputs, the Train/Serve
        # toggle whose radio is visually hidden, the Plan button).
        _assert_labelled(page)
        page.focus("#tokens")
        _assert_focus_ring(page, "#tokens")
        page.focus("#model")
        page.keyboard.press("Shift+Tab")
        assert page.evaluate("document.activeElement.id") == "workload-train"
        _assert_focus_ring(page, ".segmented label:has(input:focus-visible)")
        page.focus("#limit")
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "submit"
        _assert_focus_ring(page, "#submit")

        # A bad quantity is caught before any request and the field is marked.
        page.fill("#tokens", "lots")
        page.click("#submit")
        expect(page.locator("#form-error")).to_contain_text("tokens")
        assert page.locator("#tokens").get_attribute("aria-invalid") == "true"

        # ---- the train scenario S1b (1T tokens, 14-day deadline), typed into the form ----------
        s1b = _scenario("S1b")
        page.fill("#tokens", "1e12")
        page.fill("#deadline", "14d")
        _plan(page)
        assert page.locator("#form-error").is_hidden()
        expected = _api_plan(page, server, "train", s1b["request"])
        _assert_shows(page, expected)
        _assert_results_in_view(page, DESKTOP)
        top = expected["plans"][0]
        bands = page.locator("#bands").inner_text()
        assert "p10–p90" in bands and "Time" in bands and "Price" in bands
        if expected["summary"].get("flips_first"):
            expect(page.locator("#flips")).to_contain_text("would rank first")
        ties = [p for p in expected["plans"] if p["ties_first"]]
        if ties:
            expect(page.locator("#ties")).to_contain_text(f"#{ties[0]['rank']}")
        assert page.locator("#alternatives li").count() == min(4, len(expected["plans"]) - 1)
        _assert_labelled(page)
        _assert_contrast(page, TEXT_CONTRAST, 4.5)
        headers = page.locator("#plan-table thead th").all_inner_texts()
        assert any(h.startswith("Region") for h in headers) and any(h.startswith("Expected cost") for h in headers)
        _save(page, "web-desktop-train.png")

        # Sortable columns: expected cost ascending, then descending; '#' restores the ranking.
        page.click("th button.sort[data-key=cost]")
        assert page.locator("th[data-key=cost]").get_attribute("aria-sort") == "ascending"
        by_cost = [str(p["rank"]) for p in sorted(expected["plans"], key=lambda p: (p["cost_usd"], p["rank"]))]
        shown = page.eval_on_selector_all("#plan-table tbody tr.plan-row", "rows => rows.map(r => r.dataset.rank)")
        assert shown == by_cost
        page.click("th button.sort[data-key=cost]")
        assert page.locator("th[data-key=cost]").get_attribute("aria-sort") == "descending"
        shown = page.eval_on_selector_all("#plan-table tbody tr.plan-row", "rows => rows.map(r => r.dataset.rank)")
        assert shown[0] == max(expected["plans"], key=lambda p: (p["cost_usd"], -p["rank"]))["rank"].__str__()
        assert "sort=cost" in page.url
        page.click("th button.sort[data-key=rank]")
        assert page.locator("#plan-table tbody tr.plan-row").first.get_attribute("data-rank") == "1"

        # Clicking a dot selects that plan in the table, the chart and the selected-plan card.
        # A dot no other dot covers (plans of equal cost and time sit on top of each other).
        rank = page.evaluate("""() => {
            const dots = [...document.querySelectorAll('#scatter circle.point')];
            const at = c => [+c.getAttribute('cx'), +c.getAttribute('cy')];
            const free = dots.filter(c => !c.classList.contains('selected')).find(c => dots.every(d => d === c
                || Math.hypot(at(c)[0] - at(d)[0], at(c)[1] - at(d)[1]) > 16));
            return free ? free.dataset.rank : null; }""")
        assert rank, "every plan's dot is covered by another"
        page.locator(f"#scatter circle.point[data-rank='{rank}']").click()
        assert page.locator("#plan-table tbody tr.selected").get_attribute("data-rank") == rank
        assert f"#{rank}" in page.locator("#selected-plan").inner_text()
        page.locator("#plan-table tbody tr.plan-row[data-rank='1']").click()

        # What-if: #1's price x3 re-ranks the shown plans, clearly labelled; reset restores them.
        page.select_option("#wi-scope", "first")
        page.fill("#wi-price", "3")
        page.locator("#wi-price").dispatch_event("change")
        expect(page.locator("#whatif-result")).to_contain_text("would rank first")
        expect(page.locator("#whatif-table-note")).to_contain_text("What-if")
        assert page.locator("#whatif-badge").is_visible()
        assert page.locator("th[data-key=whatifcost]").count() == 1
        assert page.locator("#plan-table tbody tr.plan-row").first.get_attribute("data-rank") != "1"
        assert "whatif=3%2C1%2C1%2Cfirst" in page.url or "whatif=3,1,1,first" in page.url
        _save(page, "web-desktop-whatif.png")
        page.click("#wi-reset")
        assert page.locator("#whatif-table-note").is_hidden()
        assert page.locator("th[data-key=whatifcost]").count() == 0
        assert page.locator("#plan-table tbody tr.plan-row").first.get_attribute("data-rank") == "1"

        # Export #1 for Kubernetes: the file arrives and the page shows how to launch it.
        download = _download(page, "#export-k8s")
        assert download.suggested_filename.endswith(".k8s.yaml")
        text = Path(download.path()).read_text()
        assert "rank 1" in text and top["gpu"] in text
        expect(page.locator("#launch")).to_be_visible()
        assert page.locator("[data-testid=launch-command]").inner_text() == f"kubectl apply -f {download.suggested_filename}"
        assert "Before launching" in page.locator("#launch").inner_text()

        # CSV, plan JSON and report downloads, each confirmed on the page.
        download = _download(page, "#download-csv")
        rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
        assert [r["rank"] for r in rows] == [str(p["rank"]) for p in expected["plans"]]
        assert rows[0]["region"] == top["region"] and float(rows[0]["cost_p10_usd"]) == pytest.approx(top["cost_p10_usd"])
        expect(page.locator("#download-status")).to_contain_text(f"Saved {download.suggested_filename}")
        download = _download(page, "#download-json")
        plan_file = tmp_path / download.suggested_filename
        download.save_as(plan_file)
        assert [p["rank"] for p in json.loads(plan_file.read_text())["plans"]] == [p["rank"] for p in expected["plans"]]
        expect(page.locator("#download-status")).to_contain_text("gpuplan report --from")
        code, _, err = cli("report", "--from", str(plan_file), "--out", str(tmp_path / "from-page.html"))
        assert code == 0, err
        download = _download(page, "#download-report")
        report = Path(download.path()).read_text()
        assert "<script" not in report and report.index("Recommended") < report.index("Alternatives")
        assert top["provider_name"] in report
        _assert_prints_on_a4(browser, report)

        # The plan's state is in the URL: another person opening it gets the same plan and selection.
        page.locator("#plan-table tbody tr.plan-row[data-rank='3']").click()
        query = parse_qs(urlparse(page.url).query)
        assert query["workload"] == ["train"] and query["tokens"] == ["1e12"] and query["deadline"] == ["14d"]
        assert query["sel"] == ["3"]
        assert page.locator("#share-link").input_value() == page.url
        assert "--deadline 14d" in page.locator("#cli-command").input_value()
        shared = page.url
        other_context, other, other_watch = _new_page(browser, server, DESKTOP)
        try:
            other.goto(shared)
            other.wait_for_selector("#plan-table tbody tr.plan-row")
            expect(other.locator("#headline")).to_contain_text("Book")
            _assert_shows(other, expected)
            assert other.locator("#deadline").input_value() == "14d"
            assert other.locator("#plan-table tbody tr.selected").get_attribute("data-rank") == "3"
            other_watch.check(other)
        finally:
            other_context.close()

        # ---- the serve scenario S7 (70B, 5B tokens/month, users in the EU and US-east) --------------
        s7 = _scenario("S7")
        page.locator("label:has(#workload-serve)").click()
        assert page.locator("#serve-fields").is_visible() and page.locator("#train-fields").is_hidden()
        assert page.locator("#deadline-row").is_hidden()
        page.select_option("#model", "llama-3.1-70b")
        page.fill("#rps", "")
        page.fill("#tokens-per-month", "5B")
        page.fill("#users", "eu,us-east")
        _plan(page)
        expected = _api_plan(page, server, "serve", s7["request"])
        _assert_shows(page, expected)
        _assert_results_in_view(page, DESKTOP)
        assert "users in eu, us-east" in page.locator("#result-title").inner_text()
        expect(page.locator("#bands")).to_contain_text("TPOT")
        headers = page.locator("#plan-table thead th").all_inner_texts()
        assert any(h.startswith("Region") for h in headers) and any(h.startswith("RTT") for h in headers)
        grouped = [p for p in expected["plans"] if p["also_at"]]
        assert page.locator("button.places-toggle").count() == len(grouped)
        if grouped:
            g = grouped[0]
            toggle = page.locator(f"button.places-toggle[data-rank='{g['rank']}']")
            assert toggle.inner_text() == f"+{len(g['also_at'])} more place{'s' if len(g['also_at']) > 1 else ''}"
            toggle.click()
            expect(page.locator(f"tr.places[data-places-of='{g['rank']}']")).to_contain_text(g["also_at"][-1])
            assert page.locator(f"button.places-toggle[data-rank='{g['rank']}']").get_attribute("aria-expanded") == "true"
        assert "users=eu%2Cus-east" in page.url and "tokens_per_month=5B" in page.url
        _save(page, "web-desktop-serve.png")
        _save(page, "web-desktop-serve-full.png", full=True)

        # An API refusal is one line, the field is marked and the old plans are dimmed.
        watch.allow_status = {422}
        page.fill("#max-gpus", "99999")
        page.click("#submit")
        expect(page.locator("#form-error")).to_contain_text("Max GPUs")
        assert "\n" not in page.locator("#form-error").inner_text()
        assert page.locator("#max-gpus").get_attribute("aria-invalid") == "true"
        expect(page.locator("#results")).to_have_class(re.compile(r"\bstale\b"))
        page.fill("#max-gpus", "")
        watch.allow_status = set()

        # /docs is a bundled page that describes the API from /openapi.json (no CDN).
        response = page.goto(server + "/docs")
        assert response is not None and response.status == 200
        assert "script-src 'self'" in response.headers["content-security-policy"]
        page.wait_for_selector("body[data-ready=true]")
        assert page.locator("section.endpoint").count() >= 10
        expect(page.locator("#endpoints")).to_contain_text("/api/plan/train")
        expect(page.locator("#endpoints")).to_contain_text("deadline_hours")
        _save(page, "web-docs.png")
        watch.check(page)
    finally:
        context.close()
    assert time.monotonic() - started < 90


# ---- phone ------------------------------------------------------------------------------------------

@needs_chromium
def test_phone_results_are_not_covered_by_the_form_and_a_scenario_link_plans(server, browser):
    context, page, watch = _new_page(browser, server, PHONE, mobile=True)
    try:
        _open(page, server + "/")
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # no sideways scrolling
        _assert_labelled(page)
        page.focus("#tokens")
        _assert_focus_ring(page, "#tokens")

        # S1 (8B on 1T tokens): tap Plan at the bottom of the form; the results come to the top.
        page.fill("#tokens", "1e12")
        page.locator("#submit").tap()
        page.wait_for_selector("#plan-table tbody tr.plan-row")
        expect(page.locator("#headline")).to_contain_text("Book")
        expected = _api_plan(page, server, "train", _scenario("S1")["request"])
        _assert_shows(page, expected)
        _assert_results_in_view(page, PHONE)
        assert page.evaluate("getComputedStyle(document.querySelector('.panel')).position") == "static"
        _save(page, "web-phone-after-plan.png")
        # Scrolling through the results, the form is never drawn over them.
        for y in (900, 2000, 3200):
            page.evaluate("(y) => window.scrollTo(0, y)", y)
            assert page.evaluate(HIT_JS, [PHONE["width"] / 2, PHONE["height"] / 2]) != "form", y
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        _assert_contrast(page, TEXT_CONTRAST[:12], 4.5)
        _save(page, "web-phone-full.png", full=True)

        # A link made from the serve scenario S9 (offline batch on marketplace/decentralized GPUs,
        # no spare replica) fills the form, plans, and shows what the API returns for it.
        s9 = _scenario("S9")
        page.goto(f"{server}/?{_scenario_query(s9)}")
        page.wait_for_selector("#plan-table tbody tr.plan-row")
        expect(page.locator("#headline")).to_contain_text("Book")
        assert page.locator("#workload-serve").is_checked() and page.locator("#offline").is_checked()
        assert not page.locator("#redundancy").is_checked()
        assert page.locator("#kinds input:checked").count() == 2
        _assert_shows(page, _api_plan(page, server, "serve", s9["request"]))
        _assert_results_in_view(page, PHONE)
        assert "--offline --no-redundancy" in page.locator("#cli-command").input_value()
        _save(page, "web-phone-serve-scenario.png")
        watch.check(page)
    finally:
        context.close()
