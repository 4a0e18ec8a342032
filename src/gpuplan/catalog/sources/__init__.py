"""Live price sources, one module each behind the `PriceSource` protocol, and their registry.

Source names are the store's snapshot names: direct APIs ('vast', 'runpod', 'azure', 'vultr',
'lambda'), one per SkyPilot cloud ('skypilot:gcp') and one per gpuhunt provider
('gpuhunt:aws'), so one cloud failing never replaces another cloud's data.
"""
from __future__ import annotations

from gpuplan.catalog.sources.base import PriceSource, SourceError, SourceResult

DIRECT = ("vast", "runpod", "azure", "vultr", "lambda")
GROUPS = ("skypilot", "gpuhunt")


def all_source_names() -> list[str]:
    from gpuplan.catalog.sources.gpuhunt import providers
    from gpuplan.catalog.sources.skypilot import clouds

    return [*DIRECT, *(f"skypilot:{c}" for c in clouds()), *(f"gpuhunt:{p}" for p in providers())]


def default_source_names() -> list[str]:
    """What a bare `catalog refresh` reads: the direct APIs plus SkyPilot for clouds without one."""
    from gpuplan.catalog.sources.gpuhunt import providers
    from gpuplan.catalog.sources.skypilot import clouds

    return [*DIRECT, *(f"skypilot:{c}" for c, m in clouds().items() if m["default"] == "1"),
            *(f"gpuhunt:{p}" for p, m in providers().items() if m["default"] == "1")]


def expand_source_names(names: list[str] | None) -> list[str]:
    """User-typed names to source names: 'skypilot' means every SkyPilot cloud; unknown names
    raise UnknownNameError listing the closest ones."""
    from gpuplan.errors import UnknownNameError

    if not names:
        return default_source_names()
    known = all_source_names()
    out: list[str] = []
    for raw in names:
        for n in (p.strip() for p in raw.split(",")):
            if not n:
                continue
            matches = [k for k in known if k.startswith(f"{n}:")] if n in GROUPS else ([n] if n in known else [])
            if not matches:
                raise UnknownNameError("source", n, [*known, *GROUPS])
            out.extend(m for m in matches if m not in out)
    return out


def get_source(name: str) -> PriceSource:
    """The source object for a source name; base URLs come from GPUPLAN_<NAME>_URL when set."""
    from gpuplan.errors import UnknownNameError

    if name.startswith("skypilot:"):
        from gpuplan.catalog.sources.skypilot import SkyPilotSource
        return SkyPilotSource(name.split(":", 1)[1])
    if name.startswith("gpuhunt:"):
        from gpuplan.catalog.sources.gpuhunt import GpuhuntSource
        return GpuhuntSource(name.split(":", 1)[1])
    if name == "vast":
        from gpuplan.catalog.sources.vast import VastSource
        return VastSource()
    if name == "runpod":
        from gpuplan.catalog.sources.runpod import RunPodSource
        return RunPodSource()
    if name == "azure":
        from gpuplan.catalog.sources.azure import AzureSource
        return AzureSource()
    if name == "vultr":
        from gpuplan.catalog.sources.vultr import VultrSource
        return VultrSource()
    if name == "lambda":
        from gpuplan.catalog.sources.lambdalabs import LambdaSource
        return LambdaSource()
    raise UnknownNameError("source", name, all_source_names())


__all__ = ["PriceSource", "SourceError", "SourceResult", "all_source_names", "default_source_names",
           "expand_source_names", "get_source"]
