"""GPUs, providers and offers: the bundled catalog, the store and live price sources."""
from gpuplan.catalog.gpus import all_gpus, get_gpu, resolve_gpu_id
from gpuplan.catalog.records import Gpu, Offer, Provider

__all__ = ["Gpu", "Offer", "Provider", "all_gpus", "get_gpu", "resolve_gpu_id"]
