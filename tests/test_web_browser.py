"""The planning page in a real browser: headless Chromium (Playwright) against uvicorn on loopback.

Loads the page under its strict CSP, plans a training job and a serving job through the
form, clicks the charts and downloads an export. Skips (with the reason) when Playwright or
Chromium is not installed. Leaves a full-page screenshot in test-artifacts/web-plan.png.
"""
from __future__ import annotations

import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
import yaml

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


def _chromium() -> str | None:
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (/usr/bin/chromium or `chromium` on PATH)")

expect = sync_api.expect
expect.set_options(timeout=15_000)
# No string predicates (page.wait_for_function): the page's CSP forbids eval, so they fail.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"

# Registered before any page script runs: records every CSP violation the page reports.
CSP_PROBE = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():
    """uvicorn serving create_app() on 127.0.0.1:<free port> in a thread; yields the base URL."""
    import uvicorn

    from gpuplan.web.app import create_app

    app = create_app(allowed_hosts=("127.0.0.1", "localhost", "::1"))
    app.state.gpuplan.catalog()  # load under this test's isolated environment
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


def _count(page, selector: str) -> int:
    return page.locator(selector).count()


def test_plan_page_end_to_end(server, tmp_path):
    started = time.monotonic()
    console_errors: list[str] = []
    page_errors: list[str] = []
    bad_responses: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 900})
            context.add_init_script(CSP_PROBE)
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: page_errors.append(str(e)))
            page.on("response", lambda r: bad_responses.append(f"{r.status} {r.url}") if r.status >= 400 else None)

            response = page.goto(server + "/")
            assert response is not None and response.status == 200
            assert "script-src 'self'" in response.headers["content-security-policy"]

            # Lists loaded from the API.
            page.wait_for_selector("#model option:nth-child(6)", state="attached")
            assert page.locator("#model").input_value() == "llama-3.1-8b"
            info = page.locator("#catalog-info").inner_text()
            assert re.search(r"\d+ offers · \d+ providers · (bundled catalog|your store)", info), info
            assert _count(page, "#gpu option") > 10
            assert _count(page, "#price-gpu option") > 10
            n_providers = _count(page, "#exclude input[type=checkbox]")
            assert n_providers > 5
            assert str(n_providers) in page.locator("#exclude-count").inner_text()
            assert page.locator("#model option[value='__custom__']").count() == 1

            # The custom-model row appears only for the custom option.
            assert page.locator("#params-row").is_hidden()
            page.select_option("#model", "__custom__")
            assert page.locator("#params-row").is_visible()

            # A bad quantity is caught before any request, in #form-error.
            page.select_option("#model", "qwen3-8b")
            page.fill("#tokens", "lots")
            page.click("#submit")
            assert page.locator("#form-error").is_visible()
            assert "tokens" in page.locator("#form-error").inner_text()

            # ---- train ----------------------------------------------------------------------------
            page.select_option("#model", "llama-3.1-8b")
            page.fill("#tokens", "20B")
            page.fill("#limit", "12")
            page.click("#submit")
            page.wait_for_selector("#plan-table tbody tr.plan-row")
            page.wait_for_selector("#scatter circle.point")
            assert page.locator("#form-error").is_hidden()
            assert page.locator("#empty-state").is_hidden()
            assert "20B tokens" in page.locator("#result-title").inner_text()

            rows = _count(page, "#plan-table tbody tr.plan-row")
            shown = int(re.match(r"(\d+) plans?", page.locator("#result-count").inner_text()).group(1))
            assert rows == shown and 0 < rows <= 12
            assert _count(page, "#scatter circle.point") == rows
            fronts = _count(page, "#scatter circle.point.front")
            assert fronts >= 1
            assert _count(page, "#plan-table tbody .badge.front") == fronts
            assert _count(page, "#why li") >= 1
            headers = page.locator("#plan-table thead th").all_inner_texts()
            assert "Layout" in headers and "Wall time" in headers and "p90 cost" in headers
            assert page.locator("#scatter svg title").count() == rows

            # Rank 1 is selected first; clicking another dot selects that plan.
            assert page.locator("#plan-table tbody tr.selected").get_attribute("data-rank") == "1"
            assert "#1" in page.locator("#selected-plan").inner_text()
            other = page.locator("#scatter circle.point:not(.selected)").first
            rank = other.get_attribute("data-rank")
            assert rank and rank != "1"
            other.click()
            assert page.locator("#plan-table tbody tr.selected").get_attribute("data-rank") == rank
            assert page.locator("#scatter circle.point.selected").get_attribute("data-rank") == rank
            assert f"#{rank}" in page.locator("#selected-plan").inner_text()

            # Clicking a table row selects too, and moves the highlighted dot.
            row = page.locator("#plan-table tbody tr.plan-row:not(.selected)").last
            row_rank = row.get_attribute("data-rank")
            row.click()
            assert page.locator("#scatter circle.point.selected").get_attribute("data-rank") == row_rank
            assert _count(page, "#scatter circle.point.selected") == 1
            assert f"#{row_rank}" in page.locator("#selected-plan").inner_text()
            page.locator(f"#scatter circle.point[data-rank='{rank}']").click()
            assert page.locator("#plan-table tbody tr.selected").get_attribute("data-rank") == rank

            # The breakdown and price charts are drawn for the selected plan.
            assert _count(page, "#breakdown svg rect.bar") >= 2
            assert "compute" in page.locator("#breakdown svg").inner_html()
            page.wait_for_selector("#price-chart svg rect.bar")
            selected_gpu = page.locator("#plan-table tbody tr.selected td").nth(2).inner_text()
            assert page.locator("#price-gpu").input_value() == selected_gpu
            assert _count(page, "#price-chart svg rect.bar.cheapest") == 1
            bars = _count(page, "#price-chart svg rect.bar")
            assert bars >= 1
            providers = page.eval_on_selector_all("#price-chart rect.bar", "els => els.map(e => e.dataset.provider)")
            assert len(set(providers)) == len(providers)  # one bar per provider

            # Another GPU in the price dropdown redraws the chart for it.
            page.select_option("#price-gpu", "H100-SXM")
            expect(page.locator("#price-chart svg .title")).to_contain_text("H100-SXM")

            # ---- export the selected training plan ---------------------------------------------------
            with page.expect_download() as dl_info:
                page.click("#export-skypilot")
            download = dl_info.value
            assert download.suggested_filename.endswith(".skypilot.yaml")
            target = tmp_path / download.suggested_filename
            download.save_as(target)
            text = target.read_text()
            doc = yaml.safe_load(text)
            assert isinstance(doc, dict) and "resources" in doc
            assert selected_gpu.split("-")[0] in text
            assert f"rank {rank}" in text

            # ---- serve ------------------------------------------------------------------------------
            page.locator("label:has(#workload-serve)").click()  # the radio itself is visually hidden
            assert page.locator("#workload-serve").is_checked()
            assert page.locator("#serve-fields").is_visible()
            assert page.locator("#train-fields").is_hidden()
            assert page.locator("#deadline-row").is_hidden()
            page.fill("#rps", "3")
            page.click("#submit")
            expect(page.locator("#plan-table thead")).to_contain_text("TPOT")
            page.wait_for_selector("#plan-table tbody tr.plan-row")
            assert "Serving" in page.locator("#result-title").inner_text()
            headers = page.locator("#plan-table thead th").all_inner_texts()
            assert "Replicas" in headers and "$/M out tok" in headers and "Layout" not in headers
            rows = _count(page, "#plan-table tbody tr.plan-row")
            shown = int(re.match(r"(\d+) plans?", page.locator("#result-count").inner_text()).group(1))
            assert rows == shown
            assert _count(page, "#scatter circle.point") > 0
            assert "time per output token" in page.locator("#scatter svg").inner_html()
            assert page.locator("#plan-table tbody tr.selected").get_attribute("data-rank") == "1"

            # An API refusal shows its one-line detail.
            page.fill("#rps", "")
            page.fill("#tokens-per-month", "5B")
            page.fill("#limit", "500")
            page.click("#submit")
            assert "at most 200" in page.locator("#form-error").inner_text()
            page.fill("#limit", "10")
            page.select_option("#model", "__custom__")
            page.fill("#params", "7B")
            page.click("#submit")
            expect(page.locator("#result-title")).to_contain_text("derived-7b")
            assert page.locator("#form-error").is_hidden()

            page.locator("label:has(#workload-train)").click()
            page.select_option("#model", "llama-3.1-8b")
            page.fill("#tokens", "20B")
            page.fill("#limit", "12")
            page.click("#submit")
            expect(page.locator("#result-title")).to_contain_text("Training llama-3.1-8b")
            page.wait_for_selector("#price-chart svg rect.bar")

            page.locator(".topbar").scroll_into_view_if_needed()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "web-plan.png"), full_page=True)

            violations = page.evaluate("window.__cspViolations")
            assert violations == [], violations
        finally:
            browser.close()
    assert page_errors == [], page_errors
    assert bad_responses == [], bad_responses
    assert console_errors == [], console_errors
    assert time.monotonic() - started < 60
