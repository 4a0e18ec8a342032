#!/usr/bin/env python3
"""The live-source canary: call every price source and check what comes back.

    python scripts/check_sources.py                 # every source, real endpoints (needs a network)
    python scripts/check_sources.py --recorded      # the same checks on tests/fixtures/sources (no network)
    python scripts/check_sources.py -s vast -s azure

For each source it asserts the answer's shape (offers came back, every offer validated with a GPU, a
positive price, a source and a date no later than tomorrow, the confidence the source must carry) and
that every price per GPU-hour lies in a plausible band for its GPU, as gpuhunt's integrity tests do
before each publish. It prints one line per source: rows, GPUs, price range, verdict.

Verdicts: PASS; FAIL (the answer came back but a check failed: the source or its parser broke);
ERROR (no usable answer: network, HTTP, shape); SKIP (a key the source needs is not in the
environment, e.g. LAMBDA_API_KEY). Exit status 1 when any source FAILs or ERRORs, else 0.

--recorded serves the recorded payloads (tests/fixtures/sources, README.md there says where each
comes from) through an in-process transport at the sources' real addresses, so the code path is the
one a live refresh takes; nothing leaves the machine.
"""
from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "sources"
sys.path.insert(0, str(ROOT / "src"))

# Plausible price bands, USD per GPU-hour (the check is for parser and unit bugs: a price per node
# read as per GPU, cents read as dollars, a month read as an hour). The H100 band is the one the issue
# gives (gpuhunt's integrity tests use the same kind of bound); the others are its tiers, wide enough
# for a marketplace's cheapest interruptible bid and a hyperscaler's list price.
BANDS: tuple[tuple[tuple[str, ...], float, float], ...] = (
    (("H100", "H200", "H20", "GH200", "B200", "B300", "GB200", "GB300", "MI300X", "MI325X", "MI355X"), 0.5, 15.0),
    (("A100", "A800", "L40", "A40", "RTX-A6000", "RTX-6000-Ada", "RTX-PRO-6000", "L4", "A10", "V100"), 0.05, 15.0),
)
DEFAULT_BAND = (0.01, 15.0)
# The confidence each kind of source must write.
AGGREGATED_PREFIXES = ("skypilot:", "gpuhunt:")


def band_for(gpu: str) -> tuple[float, float]:
    for prefixes, lo, hi in BANDS:
        if gpu.startswith(prefixes):
            return lo, hi
    return DEFAULT_BAND


@dataclass
class Check:
    source: str
    verdict: str = "PASS"
    rows: int = 0
    gpus: set[str] = field(default_factory=set)
    lo: float | None = None
    hi: float | None = None
    problems: list[str] = field(default_factory=list)

    def fail(self, why: str) -> None:
        self.verdict = "FAIL"
        self.problems.append(why)

    def row(self) -> dict[str, str]:
        rng = "-" if self.lo is None else f"${self.lo:.2f}-${self.hi:.2f}"
        return {"source": self.source, "rows": str(self.rows), "GPUs": str(len(self.gpus)), "price range": rng,
                "verdict": self.verdict, "why": "; ".join(self.problems)[:160]}


def check_result(name: str, result, today: dt.date) -> Check:
    """The shape and price-band assertions on one source's offers."""
    c = Check(name, rows=len(result.offers))
    if not result.offers:
        c.fail(f"no offers ({result.raw_rows} rows read, {result.rows_skipped} skipped)")
        return c
    want = "aggregated" if name.startswith(AGGREGATED_PREFIXES) else "live"
    out_of_band: dict[str, list[float]] = {}
    for o in result.offers:
        c.gpus.add(o.gpu)
        p = o.price_per_gpu_hour_usd
        c.lo = p if c.lo is None else min(c.lo, p)
        c.hi = p if c.hi is None else max(c.hi, p)
        lo, hi = band_for(o.gpu)
        if not lo <= p <= hi:
            out_of_band.setdefault(o.gpu, []).append(p)
        if abs(o.price_per_hour_usd / o.gpus_per_node - p) > 1e-6 * max(1.0, p):
            c.fail(f"{o.instance_type}: per-GPU price is not node price / GPUs")
        if o.as_of > today + dt.timedelta(days=1):
            c.fail(f"{o.instance_type}: dated in the future ({o.as_of})")
        if not o.source.strip():
            c.fail(f"{o.instance_type}: no source")
    confidences = {o.confidence for o in result.offers}
    if name.startswith("skypilot:") and confidences <= {"third-party"}:
        pass  # upstream date unknown: SkyPilot rows are then marked third-party, by design
    elif confidences != {want}:
        c.fail(f"confidence {sorted(confidences)}, expected {want!r}")
    for gpu, prices in sorted(out_of_band.items()):
        lo, hi = band_for(gpu)
        c.fail(f"{gpu}: {len(prices)} price(s) outside ${lo:g}-${hi:g}/GPU-h (e.g. ${prices[0]:.4g})")
    return c


