"""`gpuplan report`: a self-contained HTML report (inline CSS and SVG, no scripts, nothing fetched)
and a Markdown one, written atomically; both lay out exactly what the planner returned.

A report leads with the recommendation and its cost band, then the alternatives, the
assumptions, the risks and the price ages. `gpuplan report --from plan.json` reads a plan file
(validated; a bad file is one line). Printed on A4 or Letter the ranked table keeps its cost
columns (checked in Chromium when it is installed).
"""
from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpuplan.catalog.catalog import Catalog
from gpuplan.planner import plan_serving, plan_training
from gpuplan.planner.records import PlanResult
from gpuplan.planner.requests import Constraints, ServePlanRequest, TrainPlanRequest
from gpuplan.report import build_report, collect, resolve_format, write_report
from gpuplan.report.html import render_html

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load()


@pytest.fixture(scope="module")
def train(catalog):
    req = TrainPlanRequest(model="llama-3.1-8b", tokens=1e11, limit=12)
    return req, plan_training(req, catalog)


@pytest.fixture(scope="module")
def serve(catalog):
    req = ServePlanRequest(model="llama-3.1-8b", requests_per_s=5, limit=8)
    return req, plan_serving(req, catalog)


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.rows_by_table: dict[str, int] = {}
        self._table: str | None = None
        self._in_body = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "table":
            self._table = a.get("id")
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body and self._table:
            self.rows_by_table[self._table] = self.rows_by_table.get(self._table, 0) + 1

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False


def _parse(text: str) -> _Tags:
    p = _Tags()
    p.feed(text)
    return p


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<(style|svg)\b.*?</\1>", " ", html, flags=re.S)))


def test_html_report_is_self_contained(train, catalog):
    req, result = train
    text = build_report(result, req, catalog, "html")
    tags = _parse(text)
    names = [t for t, _ in tags.tags]
    assert "script" not in names and "link" not in names and "iframe" not in names
    for tag, attrs in tags.tags:
        for key in ("src", "href"):
            assert not attrs.get(key) or attrs[key].startswith("#"), (tag, attrs)
    assert not re.search(r"url\((?!#)", text)  # no fetched CSS resources
    assert names.count("svg") >= 3  # scatter, breakdown, prices by provider


def test_html_report_tables_hold_every_plan_and_the_front(train, catalog):
    req, result = train
    tags = _parse(build_report(result, req, catalog, "html"))
    assert tags.rows_by_table["plan-table"] == len(result.plans)
    assert tags.rows_by_table["pareto-table"] == len(set(result.pareto_ranks))
    text = build_report(result, req, catalog, "html")
    top = result.plans[0]
    assert top.provider_name in text and f"{top.gpu}" in text


def test_report_leads_with_the_recommendation_then_alternatives_assumptions_risks_prices(train, catalog):
    req, result = train
    html = build_report(result, req, catalog, "html")
    order = [html.index(f'id="{s}"') for s in ("recommendation", "alternatives", "assumptions", "risk", "prices")]
    assert order == sorted(order)
    top = result.plans[0]
    first_screen = _text(html[:html.index('id="alternatives"')])
    assert f"Book {top.gpus}× {top.gpu} on {top.provider_name}" in first_screen
    assert f"${top.cost_p10_usd:,.0f} to ${top.cost_p90_usd:,.0f}" in first_screen  # the p10-p90 cost band
    assert "Time" in first_screen and "p10-p90" in first_screen and "as of" in first_screen
    assert "on_demand" not in first_screen
    flips = result.summary.get("flips_first") or []
    if flips:
        assert "What would change the recommendation" in first_screen
    ties = [p for p in result.plans if p.ties_first and p.rank != 1]
    if ties:
        assert f"#{ties[0].rank} {ties[0].provider_name}" in first_screen
    # The request's raw parameters come after, in human units, and only those that apply.
    body = _text(html)
    assert "1e+11" not in body and "100B" in body
    assert "lora rank" not in body.lower()  # a full fine-tune has no LoRA rank
    md = build_report(result, req, catalog, "md")
    sections = [md.index(h) for h in ("## Recommendation", "## Alternatives", "## Assumptions", "## Risks",
                                      "## Price ages")]
    assert sections == sorted(sections)
    assert f"**Book {top.gpus}× {top.gpu} on {top.provider_name}" in md


def test_lora_rank_is_shown_for_lora(catalog):
    req = TrainPlanRequest(model="llama-3.1-8b", tokens=2e8, method="lora", limit=3)
    data = collect(plan_training(req, catalog), req, catalog)
    assert ("lora rank", "16") in data.request and ("training tokens", "200M") in data.request


