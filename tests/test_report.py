"""`gpuplan report`: a self-contained HTML report (inline CSS and SVG, no scripts, nothing fetched)
and a Markdown one, written atomically; both lay out exactly what the planner returned."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from gpuplan.catalog.catalog import Catalog
from gpuplan.planner import plan_serving, plan_training
from gpuplan.planner.requests import ServePlanRequest, TrainPlanRequest
from gpuplan.report import build_report, collect, resolve_format, write_report
from gpuplan.report.html import render_html


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
    text = render_html(data)
    assert "<script>" not in text and "<img" not in text
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