# ---- recorded payloads ------------------------------------------------------------------------
def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _gpuhunt_zip(slug: str, csv_name: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{slug}.csv", _fixture(csv_name))
    return buf.getvalue()


RECORDED_SOURCES = ("vast", "runpod", "azure", "vultr", "lambda", "skypilot:lambda", "gpuhunt:gcp", "gpuhunt:runpod")
GPUHUNT_VERSION = "20261121-0105"  # the build the recorded gpuhunt rows stand for (README.md)


def recorded_transport():
    """An httpx transport answering the sources' real addresses with the recorded payloads."""
    import httpx

    def answer(req: httpx.Request) -> httpx.Response:
        host, path, query = req.url.host, req.url.path, req.url.query.decode("ascii", "replace")
        if host == "console.vast.ai" and path == "/api/v0/bundles/":
            return httpx.Response(200, content=_fixture("vast_bundles.json"))
        if host == "api.runpod.io" and path == "/graphql":
            return httpx.Response(200, content=_fixture("runpod_gputypes_stock.json"))
        if host == "prices.azure.com" and path == "/api/retail/prices":
            page = "azure_real_page2.json" if "skip=1000" in query else "azure_real_page1.json"
            return httpx.Response(200, content=_fixture(page))
        if host == "api.vultr.com" and path == "/v2/plans-metal":
            page2 = "cursor=bmV4dF9f" in query
            return httpx.Response(200, content=_fixture(f"vultr_plans_metal_page{2 if page2 else 1}.json"))
        if host == "api.vultr.com" and path == "/v2/plans":
            page2 = "cursor=cursor-page-2" in query
            return httpx.Response(200, content=_fixture(f"vultr_plans_page{2 if page2 else 1}.json"))
        if host == "cloud.lambda.ai" and path == "/api/v1/instance-types":
            return httpx.Response(200, content=_fixture("lambda_openapi_example.json"))
        if host == "raw.githubusercontent.com" and path.endswith("/sky/skylet/constants.py"):
            return httpx.Response(200, content=b"CATALOG_SCHEMA_VERSION = 'v8'\n")
        if host == "raw.githubusercontent.com" and path.endswith("/catalogs/v8/lambda/vms.csv"):
            return httpx.Response(200, content=_fixture("skypilot_v8_lambda_vms.csv"),
                                  headers={"Last-Modified": "Tue, 18 Nov 2025 07:21:09 GMT"})
        if host == "dstack-gpu-pricing.s3.eu-west-1.amazonaws.com":
            for slug in ("gcp", "runpod"):
                if path == f"/v3/{slug}/version":
                    return httpx.Response(200, content=f"{GPUHUNT_VERSION}\n".encode())
                if path == f"/v3/{slug}/{GPUHUNT_VERSION}/catalog.zip":
                    return httpx.Response(200, content=_gpuhunt_zip(slug, f"gpuhunt_{slug}.csv"))
        return httpx.Response(404, content=b'{"error": "no recorded payload"}')

    return httpx.MockTransport(answer)


# ---- running ----------------------------------------------------------------------------------
def run(names: list[str], recorded: bool) -> list[Check]:
    import httpx

    from gpuplan.catalog.secrets import get_secret
    from gpuplan.catalog.sources import SourceError, get_source
    from gpuplan.catalog.sources.http import HttpSettings, make_client
    from gpuplan.catalog.store import scrub
    from gpuplan.errors import GpuplanError

    today = dt.datetime.now(dt.timezone.utc).date()
    if recorded:
        client = httpx.Client(transport=recorded_transport())
        client.gpuplan_settings = HttpSettings(timeout_s=5, retries=0)  # type: ignore[attr-defined]
    else:
        client = make_client()
    out = []
    try:
        for name in names:
            src = get_source(name)
            if recorded and name == "lambda":
                from gpuplan.catalog.sources.lambdalabs import LambdaSource
                src = LambdaSource(api_key="recorded-payload")  # no key is sent anywhere: the transport answers
            elif src.needs_key and not get_secret(src.needs_key):
                out.append(Check(name, verdict="SKIP", problems=[f"no API key (set {src.needs_key})"]))
                continue
            try:
                result = src.fetch(client)
            except (SourceError, GpuplanError) as e:
                out.append(Check(name, verdict="ERROR", problems=[scrub(str(e))]))
                continue
            except Exception as e:  # noqa: BLE001 - a parser bug is exactly what the canary is for
                out.append(Check(name, verdict="FAIL", problems=[f"{type(e).__name__} while parsing: {scrub(str(e))[:100]}"]))
                continue
            out.append(check_result(name, result, today))
    finally:
        client.close()
    return out


def print_table(rows: list[dict[str, str]]) -> None:
    cols = ["source", "rows", "GPUs", "price range", "verdict", "why"]
    width = {c: max(len(c), *(len(r[c]) for r in rows)) for c in cols}
    print("  ".join(c.ljust(width[c]) for c in cols).rstrip())
    print("  ".join("-" * width[c] for c in cols))
    for r in rows:
        print("  ".join(r[c].ljust(width[c]) for c in cols).rstrip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recorded", action="store_true", help="check the recorded payloads in tests/fixtures (no network)")
    ap.add_argument("-s", "--source", action="append", help="only these sources (repeatable; default: all)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    from gpuplan.catalog.sources import all_source_names
    from gpuplan.errors import GpuplanError

    names = args.source or (list(RECORDED_SOURCES) if args.recorded else all_source_names())
    if args.recorded:
        unknown = [n for n in names if n not in RECORDED_SOURCES]
        if unknown:
            print(f"error: no recorded payload for {', '.join(unknown)}; recorded: {', '.join(RECORDED_SOURCES)}",
                  file=sys.stderr)
            return 2
    try:
        checks = run(names, args.recorded)
    except GpuplanError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows = [c.row() for c in checks]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print_table(rows)
        counts = {v: sum(c.verdict == v for c in checks) for v in ("PASS", "FAIL", "ERROR", "SKIP")}
        print(f"\n{'recorded payloads' if args.recorded else 'live endpoints'}: "
              + ", ".join(f"{n} {v.lower()}" for v, n in counts.items() if n))
    return 1 if any(c.verdict in ("FAIL", "ERROR") for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