def test_serve_report_flags_a_slow_answer_and_users_far_from_the_replicas(serve, catalog):
    req, result = serve
    dump = result.model_dump(mode="json")
    dump["plans"][0]["assumptions"]["tpot_ms"] = 180.0
    dump["plans"][0]["network_rtt_ms"] = 85.0
    dump["summary"]["users"] = ["eu", "us-east"]
    data = collect(PlanResult.model_validate(dump), req, catalog)
    assert any("slower than reading speed" in c for c in data.checks)
    assert any("users are in eu, us-east" in c and "replica" in c for c in data.checks)
    html = render_html(data)
    assert html.index("slower than reading speed") < html.index('id="alternatives"')


def test_empty_report_says_no_plan_fits(catalog):
    req = TrainPlanRequest(model="llama-3.1-8b", tokens=1e12, constraints=Constraints(budget_usd=100), limit=5)
    result = plan_training(req, catalog)
    assert not result.plans
    html = build_report(result, req, catalog, "html")
    assert "No plan meets the constraints" in html and "Why the first choice wins" not in html
    assert 'id="plan-table"' not in html
    md = build_report(result, req, catalog, "md")
    assert "No plan meets the constraints" in md


def test_scatter_has_a_point_per_plan_with_a_finite_time(train, catalog):
    req, result = train
    data = collect(result, req, catalog)
    assert len(data.scatter) == len(result.plans)
    assert {p["rank"] for p in data.scatter if p["front"]} == set(result.pareto_ranks)
    parts = dict(data.breakdown)
    assert parts["compute"] == pytest.approx(result.plans[0].cost.compute_usd)


def test_text_from_the_catalog_is_escaped(train, catalog):
    req, result = train
    data = collect(result, req, catalog)
    data.rows[0]["provider"] = '<script>alert("x")</script>'
    data.why.append("<img src=x onerror=alert(1)>")
    data.headline = "<b>x</b>"
    text = render_html(data)
    assert "<script>" not in text and "<img" not in text and "<b>x" not in text
    assert "&lt;script&gt;" in text


def test_markdown_report_has_the_ranked_table(serve, catalog):
    req, result = serve
    text = build_report(result, req, catalog, "md")
    assert text.startswith("# gpuplan serve plan: llama-3.1-8b")
    table = [line for line in text.splitlines() if line.startswith("| ") and "$" in line]
    assert len(table) >= len(result.plans)
    assert "★" in text  # the Pareto front is marked


def test_format_from_suffix_and_refusals():
    assert resolve_format(None, "r.md") == "md"
    assert resolve_format(None, "r.html") == "html"
    assert resolve_format("Markdown") == "md"
    from gpuplan.errors import UsageError

    with pytest.raises(UsageError, match="html or md"):
        resolve_format("pdf")


def test_write_is_atomic_and_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "r.html"
    target.write_text("old report")
    write_report(str(target), "new report")
    assert target.read_text() == "new report"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temp file left
    from gpuplan.errors import UsageError

    with pytest.raises(UsageError, match="does not exist"):
        write_report(str(tmp_path / "missing" / "r.html"), "x")
    with pytest.raises(UsageError, match="directory"):
        write_report(str(tmp_path), "x")


def test_cli_writes_the_report(cli, tmp_path):
    out = tmp_path / "plan.html"
    code, _, err = cli("report", "train", "--model", "llama-3.1-8b", "--tokens", "1e11", "--limit", "5",
                       "--out", str(out))
    assert code == 0, err
    assert "wrote" in err and "5 plans" in err
    assert _parse(out.read_text()).rows_by_table["plan-table"] == 5


def test_cli_report_from_a_plan_file_matches_the_plan(cli, tmp_path):
    """`gpuplan plan serve --json > plan.json`, then `gpuplan report --from plan.json` (HTML and Markdown)."""
    code, out, err = cli("plan", "serve", "--model", "llama-3.1-8b", "--requests-per-s", "5", "--users", "eu,us-east",
                         "--limit", "6", "--json")
    assert code == 0, err
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(out)
    plan = json.loads(out)
    report = tmp_path / "report.html"
    code, _, err = cli("report", "--from", str(plan_file), "--out", str(report))
    assert code == 0, err
    assert "wrote" in err and "6 plans" in err
    html = report.read_text()
    assert _parse(html).rows_by_table["plan-table"] == len(plan["plans"])
    top = plan["plans"][0]
    assert f"Book {top['gpus']}× {top['gpu']} on {top['provider_name']}" in _text(html)
    assert f"read from {plan_file}" in html and f"--from {plan_file} --rank 1" in html
    code, _, err = cli("report", "--from", str(plan_file), "--out", str(tmp_path / "report.md"))
    assert code == 0, err
    assert (tmp_path / "report.md").read_text().startswith("# gpuplan serve plan: llama-3.1-8b")
    # A name from the file is text in Markdown too (Markdown renders raw HTML; the HTML report escapes it).
    plan["plans"][0]["provider_name"] = "<script>alert(1)</script>"
    plan_file.write_text(json.dumps(plan))
    code, _, err = cli("report", "--from", str(plan_file), "--out", str(tmp_path / "evil.md"))
    md = (tmp_path / "evil.md").read_text()
    assert code == 0, err
    assert "<script>" not in md and "&lt;script>alert(1)&lt;/script>" in md


