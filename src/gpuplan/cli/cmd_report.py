"""`gpuplan report train | serve` and `gpuplan report --from plan.json`: a plan as a self-contained
HTML (or Markdown) report.

`train` / `serve` take the same options as `gpuplan plan train | serve` (built by the same
request builders), plan, and write the report atomically to --out. `--from` reads a plan file
written by `gpuplan plan ... --json` (or the page's "Plan JSON" download) instead of planning:
the file is validated first and any defect is a one-line error.
"""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from gpuplan.cli.app import app
from gpuplan.cli.cmd_plan import (
    AllowUnclusteredOpt, AllRowsOpt, DatasetGbOpt, DatasetTokensOpt, EngineOpt, EpochsOpt, GlobalBatchOpt, GoodputOpt,
    HorizonOpt, InputLenOpt, KvPrecisionOpt, LoraRankOpt, MaxWallOpt, MethodOpt, NoRedundancyOpt, OfflineOpt,
    OutputLenOpt, PeakFactorOpt, RpsOpt, SeqLenOpt, ServePrecisionOpt, TokensOpt, TokensPerMonthOpt, TpotOpt,
    TrainPrecisionOpt, TtftOpt, UsersOpt, _serve_request, _train_request,
)
from gpuplan.cli.options import (
    ActiveParamsOpt, AllowDecentralizedOpt, BudgetOpt, DbOpt, DeadlineOpt, ExcludeOpt, GpuFilterOpt, KindsOpt,
    LimitOpt, MaxGpusOpt, MaxPriceAgeOpt, MinConfidenceOpt, ModelOpt, NoSpotOpt, ParamsOpt, ProvidersOpt,
    RegionsOpt, SampleLenOpt, FrameworkOpt, constraints_from_options,
)

report_app = typer.Typer(
    help="A plan as a self-contained HTML or Markdown report (charts inline): plan it now "
         "(`report train|serve ...`) or read a plan file (`report --from plan.json --out report.html`).",
    no_args_is_help=True, invoke_without_command=True)
app.add_typer(report_app, name="report")

OutOpt = Annotated[str, typer.Option("--out", "-o", help="File to write (atomically), e.g. report.html; '-' prints it.")]
FormatOpt = Annotated[Optional[str], typer.Option("--format", help="html or md (default: from --out's suffix, else html).")]
FromOpt = Annotated[Optional[str], typer.Option(
    "--from", help="Plan file from `gpuplan plan train|serve --json` (or the web page's Plan JSON); '-' reads stdin.")]


def _check_out(out: str, fmt: str | None) -> str:
    """Refuse a bad --out or --format before spending time planning."""
    from gpuplan.files import check_out_path
    from gpuplan.report import resolve_format

    resolved = resolve_format(fmt, out)
    if out != "-":
        check_out_path(out)
    return resolved


def _emit(result, request, catalog, out: str, fmt: str, source: str = "") -> None:
    import sys

    from gpuplan.files import is_stdout
    from gpuplan.report import build_report, write_report

    text = build_report(result, request, catalog, fmt, source=source)
    if is_stdout(out):
        sys.stdout.write(text)
    else:
        path = write_report(out, text)
        n = len(result.plans)
        print(f"wrote {path} ({fmt}, {n} plan{'s' if n != 1 else ''})", file=sys.stderr)
    if not result.plans:  # the report says why nothing fits; the exit code says so to scripts, as `plan` does
        raise typer.Exit(1)


@report_app.callback()
def report_root(
    ctx: typer.Context,
    from_: FromOpt = None,
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="With --from: the file to write; '-' prints it.")] = None,
    fmt: FormatOpt = None,
    db: DbOpt = None,
) -> None:
    """Write a report: `report --from plan.json --out report.html`, or `report train|serve ...` to plan first."""
    from gpuplan.errors import UsageError

    if ctx.invoked_subcommand is not None:
        if from_ is not None:
            raise UsageError("--from reads a plan file: use it without train/serve (`gpuplan report --from plan.json --out report.html`)")
        return
    if from_ is None:
        raise UsageError("give --from plan.json (from `gpuplan plan ... --json`), or use `gpuplan report train|serve ...`")
    if out is None:
        raise UsageError("--out is required, e.g. --out report.html ('-' prints it)")
    fmt = _check_out(out, fmt)
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.export.common import load_plan_result

    result = load_plan_result(from_)
    _emit(result, None, Catalog.load(db), out, fmt, source="stdin" if from_ == "-" else from_)


