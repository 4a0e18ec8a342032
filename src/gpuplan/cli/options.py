"""Option types shared by several commands, so each flag means the same thing everywhere."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from gpuplan.errors import UsageError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
SampleLenOpt = Annotated[Optional[int], typer.Option(
    "--sample-len", help="Mean tokens per example when short examples are packed into each sequence with "
                         "per-example attention (SFT packing): attention spans one example, not --seq-len.")]
FrameworkOpt = Annotated[str, typer.Option(
    "--framework", help="Training stack: megatron (Megatron-Core / NeMo: fused FP8 casts, cuDNN attention) or pytorch "
                        "(torchtitan, FSDP2, Composer, Accelerate: FP8 casts as kernels of their own, FlashAttention-2 "
                        "on H100/B200: slower FP8 and long sequences).")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print CSV.")]
DbOpt = Annotated[Optional[str], typer.Option("--db", help="Catalog store (default: $GPUPLAN_DB or the user data dir).")]

# Model choice.
ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="Preset id (e.g. llama-3.1-8b) or a config.json path.")]
ParamsOpt = Annotated[Optional[str], typer.Option("--params", help="Total parameters (e.g. 7B, 7e9) when no preset fits.")]
ActiveParamsOpt = Annotated[Optional[str], typer.Option("--active-params", help="Active parameters per token (MoE).")]

# Constraints for plans.
BudgetOpt = Annotated[Optional[str], typer.Option("--budget-usd", "--budget", help="Max expected total cost, USD (e.g. 50000, 50k).")]
DeadlineOpt = Annotated[Optional[str], typer.Option("--deadline", "--deadline-hours", help="Max wall time: hours, or with a unit (36h, 14d).")]
ProvidersOpt = Annotated[Optional[str], typer.Option("--providers", help="Only these providers (comma-separated).")]
ExcludeOpt = Annotated[Optional[str], typer.Option("--exclude", help="Never these providers (comma-separated).")]
KindsOpt = Annotated[Optional[str], typer.Option("--kinds", help="Provider kinds: hyperscaler, neocloud, marketplace, decentralized.")]
RegionsOpt = Annotated[Optional[str], typer.Option("--regions", help="Region substrings (comma-separated).")]
GpuFilterOpt = Annotated[Optional[str], typer.Option("--gpu", help="Only these GPUs (comma-separated; 'H100' = every H100 variant).")]
MaxGpusOpt = Annotated[Optional[int], typer.Option("--max-gpus", help="Never more GPUs than this.")]
NoSpotOpt = Annotated[bool, typer.Option("--no-spot", help="On-demand, reserved and community offers only.")]
MinConfidenceOpt = Annotated[Optional[str], typer.Option("--min-confidence", help="primary, aggregated, third-party or unverified (highest first).")]
MaxPriceAgeOpt = Annotated[Optional[int], typer.Option("--max-price-age-days", "--max-price-age", help="Ignore prices older than this many days (default 180: older prices are stale and not ranked).")]
AllowDecentralizedOpt = Annotated[bool, typer.Option("--allow-decentralized", help="Let multi-node training use decentralized/marketplace/consumer GPUs.")]
LimitOpt = Annotated[Optional[int], typer.Option("--limit", help="Show at most N plans (default 15, as the API).")]
WideOpt = Annotated[bool, typer.Option("--wide", help="Every table column, however wide (default: drop columns to fit the terminal, never split a number).")]


def parse_duration_hours(text: str | None, flag: str = "--deadline") -> float | None:
    """'36', '36h', '14d', '2w', '90m' -> hours (gpuplan.planner.requests' parser, the API's too)."""
    from gpuplan.planner.requests import parse_duration_hours as parse

    return parse(text, flag)


# Request fields whose flag is not the field's name (every other field `x_y` is `--x-y`).
FLAGS = {"deadline_hours": "--deadline", "max_wall_hours": "--max-wall", "gpus": "--gpu",
         "horizon_months": "--horizon-months", "flops_convention": "--flops-convention"}


def constraints_from_options(
    budget: float | None, deadline: str | None, providers: str | None, exclude: str | None,
    kinds: str | None, regions: str | None, gpu: str | None, max_gpus: int | None, no_spot: bool,
    min_confidence: str | None, max_price_age: int | None, allow_decentralized: bool,
    allow_unclustered: bool = False, max_wall: str | None = None,
):
    from gpuplan.planner.requests import Constraints
    from gpuplan.units import split_list

    max_wall_h = parse_duration_hours(max_wall, "--max-wall")
    if max_wall_h is not None and max_wall_h > 3650 * 24:
        raise UsageError(f"--max-wall must be at most 3650 days (10 years), got {max_wall_h / 24:g} days")
    return validated(Constraints, dict(
        budget_usd=budget, deadline_hours=deadline, providers=split_list(providers),
        exclude=split_list(exclude), kinds=split_list(kinds), regions=split_list(regions), gpus=split_list(gpu),
        max_gpus=max_gpus, no_spot=no_spot, min_confidence=min_confidence, max_price_age_days=max_price_age,
        allow_decentralized=allow_decentralized, allow_unclustered=allow_unclustered,
        max_wall_hours=max_wall_h,
    ))


def validated(cls, data: dict, flags: dict[str, str] | None = None):
    """Build a request record; pydantic's multi-line report becomes one line naming the option
    (the field's own name as a flag: request fields are named as the flags are)."""
    from pydantic import ValidationError

    try:
        return cls(**data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(p) for p in err["loc"]]
        field = next((p for p in loc if p not in ("constraints", "train", "serve")), "")
        named = {**FLAGS, **(flags or {})}
        if "constraints" not in loc:
            named.pop("gpus", None)  # --gpu filters GPU names in plan constraints; elsewhere --gpus is a count
        flag = named.get(field) or (f"--{field.replace('_', '-')}" if field else "")
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise UsageError(f"{flag + ': ' if flag else ''}{msg}") from None


def build_request(cls, **options):
    """The library request `cls` (gpuplan.planner.requests) from command-line values: an option left
    out takes the request's own default, the API's too; a defect is one line naming the flag."""
    from gpuplan.planner.requests import ModelChoice

    if issubclass(cls, ModelChoice):
        check_model_options(options.get("model"), options.get("params"), options.get("active_params"))
    return validated(cls, {k: v for k, v in options.items() if v is not None})


def check_model_options(model: str | None, params: str | None, active: str | None) -> None:
    if (model is None) == (params is None):
        raise UsageError("give exactly one of --model and --params")
    if model is not None and active is not None:
        raise UsageError("--active-params goes with --params, not --model")


def resolve_model_option(model: str | None, params: str | None, active: str | None):
    """A ModelSpec from --model (preset or config.json) or --params [--active-params]."""
    from gpuplan.units import parse_quantity

    if (model is None) == (params is None):
        raise UsageError("give exactly one of --model and --params")
    if model is not None:
        if active is not None:
            raise UsageError("--active-params goes with --params, not --model")
        from gpuplan.models import resolve_model

        return resolve_model(model)
    from gpuplan.models import model_from_params

    total = parse_quantity(params, "--params")
    act = parse_quantity(active, "--active-params") if active is not None else None
    return model_from_params(total, act)
