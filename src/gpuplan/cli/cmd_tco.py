"""`gpuplan tco`: the full cost of a trained model, not just its final run."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from gpuplan.cli.app import app
from gpuplan.cli.options import ActiveParamsOpt, CsvOpt, DbOpt, JsonOpt, ModelOpt, ParamsOpt

Num = Optional[float]
BAR_WIDTH = 32


@app.command("tco")
def tco_command(
    final_run_usd: Annotated[Num, typer.Option("--final-run-usd", help="Cost of the final training run ($).")] = None,
    gpu_hours: Annotated[Num, typer.Option("--gpu-hours", help="GPU-hours of the final run (with --price-per-gpu-hour).")] = None,
    price_per_gpu_hour: Annotated[Num, typer.Option("--price-per-gpu-hour", help="$ per GPU-hour.")] = None,
    experiments_multiplier: Annotated[Num, typer.Option("--experiments-multiplier", help="Total compute / final run (default 1.5, OLMo; Epoch frontier median 2.2; range 1.2-4).")] = None,
    data_usd: Annotated[Num, typer.Option("--data-usd", help="Data acquisition and preparation ($).")] = None,
    engineers: Annotated[Num, typer.Option("--engineers", help="Engineers on the project (with --months).")] = None,
    months: Annotated[Num, typer.Option("--months", help="Project length in months.")] = None,
    salary: Annotated[Num, typer.Option("--salary-usd-per-year", "--salary", help="Salary per engineer, $/year (default 200,000).")] = None,
    labour_overhead: Annotated[Num, typer.Option("--labour-overhead", help="Loaded-cost multiplier on salary (default 1.3).")] = None,
    labour_usd: Annotated[Num, typer.Option("--labour-usd", help="Engineering labour ($), instead of --engineers.")] = None,
    safety_fraction: Annotated[Num, typer.Option("--safety-fraction", help="Safety and alignment testing as a share of the total (default 0.075).")] = None,
    safety_usd: Annotated[Num, typer.Option("--safety-usd", help="Safety and alignment testing ($).")] = None,
    storage_tb: Annotated[Num, typer.Option("--storage-tb", help="Stored data, checkpoints and logs (TB).")] = None,
    storage_months: Annotated[Num, typer.Option("--storage-months", help="Months the storage is kept (default --months, else 3).")] = None,
    storage_price: Annotated[Num, typer.Option("--storage-usd-per-gb-month", help="Storage price (default $0.023, S3 Standard).")] = None,
    egress_tb: Annotated[Num, typer.Option("--egress-tb", help="Data moved out of the cloud (TB).")] = None,
    egress_price: Annotated[Num, typer.Option("--egress-usd-per-gb", help="Egress price (default $0.09/GB).")] = None,
    hosting_months: Annotated[Num, typer.Option("--hosting-months", help="Months of serving to include.")] = None,
    hosting_usd_per_month: Annotated[Num, typer.Option("--hosting-usd-per-month", help="Serving cost per month ($).")] = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPU of the run, for energy and emissions.")] = None,
    region: Annotated[Optional[str], typer.Option("--region", help="Country code, geography (eu, us-east) or provider region, for grid carbon intensity.")] = None,
    model: ModelOpt = None, params: ParamsOpt = None, active_params: ActiveParamsOpt = None,
    tokens: Annotated[Optional[str], typer.Option("--tokens", help="Plan the final run: training tokens (with --model or --params).")] = None,
    method: Annotated[str, typer.Option("--method", help="Final run method when planned: full, lora or qlora.")] = "full",
    precision: Annotated[str, typer.Option("--precision", help="Final run precision when planned.")] = "bf16",
    db: DbOpt = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Full cost of a training project: final run, experiments, data, storage, labour, safety, hosting.

    The final run is given (--final-run-usd, or --gpu-hours x --price-per-gpu-hour) or planned:
    with --model/--params and --tokens it is the planner's first-ranked training plan."""
    from gpuplan.cli.options import build_request
    from gpuplan.cli.output import fmt_usd, print_csv, print_json
    from gpuplan.economics.tco import TcoResult
    from gpuplan.planner.requests import TcoRequest, tco

    req = build_request(TcoRequest,
        final_run_usd=final_run_usd, gpu_hours=gpu_hours, price_per_gpu_hour=price_per_gpu_hour,
        experiments_multiplier=experiments_multiplier, data_usd=data_usd, engineers=engineers, months=months,
        salary_usd_per_year=salary, labour_overhead=labour_overhead, labour_usd=labour_usd,
        safety_fraction=safety_fraction, safety_usd=safety_usd, storage_tb=storage_tb, storage_months=storage_months,
        storage_usd_per_gb_month=storage_price, egress_tb=egress_tb, egress_usd_per_gb=egress_price,
        hosting_months=hosting_months, hosting_usd_per_month=hosting_usd_per_month, gpu=gpu, region=region,
        model=model, params=params, active_params=active_params, tokens=tokens, method=method,
        precision=precision)
    catalog = None
    if req.planned:
        from gpuplan.catalog.catalog import Catalog

        catalog = Catalog.load(db)
    out = tco(req, catalog)  # the request and answer of POST /api/tco
    if as_json:
        print_json(out)
        return
    if as_csv:
        print_csv([ln for ln in out["lines"]])
        return
    if out.get("final_run_summary"):
        typer.echo(f"final run planned: {out['final_run_summary']}")
    _render(TcoResult.model_validate({k: v for k, v in out.items() if k in TcoResult.model_fields}), fmt_usd)


def _render(result, fmt_usd) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console() if Console().is_terminal else Console(width=160)
    table = Table(title="Full cost of the model (TCO)", header_style="bold")
    for header, justify in (("line", "left"), ("USD", "right"), ("share", "right"), ("", "left"),
                            ("range", "right"), ("basis", "left")):
        table.add_column(header, justify=justify, overflow="fold")
    top = max((ln.usd for ln in result.lines), default=0.0) or 1.0
    for ln in result.lines:
        bar = "█" * max(0, round(ln.usd / top * BAR_WIDTH))
        rng = "-" if ln.low_usd == ln.high_usd else f"{fmt_usd(ln.low_usd)} - {fmt_usd(ln.high_usd)}"
        mark = "*" if ln.overridden else ""
        table.add_row(ln.name + mark, fmt_usd(ln.usd), f"{ln.share:.1%}", f"[cyan]{bar}[/cyan]", rng, ln.basis)
    table.add_section()
    table.add_row("[bold]Total[/bold]", f"[bold]{fmt_usd(result.total_usd)}[/bold]", "100%", "",
                  f"{fmt_usd(result.total_low_usd)} - {fmt_usd(result.total_high_usd)}",
                  f"development {fmt_usd(result.development_usd)} + hosting {fmt_usd(result.hosting_usd)}")
    console.print(table)
    console.print("* = your figure; other lines use the documented default shown in 'basis'.")
    if result.energy_kwh is not None:
        grid = result.assumptions.get("energy", {}).get("grid", {})
        where = f"{grid.get('name')} {grid.get('g_co2e_per_kwh'):g} g/kWh ({grid.get('year')})" if isinstance(grid, dict) else "user grid"
        console.print(f"Energy (information): {result.energy_kwh:,.0f} kWh for all compute "
                      f"({result.energy_final_run_kwh:,.0f} kWh final run); "
                      f"{result.emissions_kg / 1000:,.1f} t CO2e at {where}; "
                      f"an owner would pay ~{fmt_usd(result.energy_cost_usd_info)} for power.")
    for note in result.notes:
        console.print(f"note: {note}")
