"""GPU spec table and the forgiving name resolver.

Names arrive from users, config files and every cloud's API in a different spelling
('h100', 'H100 80GB HBM3', 'NVIDIA H100-SXM5-80GB', SkyPilot's 'A100-80GB'); they all
resolve to one canonical id keyed to the spec table.
"""
from __future__ import annotations

import csv
import functools
import re
from importlib import resources

from gpuplan.catalog.records import Gpu
from gpuplan.errors import UnknownNameError

_VENDOR_WORDS = re.compile(r"^(nvidia|amd|intel|google|tesla|geforce|radeon|instinct)+")


def normalize_gpu_name(name: str) -> str:
    """Lower-case alphanumerics with vendor words dropped: 'NVIDIA H100-SXM' -> 'h100sxm'."""
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    key = _VENDOR_WORDS.sub("", key)
    return key.replace("geforce", "").replace("tesla", "")


def _data_rows(filename: str) -> list[dict[str, str]]:
    with resources.files("gpuplan.catalog.data").joinpath(filename).open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _opt(v: str) -> float | None:
    return float(v) if v not in ("", None) else None


@functools.cache
def all_gpus() -> dict[str, Gpu]:
    """Every GPU in the bundled spec table, by canonical id."""
    out = {}
    for r in _data_rows("gpus.csv"):
        out[r["id"]] = Gpu(
            id=r["id"], vendor=r["vendor"], memory_gb=float(r["memory_gb"]),
            mem_bw_tbps=float(r["mem_bw_tbps"]), bf16_tflops=float(r["bf16_tflops"]),
            fp8_tflops=_opt(r["fp8_tflops"]), fp4_tflops=_opt(r["fp4_tflops"]),
            tf32_tflops=_opt(r["tf32_tflops"]), nvlink_gbps=float(r["nvlink_gbps"] or 0),
            tdp_w=_opt(r["tdp_w"]), year=int(r["year"]) if r["year"] else None,
            form_factor=r["form_factor"], source=r["source"],
        )
    return out


@functools.cache
def _alias_table() -> dict[str, str]:
    table = {normalize_gpu_name(g): g for g in all_gpus()}
    for r in _data_rows("gpu_aliases.csv"):
        table[normalize_gpu_name(r["alias"])] = r["gpu"]
    return table


def resolve_gpu_id(name: str) -> str:
    """Canonical id for any known spelling; UnknownNameError lists the closest ids."""
    key = normalize_gpu_name(name)
    table = _alias_table()
    if key in table:
        return table[key]
    # Memory/packaging words ('H100 80GB HBM3') rarely change the chip; strip whole words only,
    # so a form-factor digit ('SXM4 43GB') is never eaten.
    stripped = normalize_gpu_name(re.sub(r"(?i)(^|[\s_-])(\d+\s*gb|hbm\d?e?|gddr\d?x?)(?=$|[\s_-])", " ", name))
    if stripped and stripped in table:
        gpu_id = table[stripped]
        _check_named_memory(name, gpu_id)
        return gpu_id
    import difflib

    near = difflib.get_close_matches(key, list(table), n=12, cutoff=0.5)
    suggestions = list(dict.fromkeys(table[k] for k in near))[:4]
    raise UnknownNameError("GPU", name, list(all_gpus()), suggestions=suggestions)


# A memory size in the name must be the chip's: 'H100 96GB' is not the 80 GB H100-SXM. Vendors round
# (94 GB sold as 96, 141 as 144, 192 as 180 usable), hence a relative tolerance.
NAMED_MEMORY_TOLERANCE = 0.08


def _check_named_memory(name: str, gpu_id: str) -> None:
    sizes = [float(m) for m in re.findall(r"(?i)(?:^|[\s_-])(\d+)\s*gb(?=$|[\s_-])", name)]
    gpu = all_gpus()[gpu_id]
    close = lambda g, gb: abs(gb - g.memory_gb) <= NAMED_MEMORY_TOLERANCE * g.memory_gb  # noqa: E731
    if not sizes or any(close(gpu, gb) for gb in sizes):
        return
    want = sizes[0]
    near = sorted((g for g in all_gpus().values() if close(g, want)),
                  key=lambda g: (normalize_gpu_name(g.id)[:4] != normalize_gpu_name(gpu_id)[:4],
                                 abs(g.memory_gb - want)))
    err = UnknownNameError("GPU", name, list(all_gpus()), suggestions=[g.id for g in near[:4]] or [gpu_id])
    options = ", ".join(f"{g.id} ({g.memory_gb:g} GB)" for g in near[:4]) or "none"
    err.args = (f"unknown GPU {name!r}: {gpu_id} has {gpu.memory_gb:g} GB, not {want:g}; "
                f"GPUs with about {want:g} GB: {options}",)
    raise err


def get_gpu(name: str) -> Gpu:
    """The spec record for any known spelling of a GPU name."""
    return all_gpus()[resolve_gpu_id(name)]