@report_app.command("train")
def report_train(
    out: OutOpt,
    model: ModelOpt = None, params: ParamsOpt = None, active_params: ActiveParamsOpt = None,
    tokens: TokensOpt = None, epochs: EpochsOpt = None, dataset_tokens: DatasetTokensOpt = None,
    method: MethodOpt = "full", lora_rank: LoraRankOpt = 16, precision: TrainPrecisionOpt = "bf16",
    seq_len: SeqLenOpt = 4096, sample_len: SampleLenOpt = None, global_batch: GlobalBatchOpt = None,
    goodput: GoodputOpt = None, dataset_gb: DatasetGbOpt = 0.0, framework: FrameworkOpt = "megatron",
    budget: BudgetOpt = None, deadline: DeadlineOpt = None, providers: ProvidersOpt = None,
    exclude: ExcludeOpt = None, kinds: KindsOpt = None, regions: RegionsOpt = None, gpu: GpuFilterOpt = None,
    max_gpus: MaxGpusOpt = None, no_spot: NoSpotOpt = False, min_confidence: MinConfidenceOpt = None,
    max_price_age: MaxPriceAgeOpt = None, allow_decentralized: AllowDecentralizedOpt = False,
    allow_unclustered: AllowUnclusteredOpt = False, max_wall: MaxWallOpt = None, all_rows: AllRowsOpt = False,
    limit: LimitOpt = 15, db: DbOpt = None, fmt: FormatOpt = None,
) -> None:
    """Plan training (as `gpuplan plan train`) and write the report."""
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.planner import plan_training

    fmt = _check_out(out, fmt)
    constraints = constraints_from_options(budget, deadline, providers, exclude, kinds, regions, gpu, max_gpus,
                                           no_spot, min_confidence, max_price_age, allow_decentralized,
                                           allow_unclustered=allow_unclustered, max_wall=max_wall)
    req = _train_request(model, params, active_params, tokens, epochs, dataset_tokens, method, lora_rank,
                         precision, seq_len, global_batch, goodput, dataset_gb, constraints, limit, all_rows,
                         sample_len=sample_len, framework=framework)
    catalog = Catalog.load(db)
    _emit(plan_training(req, catalog), req, catalog, out, fmt)


@report_app.command("serve")
def report_serve(
    out: OutOpt,
    model: ModelOpt = None, params: ParamsOpt = None, active_params: ActiveParamsOpt = None,
    precision: ServePrecisionOpt = None, kv_precision: KvPrecisionOpt = None, engine: EngineOpt = "vllm",
    input_len: InputLenOpt = 1000, output_len: OutputLenOpt = 250, requests_per_s: RpsOpt = None,
    tokens_per_month: TokensPerMonthOpt = None, peak_factor: PeakFactorOpt = 2.0,
    max_ttft_ms: TtftOpt = None, max_tpot_ms: TpotOpt = None, offline: OfflineOpt = False,
    no_redundancy: NoRedundancyOpt = False, months: HorizonOpt = 1.0, users: UsersOpt = None,
    all_rows: AllRowsOpt = False, budget: BudgetOpt = None, providers: ProvidersOpt = None,
    exclude: ExcludeOpt = None, kinds: KindsOpt = None, regions: RegionsOpt = None, gpu: GpuFilterOpt = None,
    max_gpus: MaxGpusOpt = None, no_spot: NoSpotOpt = False, min_confidence: MinConfidenceOpt = None,
    max_price_age: MaxPriceAgeOpt = None, limit: LimitOpt = 15, db: DbOpt = None, fmt: FormatOpt = None,
) -> None:
    """Plan serving (as `gpuplan plan serve`) and write the report."""
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.planner import plan_serving

    fmt = _check_out(out, fmt)
    constraints = constraints_from_options(budget, None, providers, exclude, kinds, regions, gpu, max_gpus,
                                           no_spot, min_confidence, max_price_age, True)
    req = _serve_request(model, params, active_params, precision, kv_precision, engine, input_len, output_len,
                         requests_per_s, tokens_per_month, peak_factor, max_ttft_ms, max_tpot_ms, months, users,
                         constraints, limit, offline=offline, redundancy=not no_redundancy, all_rows=all_rows)
    catalog = Catalog.load(db)
    _emit(plan_serving(req, catalog), req, catalog, out, fmt)
