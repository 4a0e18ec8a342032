"""What a GPU can run: precisions, attention kernels and serving engines per architecture."""
from __future__ import annotations

import pytest

from gpuplan.catalog.capabilities import arch_info, arch_of, resolve_serving, resolve_training
from gpuplan.catalog.gpus import all_gpus

GPUS = all_gpus()


def test_every_catalog_gpu_has_a_known_architecture():
    missing = [g for g in GPUS if arch_of(g) == "unknown"]
    assert missing == []


@pytest.mark.parametrize("gpu", ["V100-SXM2-16GB", "V100-SXM2-32GB", "T4"])
def test_pre_ampere_trains_fp16_with_loss_scaling_and_no_flash_attention(gpu):
    r = resolve_training(GPUS[gpu], "bf16")
    assert r.ok and r.precision == "fp16" and r.flash_attention is False
    assert any("loss scaling" in n for n in r.notes)
    assert not resolve_training(GPUS[gpu], "fp8").ok


@pytest.mark.parametrize("gpu", ["A100-80GB-SXM", "H100-SXM", "B200", "MI300X", "L40S"])
def test_ampere_and_newer_train_bf16_with_flash_attention(gpu):
    r = resolve_training(GPUS[gpu], "bf16")
    assert r.ok and r.precision == "bf16" and r.flash_attention


@pytest.mark.parametrize("gpu, precision, ok", [
    ("A100-80GB-SXM", "fp8", False), ("L40S", "fp8", True), ("H100-SXM", "fp8", True), ("MI300X", "fp8", True),
    ("H100-SXM", "fp4", False), ("B200", "fp4", True), ("MI355X", "fp4", True), ("MI300X", "fp4", False),
])
def test_low_precision_needs_its_tensor_cores(gpu, precision, ok):
    assert resolve_training(GPUS[gpu], precision).ok is ok


@pytest.mark.parametrize("gpu, engine, ok", [
    ("V100-SXM2-16GB", "vllm", True), ("V100-SXM2-16GB", "sglang", False), ("V100-SXM2-16GB", "trtllm", False),
    ("MI300X", "trtllm", False), ("MI300X", "sglang", True), ("Gaudi2", "sglang", False), ("Gaudi3", "vllm", True),
    ("H100-SXM", "trtllm", True),
])
def test_engine_support_per_architecture_and_vendor(gpu, engine, ok):
    r = resolve_serving(GPUS[gpu], "bf16", engine)
    assert r.ok is ok
    if not ok:
        assert engine in r.reason


def test_vllm_on_volta_serves_fp16_and_says_so():
    r = resolve_serving(GPUS["V100-SXM2-16GB"], "bf16", "vllm")
    assert r.precision == "fp16" and any("no bf16" in n for n in r.notes)


def test_non_cuda_stacks_are_named():
    assert "ROCm" in arch_info(GPUS["MI300X"]).software
    assert any("ROCm" in n for n in resolve_training(GPUS["MI300X"], "bf16").notes)
    assert arch_info(GPUS["H100-SXM"]).software is None
