"""One reading of GPU memory and one month, for every estimator (gpuplan.units)."""
from __future__ import annotations

import ast
from pathlib import Path

from gpuplan import units
from gpuplan.catalog.gpus import all_gpus

SRC = Path(__file__).resolve().parent.parent / "src" / "gpuplan"


def test_gpu_memory_is_gib_in_training_and_serving():
    from gpuplan.perf import inference_memory, training_memory

    assert units.GPU_MEMORY_UNIT == units.GIB == 2**30 and units.GB == 1e9
    assert inference_memory.GIB is units.GIB and training_memory.GIB is units.GIB
    for g in all_gpus().values():
        assert g.memory_bytes == inference_memory.device_memory_bytes(g) == g.memory_gb * 2**30
    h100 = all_gpus()["H100-SXM"]
    # NVIDIA's "80GB": 81,559 MiB of HBM3 = 85.5e9 bytes; the GiB reading (85.9e9) is within 1%
    assert abs(h100.memory_bytes / (81559 * 2**20) - 1) < 0.01


def test_hours_per_month_is_defined_once():
    assert units.HOURS_PER_MONTH == 730.0 and units.SECONDS_PER_MONTH == 730.0 * 3600
    defined = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "HOURS_PER_MONTH" for t in node.targets):
                defined.append(path.relative_to(SRC).as_posix())
    assert defined == ["units.py"]