@pytest.mark.parametrize("content,needle", [
    (None, "no such file"),
    ("", "empty"),
    ("{not json", "not JSON"),
    ('{"train": {}, "serve": {}}', "not a plan result"),
    ('{"plans": [{"rank": 1}]}', "invalid plan"),
])
def test_cli_report_from_a_bad_file_is_one_line_and_writes_nothing(cli, tmp_path, content, needle):
    plan_file = tmp_path / "plan.json"
    if content is not None:
        plan_file.write_text(content)
    out = tmp_path / "out"
    out.mkdir()
    code, stdout, err = cli("report", "--from", str(plan_file), "--out", str(out / "r.html"))
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1, err
    assert list(out.iterdir()) == [] and stdout == ""


def test_cli_report_from_needs_out_and_no_subcommand(cli, tmp_path):
    code, _, err = cli("report", "--from", str(tmp_path / "plan.json"))
    assert code == 2 and "--out" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli("report", "--from", "x.json", "train", "--model", "llama-3.1-8b", "--tokens", "1e11",
                       "--out", str(tmp_path / "r.html"))
    assert code == 2 and "--from" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args,needle", [
    (("--out", "{tmp}/nope/r.html"), "does not exist"),
    (("--out", "{tmp}/r.pdf", "--format", "pdf"), "html or md"),
    (("--out", "{tmp}/r.html", "--tokens", "-1"), "--tokens"),
])
def test_cli_bad_input_is_one_line_and_writes_nothing(cli, tmp_path, args, needle):
    base = ["report", "train", "--model", "llama-3.1-8b"]
    if "--tokens" not in args:
        base += ["--tokens", "1e11"]
    code, out, err = cli(*base, *(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


# ---- printed: the cost columns stay on A4 and Letter --------------------------------------------------

def _chromium() -> str | None:
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


# Printable width in CSS px (96/in) with the report's 12 mm @page margins: A4 210 mm, Letter 8.5 in.
PAGES = {"A4": round((210 - 24) / 25.4 * 96), "Letter": round((8.5 * 25.4 - 24) / 25.4 * 96)}
COST_COLUMNS = ("Expected cost", "Cost band p10-p90", "Risk", "Price date", "Confidence")


@pytest.mark.skipif(_chromium() is None, reason="no Chromium found (/usr/bin/chromium or `chromium` on PATH)")
def test_printed_report_keeps_the_cost_columns_on_a4_and_letter(catalog, tmp_path):
    """Laid out with print styles at the printable width of A4 and of Letter, the ranked table ends
    inside the page and every cost column is drawn; the PDFs are kept in test-artifacts/."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    reports = {}
    for name, req, plan in (
        ("train", TrainPlanRequest(model="llama-3.1-8b", tokens=1e12, limit=15), plan_training),
        ("serve", ServePlanRequest(model="llama-3.1-70b", tokens_per_month=5e9, users=["eu", "us-east"],
                                   horizon_months=12, limit=15), plan_serving),
    ):
        path = tmp_path / f"report-{name}.html"
        path.write_text(build_report(plan(req, catalog), req, catalog, "html"))
        reports[name] = path
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium(), headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for name, path in reports.items():
                page.goto(path.as_uri())
                page.emulate_media(media="screen")
                page.set_viewport_size({"width": 1280, "height": 900})
                page.screenshot(path=str(ARTIFACTS / f"report-{name}-top.png"))
                page.emulate_media(media="print")
                for size, width in PAGES.items():
                    page.set_viewport_size({"width": width, "height": 1000})
                    found = page.evaluate("""() => {
                      const table = document.querySelector('#plan-table');
                      const heads = Array.from(table.querySelectorAll('thead th'))
                        .filter((th) => getComputedStyle(th).display !== 'none')
                        .map((th) => [th.textContent, th.getBoundingClientRect().right]);
                      return {page: document.documentElement.clientWidth, right: table.getBoundingClientRect().right,
                              scroll: document.documentElement.scrollWidth, heads};
                    }""")
                    assert found["right"] <= found["page"] + 0.5 and found["scroll"] <= found["page"], (name, size, found)
                    drawn = {h: right for h, right in found["heads"]}
                    for column in COST_COLUMNS:
                        assert column in drawn and drawn[column] <= found["page"] + 0.5, (name, size, column, found)
                    page.pdf(path=str(ARTIFACTS / f"report-{name}-{size.lower()}.pdf"), format=size)
        finally:
            browser.close()


def test_a_report_where_nothing_fits_exits_1_like_plan(cli, tmp_path):
    out = tmp_path / "none.html"
    code, _, err = cli("report", "train", "--model", "llama-3.1-8b", "--tokens", "1e16", "--out", str(out))
    assert code == 1 and "0 plans" in err and out.exists()
