"""gpuplan: plan LLM compute across GPU clouds.

    from gpuplan import Catalog
    cat = Catalog.load()
    cat.offers(gpu="H100", min_gpus=8)
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Catalog", "GpuplanError", "__version__"]


def __getattr__(name: str):  # lazy: keep `import gpuplan` cheap for the CLI
    if name == "Catalog":
        from gpuplan.catalog.catalog import Catalog

        return Catalog
    if name == "GpuplanError":
        from gpuplan.errors import GpuplanError

        return GpuplanError
    raise AttributeError(name)
