"""Advisors: `gpuplan size | testtime | apis | own-vs-rent | thresholds | breakeven`.

Presentation only: the numbers come from gpuplan.economics.{scaling_laws, testtime,
api_prices, ownership, thresholds, breakeven} (and gpuplan.perf.capacity for break-even).
"""
from __future__ import annotations

import math
from typing import Annotated, Optional

import typer

from gpuplan.cli.app import app
from gpuplan.cli.options import CsvOpt, DbOpt, JsonOpt

LawsOpt = Annotated[Optional[str], typer.Option("--laws", help="Scaling-law constants: epoch (default for --compute), sardana (default for --quality-of/--loss), hoffmann, hoffmann-rounded.")]


def _sci(v: float | None, unit: str = "") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.4g}{unit}"


def _human(v: float | None) -> str:
    """1.2e10 -> 12.0B."""
    if v is None or not math.isfinite(v):
        return "-"
    for div, suf in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suf}"
    return f"{v:.3g}"


# ---- size ----------------------------------------------------------------------------------

@app.command("size")
def size_command(
    compute: Annotated[Optional[str], typer.Option("--compute", help="Training FLOP budget (e.g. 1e23): Chinchilla compute-optimal size.")] = None,
    quality_of: Annotated[Optional[str], typer.Option("--quality-of", help="Match the loss of a Chinchilla-optimal model of this many params (e.g. 13B).")] = None,
    loss: Annotated[Optional[float], typer.Option("--loss", help="Target pre-training loss instead of --quality-of.")] = None,
    inference_tokens: Annotated[Optional[str], typer.Option("--inference-tokens", help="Lifetime inference tokens (e.g. 2T).")] = None,
    laws: LawsOpt = None,
    train_price: Annotated[Optional[float], typer.Option("--train-price-per-gpu-hour", help="Cost-weighted optimum: training $/GPU-h.")] = None,
    inference_price: Annotated[Optional[float], typer.Option("--inference-price-per-gpu-hour", help="Cost-weighted optimum: inference $/GPU-h.")] = None,
    train_mfu: Annotated[Optional[float], typer.Option("--train-mfu", help="Training MFU (default 0.5).")] = None,
    inference_mfu: Annotated[Optional[float], typer.Option("--inference-mfu", help="Sets both prefill and decode MFU.")] = None,
    prefill_mfu: Annotated[Optional[float], typer.Option("--prefill-mfu", help="Prefill MFU (default 0.5).")] = None,
    decode_mfu: Annotated[Optional[float], typer.Option("--decode-mfu", help="Decode MFU (default 0.01).")] = None,
    input_share: Annotated[Optional[float], typer.Option("--input-share", help="Share of inference tokens that are input (default 70/285).")] = None,
    cost: Annotated[bool, typer.Option("--cost", help="Optimise lifetime dollars with the default cost model.")] = False,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Compute-optimal model size, or the inference-aware optimum (Sardana et al. 2024)."""
    from gpuplan.errors import UsageError
    from gpuplan.units import parse_quantity

    modes = [x is not None for x in (compute, quality_of, loss)]
    if sum(modes) != 1:
        raise UsageError("give exactly one of --compute, --quality-of and --loss")
    if compute is not None:
        if inference_tokens is not None:
            raise UsageError("--inference-tokens goes with --quality-of or --loss, not --compute")
        _size_compute(parse_quantity(compute, "--compute"), laws, as_json, as_csv)
        return
    if inference_tokens is None:
        raise UsageError("--inference-tokens is required with --quality-of/--loss (use 0 for plain Chinchilla)")
    from gpuplan.economics.scaling_laws import CostModel, size_for_loss, size_for_quality_of

    d_inf = parse_quantity(inference_tokens, "--inference-tokens", allow_zero=True)
    cost_opts = dict(train_usd_per_gpu_hour=train_price, inference_usd_per_gpu_hour=inference_price,
                     train_mfu=train_mfu, prefill_mfu=prefill_mfu if prefill_mfu is not None else inference_mfu,
                     decode_mfu=decode_mfu if decode_mfu is not None else inference_mfu, input_share=input_share)
    cost_model = CostModel.defaults(**cost_opts) if (cost or any(v is not None for v in cost_opts.values())) else None
    if quality_of is not None:
        res = size_for_quality_of(parse_quantity(quality_of, "--quality-of"), d_inf, laws=laws, cost=cost_model)
    else:
        res = size_for_loss(loss, d_inf, laws=laws, cost=cost_model)
    from gpuplan.economics.thresholds import exceeded_active

    out = res.model_dump()
    out["thresholds_exceeded"] = [c.model_dump() for c in exceeded_active(res.training_flops)]
    if as_json or as_csv:
        from gpuplan.cli.output import print_json

        print_json(out, as_csv)
        return
    from gpuplan.cli.output import print_table

    c, o = res.chinchilla, res.optimum
    rows = [{"": "params", "chin": _human(c.params), "opt": _human(o.params)},
            {"": "training tokens", "chin": _human(c.tokens), "opt": _human(o.tokens)},
            {"": "tokens / param", "chin": f"{c.tokens_per_param:.1f}", "opt": f"{o.tokens_per_param:.1f}"},
            {"": "training FLOPs", "chin": _sci(c.training_flops), "opt": _sci(o.training_flops)},
            {"": "inference FLOPs", "chin": _sci(c.inference_flops), "opt": _sci(o.inference_flops)},
            {"": "lifetime FLOPs", "chin": _sci(c.total_flops), "opt": _sci(o.total_flops)}]
    if res.objective == "usd":
        rows.append({"": "lifetime cost", "chin": f"${c.total_usd:,.0f}", "opt": f"${o.total_usd:,.0f}"})
    target = f"quality of a Chinchilla-optimal {_human(res.quality_of_params)} model" if res.quality_of_params else f"loss {res.loss:.4f}"
    print_table(rows, [("", ""), ("chin", "Chinchilla-optimal"), ("opt", "lifetime-optimal")],
                title=f"{target} (loss {res.loss:.4f}), {_human(res.inference_tokens)} inference tokens, laws={res.laws}")
    if res.flops_saved >= 0:
        typer.echo(f"saves {res.flops_saved:.4g} FLOPs ({res.savings_fraction:.2%} of lifetime FLOPs)")
    else:  # a dollar optimum may spend more FLOPs where they are cheaper (training vs decode)
        typer.echo(f"uses {-res.flops_saved:.4g} more FLOPs ({-res.savings_fraction:.2%} of lifetime FLOPs) "
                   "where they cost less")
    if res.usd_savings_fraction is not None:
        typer.echo(f"saves ${res.usd_saved:,.0f} ({res.usd_savings_fraction:.2%} of lifetime cost); "
                   f"inference weighted as {_human(res.effective_inference_tokens)} effective tokens")
    typer.echo(f"laws: {res.laws} ({res.laws_source})")
    if res.laws_note:
        typer.echo(f"note: {res.laws_note}")
    for t in out["thresholds_exceeded"]:
        typer.echo(f"threshold: training FLOPs exceed {t['name']} ({t['threshold_flops']:.0e})")


def _size_compute(flops: float, laws: str | None, as_json: bool, as_csv: bool = False) -> None:
    from gpuplan.economics.scaling_laws import list_laws, size_for_compute
    from gpuplan.economics.thresholds import exceeded_active

    res = size_for_compute(flops, laws)
    others = {k: size_for_compute(flops, k) for k in list_laws() if k != res.laws}
    out = res.model_dump()
    out["training_flops"] = flops  # as asked: 6·N·D of the rounded optimum may differ in the last digits
    # the compute-optimal point is its own Chinchilla reference: nothing saved, no inference counted
    out.update(flops_saved=0.0, savings_fraction=0.0,
               chinchilla={"params": res.params, "tokens": res.tokens, "training_flops": res.training_flops})
    out["other_laws"] = {k: {"params": v.params, "tokens": v.tokens, "tokens_per_param": v.tokens_per_param}
                         for k, v in others.items()}
    out["thresholds_exceeded"] = [c.model_dump() for c in exceeded_active(flops)]
    if as_json or as_csv:
        from gpuplan.cli.output import print_json

        print_json(out, as_csv)
        return
    from gpuplan.cli.output import print_table

    rows = [{"laws": res.laws + " (used)", "params": _human(res.params), "tokens": _human(res.tokens),
             "tpp": f"{res.tokens_per_param:.1f}", "loss": f"{res.loss:.4f}"}]
    rows += [{"laws": k, "params": _human(v.params), "tokens": _human(v.tokens), "tpp": f"{v.tokens_per_param:.1f}",
              "loss": f"{v.loss:.4f}"} for k, v in others.items()]
    print_table(rows, [("laws", "constants"), ("params", "params"), ("tokens", "tokens"), ("tpp", "tokens/param"),
                       ("loss", "loss")], title=f"compute-optimal for {flops:.3g} FLOPs (C = 6·N·D)")
    for t in out["thresholds_exceeded"]:
        typer.echo(f"threshold: {flops:.3g} FLOPs exceeds {t['name']} ({t['threshold_flops']:.0e})")


# ---- testtime ------------------------------------------------------------------------------

TESTTIME_TABLE_ROWS = 50  # a 200k-query file is a summary and the first rows, not minutes of table

@app.command("testtime")
def testtime_command(
    queries_file: Annotated[str, typer.Argument(help="CSV or JSON: id, p_success (or difficulty), optional cost per attempt.")],
    budget: Annotated[str, typer.Option("--budget", help="Total budget, in the unit of the cost column (attempts when no cost).")],
    ability: Annotated[float, typer.Option("--ability", help="Solver ability θ for difficulty → p (2PL logistic).")] = 0.0,
    discrimination: Annotated[float, typer.Option("--discrimination", help="Slope a of the 2PL logistic.")] = 1.0,
    limit: Annotated[int, typer.Option("--limit", help="Table rows to show, in file order (0 = all); --json always has every query.")] = TESTTIME_TABLE_ROWS,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Attempts per query that maximise expected solved queries within a budget."""
    from gpuplan.economics.testtime import allocate_attempts, load_queries
    from gpuplan.errors import UsageError
    from gpuplan.units import parse_quantity

    if limit < 0:
        raise UsageError(f"--limit must be 0 (all rows) or more, got {limit}")
    b = parse_quantity(budget, "--budget")
    qs = load_queries(queries_file, ability=ability, discrimination=discrimination)
    res = allocate_attempts(qs, b)
    if as_json:
        from gpuplan.cli.output import print_json

        print_json(res)
        return
    if as_csv:  # every query, like --json
        from gpuplan.cli.output import print_csv

        print_csv([r.model_dump() for r in res.queries])
        return
    from gpuplan.cli.output import print_table

    shown = res.queries if limit == 0 else res.queries[:limit]
    more = len(res.queries) - len(shown)
    rows = [r.model_dump() for r in shown]
    print_table(rows, [("id", "query"), ("p_success", "p/attempt"), ("cost", "cost"), ("attempts", "attempts"),
                       ("p_solved", "P(solved)"), ("uniform_attempts", "uniform"), ("uniform_p_solved", "P uniform")],
                title=f"{res.n_queries} queries, budget {res.budget:g} ({res.method}{'' if res.optimal else ', approximate'})",
                formatters={"p_success": lambda v: f"{v:.3f}", "p_solved": lambda v: f"{v:.3f}",
                            "uniform_p_solved": lambda v: f"{v:.3f}"},
                caption=(f"first {len(shown):,} of {res.n_queries:,} queries; {more:,} more not shown "
                         "(--limit 0 shows all, --json prints every query)") if more else None)
    typer.echo(f"expected solved: {res.expected_solved:.3f} of {res.n_queries} "
               f"(uniform: {res.uniform_expected_solved:.3f}, {(res.gain_vs_uniform if abs(res.gain_vs_uniform) >= 5e-4 else 0.0):+.3f}); spent {res.spent:g} of {res.budget:g}")
    typer.echo(f"note: {res.assumptions['caveat']}")


# ---- apis ----------------------------------------------------------------------------------

@app.command("apis")
def apis_command(
    provider: Annotated[Optional[str], typer.Option("--provider", help="Only this API provider (e.g. together, openai).")] = None,
    model_like: Annotated[Optional[str], typer.Option("--model-like", help="Model substring or gpuplan preset id (e.g. 70b, llama-3.3-70b).")] = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Hosted-API token prices, with their date and age."""
    from gpuplan.cli.output import emit, fmt_usd
    from gpuplan.economics.api_prices import list_api_prices

    from gpuplan.catalog.records import STALE_AFTER_DAYS

    # stale = older than the catalog's limit, the one breakeven warns at and the planner ranks GPU prices by
    rows = [p.as_row() for p in list_api_prices(provider=provider, model_like=model_like)]
    emit(rows, [("id", "id"), ("open_model", "open model"), ("input_usd_per_mtok", "$/M in"),
                ("output_usd_per_mtok", "$/M out"), ("as_of", "as of"), ("age_days", "age (d)"), ("stale", "stale")],
         as_json=as_json, as_csv=as_csv,
         title=f"API prices ({len(rows)}; {sum(r['stale'] for r in rows)} older than {STALE_AFTER_DAYS} days)",
         formatters={"input_usd_per_mtok": fmt_usd, "output_usd_per_mtok": fmt_usd})


# ---- own-vs-rent ---------------------------------------------------------------------------

@app.command("own-vs-rent")
def own_vs_rent_command(
    gpu: Annotated[str, typer.Option("--gpu", help="GPU type, e.g. H100.")],
    purchase_usd: Annotated[Optional[float], typer.Option("--purchase-usd", help="GPU purchase price, USD (server and interconnect added).")] = None,
    life_years: Annotated[Optional[float], typer.Option("--life-years", help="Straight-line depreciation life (default 4).")] = None,
    depreciation: Annotated[Optional[str], typer.Option("--depreciation", help="straight-line (default) or epoch (0.322/yr).")] = None,
    utilization: Annotated[Optional[float], typer.Option("--utilization", help="Share of hours the owned GPU does useful work (default 0.6).")] = None,
    power_usd_per_kwh: Annotated[Optional[float], typer.Option("--power-usd-per-kwh", help="Electricity price (default 0.075).")] = None,
    pue: Annotated[Optional[float], typer.Option("--pue", help="Data-centre PUE (default 1.25).")] = None,
    ops_usd_per_gpu_hour: Annotated[Optional[float], typer.Option("--ops-usd-per-gpu-hour", help="Staff, maintenance, networking opex per GPU-hour (default 0: no sourced figure).")] = None,
    colocation: Annotated[Optional[float], typer.Option("--colocation-usd-per-kw-month", help="Colocation rent per kW of provisioned server power (default 184.06: CBRE H2 2024 primary-market average).")] = None,
    residual_fraction: Annotated[Optional[float], typer.Option("--residual-fraction", help="Resale value at end of life, share of capex.")] = None,
    interest_rate: Annotated[Optional[float], typer.Option("--interest-rate", help="Cost of capital per year (default 0.075: US bank prime rate, a floor).")] = None,
    rent: Annotated[Optional[list[float]], typer.Option("--rent-usd-per-gpu-hour", help="Rental price to compare (repeatable); default: cheapest and median provider of the pool breakeven prices from (hyperscaler/neocloud on-demand, <= 180 days old, one vote per provider).")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Amortised $/GPU-hour of owning vs renting; break-even utilisation and payback."""
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.errors import UsageError
    from gpuplan.economics.ownership import own_vs_rent

    g = get_gpu(gpu)
    if rent:
        rents: dict[str, float] | list[float] = {f"given ${r:g}/h": r for r in rent} if len(set(rent)) == len(rent) else list(rent)
        rent_source, rent_basis = "given", None
    else:
        from gpuplan.catalog.catalog import Catalog
        from gpuplan.economics.self_host import catalog_rents

        rents, rent_source, rent_basis = catalog_rents(g.id, Catalog.load(db))  # the catalog --db chose
        if not rents:
            raise UsageError(f"no on-demand {g.id} offers in the catalog; pass --rent-usd-per-gpu-hour")
    res = own_vs_rent(g.id, rents, purchase_usd=purchase_usd, utilization=utilization, life_years=life_years,
                      depreciation=depreciation, residual_fraction=residual_fraction,
                      interest_rate_per_year=interest_rate, power_usd_per_kwh=power_usd_per_kwh, pue=pue,
                      ops_usd_per_gpu_hour=ops_usd_per_gpu_hour, colocation_usd_per_kw_month=colocation)
    if as_json:
        from gpuplan.cli.output import print_json

        print_json({**res.model_dump(), "rent_source": rent_source, "rent_basis": rent_basis})
        return
    if as_csv:  # one row per rental price compared
        from gpuplan.cli.output import print_csv

        print_csv([{"gpu": res.gpu, "owned_usd_per_gpu_hour": res.owned_usd_per_gpu_hour, **c.model_dump(),
                    "rent_source": rent_source} for c in res.comparisons])
        return
    from gpuplan.cli.output import fmt_usd, print_table

    dated = ("given" if res.purchase_source == "given" else
             f"price as of {res.purchase_as_of_note}: {res.purchase_age_days} days old" if res.purchase_as_of
             else "price undated")
    typer.echo(f"{res.gpu}: ${res.purchase_usd:,.0f} GPU ({dated}) → ${res.capex_usd:,.0f} with server and "
               f"interconnect; {res.depreciation} over {res.life_years:g} y")
    a = res.assumptions
    typer.echo(f"assumptions: cost of capital {a['interest_rate_per_year']:.1%}/year [--interest-rate]; colocation "
               f"${a['colocation_usd_per_kw_month']:,.2f}/kW-month x {a['colocation_kw_per_gpu']:.2f} kW/GPU "
               f"[--colocation-usd-per-kw-month]; power ${a['usd_per_kwh']:g}/kWh, PUE {a['pue']:g} "
               f"[--power-usd-per-kwh, --pue]; other ops ${res.ops_usd_per_hour:g}/GPU-h [--ops-usd-per-gpu-hour]")
    typer.echo(f"rent compared: {rent_source}")
    typer.echo(f"owned: ${res.capex_usd_per_hour:.3f} capex + ${res.power_usd_per_hour:.3f} power + "
               f"${res.colocation_usd_per_hour:.3f} colocation + "
               f"${res.ops_usd_per_hour:.3f} ops = ${res.owned_usd_per_hour:.3f} per installed hour; "
               f"${res.owned_usd_per_gpu_hour:.3f} per useful hour at {res.utilization:.0%} utilisation")
    rows = [c.model_dump() for c in res.comparisons]
    print_table(rows, [("label", "rent"), ("rent_usd_per_gpu_hour", "$/GPU-h"), ("owned_cheaper", "own wins"),
                       ("breakeven_utilization", "break-even util"), ("payback_months", "payback (months)"),
                       ("savings_usd_per_month", "own saves $/month/GPU")],
                title="own vs rent" + (" (given rents)" if rent_basis is None else ""),
                formatters={"rent_usd_per_gpu_hour": fmt_usd, "savings_usd_per_month": fmt_usd,
                            "breakeven_utilization": lambda v: f"{v:.0%}" if v <= 1 else f"{v:.0%} (never)",
                            "payback_months": lambda v: "never" if v is None else f"{v:.1f}"})
    for c in res.caveats:
        typer.echo(f"note: {c}")


# ---- thresholds ----------------------------------------------------------------------------

@app.command("thresholds")
def thresholds_command(
    flops: Annotated[Optional[str], typer.Option("--flops", help="Training FLOPs to check (e.g. 3.8e25).")] = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Regulatory training-compute thresholds (EU AI Act, California SB 53, US EO 14110), as information."""
    from gpuplan.economics.thresholds import check_thresholds, list_thresholds
    from gpuplan.units import parse_quantity

    if flops is not None:
        rows = [c.model_dump() for c in check_thresholds(parse_quantity(flops, "--flops", allow_zero=True))]
    else:
        rows = [t.model_dump() for t in list_thresholds()]
    if as_json:
        from gpuplan.cli.output import print_json

        print_json(rows)
        return
    if as_csv:
        from gpuplan.cli.output import print_csv

        print_csv(rows)
        return
    from gpuplan.cli.output import print_table

    cols = [("name", "rule"), ("threshold_flops", "FLOPs >"), ("status", "status"), ("effective_date", "effective"),
            ("verified", "verified")]
    if flops is not None:
        cols[2:2] = [("exceeded", "exceeded"), ("ratio", "ratio")]
    print_table(rows, cols, title="training-compute thresholds (information, not legal advice)",
                formatters={"threshold_flops": lambda v: f"{v:.0e}", "ratio": lambda v: f"{v:.3g}"})


# ---- breakeven -----------------------------------------------------------------------------

@app.command("breakeven")
def breakeven_command(
    model: Annotated[str, typer.Option("--model", "-m", help="Preset id (e.g. llama-3.3-70b) or a config.json path.")],
    tokens_per_month: Annotated[str, typer.Option("--tokens-per-month", help="Input + output tokens per month (e.g. 5B), the monthly average.")],
    input_share: Annotated[float, typer.Option("--input-share", help="Share of tokens that are input (prompt).")] = 0.5,
    api: Annotated[Optional[list[str]], typer.Option("--api", help="API to compare (repeatable), e.g. together/llama-3.3-70b-instruct-turbo; default: every API serving the model, plus the nearest open models up to 5.")] = None,
    gpu: Annotated[str, typer.Option("--gpu", help="GPU type to self-host on.")] = "H100-SXM",
    price_per_gpu_hour: Annotated[Optional[float], typer.Option("--price-per-gpu-hour", help="$ per GPU-hour (default: median on-demand price of hyperscaler/neocloud offers in the catalog, one vote per provider).")] = None,
    peak_factor: Annotated[Optional[float], typer.Option("--peak-factor", help="Peak traffic over the monthly average; replicas are sized to the peak (default 2.0: interactive traffic peaks ~2x its daily mean; 1 = flat).")] = None,
    eng_usd_per_month: Annotated[Optional[float], typer.Option("--eng-usd-per-month", help="Engineering/operations cost of self-hosting, $/month (default 8000: ~0.4 FTE at a loaded $240k/yr; 0 allowed).")] = None,
    max_tpot_ms: Annotated[Optional[float], typer.Option("--max-tpot-ms", help="Time-per-output-token target, ms (default 50 for interactive serving).")] = None,
    max_ttft_ms: Annotated[Optional[float], typer.Option("--max-ttft-ms", help="Time-to-first-token target, ms (default 2000 for interactive serving).")] = None,
    offline: Annotated[bool, typer.Option("--offline", help="No latency target: capacity at max throughput (batch work; add --peak-factor 1 / --no-redundancy if the traffic is flat and can wait).")] = False,
    no_redundancy: Annotated[bool, typer.Option("--no-redundancy", help="No spare replica (default: N+1, so at least 2 replicas).")] = False,
    output_len: Annotated[str, typer.Option("--output-len", help="Output tokens per request (input length follows from --input-share).")] = "1000",
    precision: Annotated[str, typer.Option("--precision", help="Weights: bf16, fp8, int4 ...")] = "bf16",
    engine: Annotated[str, typer.Option("--engine", help="vllm, sglang or trtllm.")] = "vllm",
    target_utilization: Annotated[float, typer.Option("--target-utilization", help="Load each replica to at most this share of its capacity at the peak.")] = 0.8,
    db: DbOpt = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Self-host vs API: monthly cost, break-even volume and utilisation, cost-vs-volume chart.

    Defaults are those of production interactive serving, each printed with its reason and
    overridable: a reliable on-demand GPU price, peak factor 2, $8,000/month operations,
    TPOT <= 50 ms and TTFT <= 2 s, and N+1 replicas.
    """
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.cli.options import build_request
    from gpuplan.planner.requests import BreakevenRequest, breakeven

    req = build_request(BreakevenRequest,
        model=model, tokens_per_month=tokens_per_month, input_share=input_share, api=api, gpu=gpu,
        price_per_gpu_hour=price_per_gpu_hour, output_len=output_len, precision=precision, engine=engine,
        max_ttft_ms=max_ttft_ms, max_tpot_ms=max_tpot_ms, offline=offline, target_utilization=target_utilization,
        eng_usd_per_month=eng_usd_per_month, peak_factor=peak_factor, redundancy=not no_redundancy)
    out = breakeven(req, Catalog.load(db))  # the request and answer of POST /api/breakeven
    if as_json:
        from gpuplan.cli.output import print_json

        print_json(out)
        return
    if as_csv:
        from gpuplan.cli.output import print_csv

        print_csv(out["comparisons"])
        return
    from gpuplan.cli.output import fmt_usd, print_table

    for w in out.get("warnings", []):
        typer.echo(w)
    host = out["self_host"]
    spare = f" + {host['spare_replicas']} spare" if host["spare_replicas"] else ""
    typer.echo(f"self-host {out['model']} on {out['gpu']}: {host['serving_replicas']} replica(s){spare} of "
               f"{host['gpus_per_replica']} GPU(s) at ${out['price_per_gpu_hour_usd']:.2f}/GPU-h = "
               f"${host['unit_usd_per_month']:,.0f}/month per replica + ${host['eng_usd_per_month']:,.0f}/month "
               f"operations = ${out['self_host_usd_per_month']:,.0f}/month; one replica serves "
               f"{_human(host['capacity_tokens_per_month_per_replica'])} tokens/month at 100 % "
               f"(${host['usd_per_mtok_at_full']:.3f}/M tokens), {_human(host['average_capacity_tokens_per_month_per_replica'])} "
               f"on average when sized to the peak")
    typer.echo("assumptions (defaults unless given; override with the flag shown):")
    for d in out["defaults"]:
        typer.echo(f"  {d['name']}: {_default_value(d, host)} [{d['flag']}]; {d['reason']}")
    if out.get("price_basis"):
        typer.echo(f"  GPU price basis: {out['price_source']}")
    rows = [{**c, "breakeven_utilisation": None if c["breakeven_tokens_per_month"] is None else c["breakeven_utilisation"]}
            for c in out["comparisons"]]
    print_table(rows, [
        ("api", "API"), ("same_model", "same model"), ("api_usd_per_mtok", "$/M blended"),
        ("api_usd_per_month", "API $/month"), ("self_host_usd_per_month", "self-host $/month"),
        ("cheaper", "cheaper"), ("breakeven_tokens_per_month", "break-even tok/month"),
        ("breakeven_utilisation", "break-even util"), ("price_age_days", "price age (d)")],
        title=f"{_human(out['tokens_per_month'])} tokens/month, {out['input_share']:.0%} input",
        formatters={"api_usd_per_mtok": lambda v: f"${v:.3f}", "api_usd_per_month": fmt_usd,
                    "self_host_usd_per_month": fmt_usd,
                    "breakeven_tokens_per_month": lambda v: "never" if v is None else _human(v),
                    "breakeven_utilisation": lambda v: "-" if v is None else f"{v:.0%}"})
    if out.get("sensitivity"):
        apis = list(out["sensitivity"][0]["breakeven_tokens_per_month"])
        srows = [{"change": r["change"], "gpus": f"{r['replicas']}x{r['gpus_per_replica']}",
                  "self_host_usd_per_month": r["self_host_usd_per_month"],
                  **{f"be{i}": r["breakeven_tokens_per_month"][a] for i, a in enumerate(apis)}}
                 for r in out["sensitivity"]]
        be_fmt = lambda v: "never" if v is None else _human(v)  # noqa: E731
        print_table(srows, [("change", "assumption relaxed"), ("gpus", "replicas x GPUs"),
                            ("self_host_usd_per_month", "self-host $/month"),
                            *[(f"be{i}", f"break-even vs {a.split('/')[0]}") for i, a in enumerate(apis)]],
                    title="sensitivity: break-even tokens/month with each assumption relaxed",
                    formatters={"self_host_usd_per_month": fmt_usd, **{f"be{i}": be_fmt for i in range(len(apis))}})
    curve = out["curve"]
    series = {"self-host": curve["self_host_usd_per_month"]}
    series.update(dict(list(curve["api_usd_per_month"].items())[:6]))
    typer.echo(ascii_chart(curve["tokens_per_month"], series, mark_x=out["tokens_per_month"]))
    for c in out["caveats"]:
        typer.echo(f"note: {c}")


def _default_value(d: dict, host: dict) -> str:
    """One assumption's value as the breakeven table prints it."""
    if d["name"] == "GPU price":
        return f"${d['value']:.2f}/GPU-h"
    if d["name"] == "peak factor":
        return f"{d['value']:g}x"
    if d["name"] == "operations":
        return f"${d['value']:,.0f}/month"
    if d["name"] == "latency target":
        v = d["value"]
        if v["max_tpot_ms"] is None and v["max_ttft_ms"] is None:
            return "none (max throughput)"
        parts = [f"TPOT <= {v['max_tpot_ms']:g} ms" if v["max_tpot_ms"] is not None else None,
                 f"TTFT <= {v['max_ttft_ms']:g} ms" if v["max_ttft_ms"] is not None else None]
        at = (f" (replica runs at TPOT {host['tpot_ms']:.0f} ms, TTFT {host['ttft_ms']:.0f} ms)"
              if host.get("tpot_ms") is not None and host.get("ttft_ms") is not None else "")
        return ", ".join(p for p in parts if p) + at
    if d["name"] == "redundancy":
        return f"{d['value']} ({host['spare_replicas']} spare replica)" if host["spare_replicas"] else "none"
    return str(d["value"])


def ascii_chart(xs: list[float], series: dict[str, list[float]], width: int = 64, height: int = 16,
                mark_x: float | None = None) -> str:
    """Log-log cost-vs-volume chart: one letter per distinct curve, '*' where self-host meets an API."""
    pts = [(x, y) for ys in series.values() for x, y in zip(xs, ys) if x > 0 and y > 0]
    if not pts:
        return ""
    lx = [math.log10(x) for x in xs]
    y_lo = math.log10(min(y for _, y in pts))
    y_hi = math.log10(max(y for _, y in pts))
    if y_hi - y_lo < 1e-9:
        y_hi = y_lo + 1
    x_lo, x_hi = lx[0], lx[-1]
    grid = [[" "] * width for _ in range(height)]
    names = list(series)
    # identical curves share one letter; the first series (self-host) is drawn last, on top
    letters: dict[tuple, str] = {}
    legend: dict[str, list[str]] = {}
    order = names[1:] + names[:1]
    for name in order:
        key = tuple(round(v, 9) for v in series[name])
        sym = letters.get(key)
        if sym is None:
            sym = "S" if name == names[0] else "ABCDEFGHIJKLMNOPQR"[len([k for k in letters.values() if k != "S"])]
            letters[key] = sym
        legend.setdefault(sym, []).append(name)
        ys = series[name]
        for i in range(width):
            t = x_lo + (x_hi - x_lo) * i / (width - 1)
            j = min(range(len(lx)), key=lambda k: abs(lx[k] - t))
            if ys[j] <= 0:
                continue
            row = height - 1 - round((math.log10(ys[j]) - y_lo) / (y_hi - y_lo) * (height - 1))
            cell = grid[row][i]
            if cell == " ":
                grid[row][i] = sym
            elif sym == "S" and cell != "S":
                grid[row][i] = "*"  # self-host meets an API curve
    if mark_x and x_hi > x_lo:
        col = round((math.log10(mark_x) - x_lo) / (x_hi - x_lo) * (width - 1))
        if 0 <= col < width:
            for r in range(height):
                if grid[r][col] == " ":
                    grid[r][col] = ":"
    lines = []
    for r in range(height):
        yv = 10 ** (y_hi - (y_hi - y_lo) * r / (height - 1))
        label = f"${_human(yv):>6}" if r in (0, height // 2, height - 1) else " " * 7
        lines.append(f"{label} |{''.join(grid[r])}")
    lines.append(" " * 8 + "+" + "-" * width)
    lines.append(" " * 9 + f"{_human(xs[0])} tokens/month (log)".ljust(width - 8) + _human(xs[-1]))
    keys = sorted(legend, key=lambda k: (k != "S", k))
    lines.append("  " + "; ".join(f"{k} = {' = '.join(legend[k])}" for k in keys)
                 + ("; ':' = your volume" if mark_x else "") + "; '*' = self-host meets an API")
    return "\n".join(lines)
