"""Measure, on one H100, the three training regimes where gpuplan's estimator is known to be optimistic.

    python3 benchmarks/gpu/measure_regimes_h100.py --out DIR [--budget-s 420]
    python3 benchmarks/gpu/measure_regimes_h100.py --device cpu --smoke --out /tmp/x   # logic check

Held-out rows (nothing in gpuplan is fitted to them) for benchmarks/validate_device_regimes.py.
Plain PyTorch; the Llama-style decoder (RMSNorm, RoPE, GQA through F.scaled_dot_product_attention,
SwiGLU, untied head + cross-entropy) is imported from measure_training_h100.py next to this file,
so the rows are comparable with perf/data/device-runs-h100.csv. Random weights and random tokens.

Regimes (jobs run in this order; the run stops starting new ones at --budget-s):
  gemm          bf16 vs FP8 matmul TFLOP/s, (8192 x h) @ (h x 4h), h = 768 .. 8192: bf16, FP8
                (torch._scaled_mm, e4m3 x e4m3 pre-quantized, bf16 out, per-tensor scales), and
                FP8 including the per-call dynamic quantization of both operands (amax, scale, cast).
  lora          LoRA rank 16 (alpha 32) on every linear layer of every block (q, k, v, o, gate,
                up, down; not the embedding or the output head), base model stored in bf16 and
                frozen, adapters fp32 under bf16 autocast, fused AdamW over the adapters only;
                Llama-3.2-1B/3B-like shapes at seq 2048-4096 and a few micro-batch sizes.
  long_context  full training (fp32 weights, bf16 autocast, fused AdamW) of a 1.1B decoder
                (Llama-3.2-1B layers, vocabulary 32000) from seq 4k to 128k, micro-batch 1-4;
                16k with and without, 32k-128k with full activation recomputation
                (torch.utils.checkpoint per block; 32k also without, where it fits).
  fp8           full training with every block linear in FP8 (a small autograd.Function around
                torch._scaled_mm: e4m3 activations and weights, e5m2 gradients, per-tensor dynamic
                scales computed every call, output head in bf16 as in Megatron/TransformerEngine
                recipes) against the same shape in bf16 autocast; eager first, then compiled
                (torch.compile per block, which fuses the casts) if the budget allows.
                TransformerEngine / torchao are not used (not installed on the device machine).

Attention is SDPA forced to the flash backend on CUDA (enable_gqa when the kernel takes it).
A micro-batch that runs out of memory is halved and tried again (recorded as measured).

Writes, under --out:
  regime_runs.csv   one row per job: device-runs-h100.csv's columns + regime, method, precision,
                    lora_rank, recompute, trainable_params
  gemm.csv          GEMM rows: m, k, n, dtype, label, time_ms, tflops
  log.txt           what happened (also printed)
Rows are appended as they finish, so a run stopped at its time budget keeps what it measured.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import math
import os
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_training_h100 import (Decoder, Log, Shape, append_csv, free, init_weights,  # noqa: E402
                                   is_oom, probe_gqa, sync)

LORA_RANK = 16
LORA_ALPHA = 32

RUN_COLUMNS = ["date", "device", "torch", "regime", "mode", "shape", "method", "precision", "lora_rank", "recompute",
               "n_layers", "hidden", "n_heads", "n_kv_heads", "ffn", "vocab", "seq_len", "micro_batch", "params",
               "trainable_params", "step_time_s", "step_time_min_s", "step_time_max_s", "steps_timed",
               "tokens_per_s", "peak_mem_gib", "compile_scope", "attention", "optimizer", "run_id", "notes"]
GEMM_COLUMNS = ["date", "device", "torch", "m", "k", "n", "dtype", "label", "time_ms", "tflops"]


@dataclass(frozen=True)
class Job:
    regime: str  # lora | long_context | fp8
    shape: Shape
    method: str = "full"  # full | lora
    precision: str = "bf16"  # bf16 | fp8 (block linears)
    recompute: str = "none"  # none | full (checkpoint every block)
    mode: str = "eager"  # eager | compile (torch.compile per block + head/loss)

    @property
    def lora_rank(self) -> int:
        return LORA_RANK if self.method == "lora" else 0

    def label(self) -> str:
        s = self.shape
        return (f"{self.regime}/{self.method}/{self.precision}/{self.mode} {s.name} s={s.seq_len} mb={s.micro_batch}"
                f"{' recompute=full' if self.recompute == 'full' else ''}")


L1B = Shape("llama3.2-1b-like (untied)", 16, 2048, 32, 8, 8192, 128256, 2048, 8)
L3B = Shape("llama3.2-3b-like (untied)", 28, 3072, 24, 8, 8192, 128256, 2048, 2)
LC = Shape("h2048-1.1b (llama3.2-1b layers, V32000)", 16, 2048, 32, 8, 8192, 32000, 4096, 4)
GPT2 = Shape("gpt2-small-like (swiglu)", 12, 768, 12, 12, 2048, 50304, 2048, 16)
H1024 = Shape("h1024-400m", 24, 1024, 16, 16, 2816, 50304, 2048, 16)
H4096 = Shape("h4096-x8 (llama3-8b-like layers)", 8, 4096, 32, 8, 14336, 32000, 2048, 8)


def at(s: Shape, seq: int, mb: int) -> Shape:
    return replace(s, seq_len=seq, micro_batch=mb)


def default_jobs() -> list[Job]:
    jobs = [Job("lora", at(L1B, 2048, 8), "lora"), Job("lora", at(L1B, 4096, 4), "lora"),
            Job("lora", at(L3B, 2048, 2), "lora"), Job("lora", at(L1B, 2048, 4), "lora"),
            Job("lora", at(L3B, 2048, 4), "lora"), Job("lora", at(L3B, 4096, 2), "lora")]
    jobs += [Job("long_context", at(LC, 4096, 4)), Job("long_context", at(LC, 8192, 2)),
             Job("long_context", at(LC, 16384, 1)), Job("long_context", at(LC, 16384, 1), recompute="full"),
             Job("long_context", at(LC, 32768, 1), recompute="full"),
             Job("long_context", at(LC, 65536, 1), recompute="full"),
             # Both ran out of memory on the H100 80GB on 2026-11-23: 32k without recompute (74 GiB
             # allocated at the loss); 128k with recompute finished one step (19.7 s) and failed the
             # second in the loss with 17 GiB reserved but unallocated (fragmentation: may fit with
             # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, not tried).
             Job("long_context", at(LC, 32768, 1)),
             Job("long_context", at(LC, 131072, 1), recompute="full")]
    fp8_shapes = [GPT2, H1024, L1B, H4096]
    for mode in ("eager", "compile"):
        for s in fp8_shapes:
            jobs += [Job("fp8", s, precision="bf16", mode=mode), Job("fp8", s, precision="fp8", mode=mode)]
    return jobs


SMOKE_BASE = Shape("smoke-gqa", 2, 64, 4, 2, 128, 256, 64, 2)


def smoke_jobs() -> list[Job]:
    s = SMOKE_BASE
    return [Job("lora", s, "lora"), Job("lora", at(s, 128, 1), "lora"),
            Job("long_context", at(s, 128, 2)), Job("long_context", at(s, 256, 1), recompute="full"),
            Job("fp8", s, precision="bf16"), Job("fp8", s, precision="fp8"),
            Job("fp8", replace(s, name="smoke-mha", n_kv_heads=4), precision="fp8")]


# ---------------------------------------------------------------------------------------------
# LoRA
class LoRALinear(nn.Module):
    """y = W x + (alpha / r) * B A x; W frozen (whatever dtype the base holds), A, B fp32 trainable
    (A Kaiming-uniform, B zero: the peft default), no dropout."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base = base
        base.weight.requires_grad_(False)
        dev = base.weight.device
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, device=dev, dtype=torch.float32))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, device=dev, dtype=torch.float32))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + F.linear(F.linear(x, self.lora_a), self.lora_b) * self.scale


BLOCK_LINEARS = (("attn", "q"), ("attn", "k"), ("attn", "v"), ("attn", "o"), ("ffn", "gate"), ("ffn", "up"),
                 ("ffn", "down"))


def apply_lora(model: Decoder, rank: int, alpha: float) -> int:
    """Freeze everything, wrap every block linear; returns the number of trainable parameters."""
    for p in model.parameters():
        p.requires_grad_(False)
    for blk in model.blocks:
        for parent, name in BLOCK_LINEARS:
            mod = getattr(blk, parent)
            setattr(mod, name, LoRALinear(getattr(mod, name), rank, alpha))
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# ---------------------------------------------------------------------------------------------
# FP8 (per-tensor dynamic scaling, no TransformerEngine)
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def to_fp8(x: torch.Tensor, dtype):
    """(x quantized, dequantization scale): per-tensor amax scaling, as TE's current scaling does."""
    fmax = torch.finfo(dtype).max
    amax = x.detach().abs().max().float().clamp(min=1e-12)
    scale = fmax / amax
    q = (x.float() * scale).clamp(-fmax, fmax).to(dtype)
    return q, scale.reciprocal()


def col_major(t: torch.Tensor) -> torch.Tensor:
    """The same matrix laid out column-major (what _scaled_mm wants for its second operand)."""
    return t.t().contiguous().t()


class FP8Matmul(torch.autograd.Function):
    """y = x @ w.T with x, w in e4m3; backward: dx = g @ w, dw = g.T @ x with g in e5m2."""

    @staticmethod
    def forward(ctx, x, w):
        x2 = x.reshape(-1, x.shape[-1])
        xq, xs = to_fp8(x2, E4M3)
        wq, ws = to_fp8(w, E4M3)
        y = torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)
        ctx.save_for_backward(xq, xs, wq, ws)
        ctx.x_shape, ctx.x_dtype, ctx.w_dtype = x.shape, x.dtype, w.dtype
        return y.view(*x.shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx, gy):
        xq, xs, wq, ws = ctx.saved_tensors
        g2 = gy.reshape(-1, gy.shape[-1])
        gq, gs = to_fp8(g2, E5M2)
        gx = torch._scaled_mm(gq, col_major(wq), scale_a=gs, scale_b=ws, out_dtype=torch.bfloat16)
        gw = torch._scaled_mm(gq.t().contiguous(), col_major(xq), scale_a=gs, scale_b=xs, out_dtype=torch.bfloat16)
        return gx.view(ctx.x_shape).to(ctx.x_dtype), gw.to(ctx.w_dtype)


class FP8Linear(nn.Module):
    def __init__(self, base: nn.Linear):
        super().__init__()
        assert base.bias is None
        self.weight = base.weight  # the same fp32 master parameter

    def forward(self, x):
        return FP8Matmul.apply(x, self.weight)


def apply_fp8(model: Decoder) -> None:
    for blk in model.blocks:
        for parent, name in BLOCK_LINEARS:
            mod = getattr(blk, parent)
            setattr(mod, name, FP8Linear(getattr(mod, name)))


def check_fp8(device, log) -> str:
    """FP8 matmul forward and both gradients against a float64 reference; returns a note."""
    torch.manual_seed(3)
    x = torch.randn(256, 128, device=device, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(192, 128, device=device, dtype=torch.float32, requires_grad=True)
    g = torch.randn(256, 192, device=device, dtype=torch.bfloat16)
    y = FP8Matmul.apply(x, w)
    y.backward(g)
    xd, wd, gd = x.detach().double(), w.detach().double(), g.double()
    rel = lambda a, b: float((a.detach().double() - b).norm() / b.norm())  # noqa: E731
    errs = (rel(y, xd @ wd.T), rel(x.grad, gd @ wd), rel(w.grad, gd.T @ xd))
    note = "fp8 matmul rel. error vs fp64: y {:.3f}, dx {:.3f}, dw {:.3f}".format(*errs)
    log("  " + note)
    if not all(math.isfinite(e) and e < 0.15 for e in errs):
        raise RuntimeError("FP8 matmul is wrong: " + note)
    return note


# ---------------------------------------------------------------------------------------------
class Checkpointed(nn.Module):
    """Full activation recomputation of one block (only its input is kept)."""

    def __init__(self, blk: nn.Module):
        super().__init__()
        self.blk = blk

    def forward(self, x, cos, sin):
        return torch.utils.checkpoint.checkpoint(self.blk, x, cos, sin, use_reentrant=False)


def attention_ctx(device, flash_ok: bool):
    if device.type == "cuda" and flash_ok:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        return sdpa_kernel([SDPBackend.FLASH_ATTENTION])
    return contextlib.nullcontext()


def build(job: Job, device, gqa_native: bool):
    s = job.shape
    with torch.device(device):
        torch.manual_seed(0)
        model = Decoder(s, gqa_native)
    init_weights(model)
    params = sum(p.numel() for p in model.parameters())
    fused = device.type == "cuda"
    if job.method == "lora":
        model = model.to(torch.bfloat16)  # frozen base in bf16 (rope tables stay fp32: buffers cast too, harmless)
        trainable = apply_lora(model, LORA_RANK, LORA_ALPHA)
        opt_name = "AdamW fused (adapters only)" if fused else "AdamW foreach (cpu, adapters only)"
    else:
        trainable = params
        opt_name = "AdamW fused" if fused else "AdamW foreach (cpu)"
        if job.precision == "fp8":
            apply_fp8(model)
    kw = dict(fused=True) if fused else dict(foreach=True)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, weight_decay=0.1, **kw)
    if job.recompute == "full":
        for i, blk in enumerate(model.blocks):
            model.blocks[i] = Checkpointed(blk)
    scope = ""
    if job.mode == "compile":
        torch._dynamo.reset()
        for i, blk in enumerate(model.blocks):
            model.blocks[i] = torch.compile(blk, dynamic=False)
        model.head = torch.compile(model.head, dynamic=False)
        scope = "per-block + head/loss (regional), AdamW eager"
    elif job.mode != "eager":
        raise ValueError(job.mode)
    return model, opt, params, trainable, opt_name, scope


def measure(job: Job, mb: int, device, args, log, gqa_native: bool, flash_ok: bool) -> dict:
    free(device)
    s = replace(job.shape, micro_batch=mb)
    job = replace(job, shape=s)
    model, opt, params, trainable, opt_name, scope = build(job, device, gqa_native)
    gen = torch.Generator(device=device).manual_seed(1)
    idx = torch.randint(0, s.vocab, (mb, s.seq_len), device=device, generator=gen)
    tgt = torch.randint(0, s.vocab, (mb, s.seq_len), device=device, generator=gen)

    def step():
        # The backend choice must also hold in backward: checkpointed blocks re-run attention there.
        with attention_ctx(device, flash_ok):
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                loss = model(idx, tgt)
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    try:
        t0 = time.perf_counter()
        last = t0
        warm_times = []
        loss0 = None
        for i in range(args.warmup):
            loss = step()
            sync(device)
            now = time.perf_counter()
            warm_times.append(now - last)
            last = now
            if i == 0:
                loss0 = float(loss.detach())
                log(f"    first step {warm_times[0]:.1f} s (loss {loss0:.3f})")
        warm_s = time.perf_counter() - t0
        if not math.isfinite(loss0):
            raise RuntimeError(f"non-finite loss {loss0}")
        t_est = warm_times[-1]
        n_steps = int(max(args.min_steps, min(args.steps, args.max_timing_s // max(t_est, 1e-6))))
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(n_steps + 1)]
            ev[0].record()
            for i in range(n_steps):
                loss = step()
                ev[i + 1].record()
            torch.cuda.synchronize(device)
            times = [ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(n_steps)]
            peak = torch.cuda.max_memory_allocated(device) / 2**30
        else:
            times = []
            for _ in range(n_steps):
                a = time.perf_counter()
                loss = step()
                times.append(time.perf_counter() - a)
            peak = float("nan")
        loss_end = float(loss.detach())
        if not math.isfinite(loss_end):
            raise RuntimeError(f"non-finite loss after timing: {loss_end}")
    finally:
        del opt, model, idx, tgt
        free(device)
    med = statistics.median(times)
    return {"regime": job.regime, "mode": job.mode, "shape": s.name, "method": job.method,
            "precision": job.precision, "lora_rank": job.lora_rank, "recompute": job.recompute,
            "n_layers": s.n_layers, "hidden": s.hidden, "n_heads": s.n_heads, "n_kv_heads": s.n_kv_heads,
            "ffn": s.ffn, "vocab": s.vocab, "seq_len": s.seq_len, "micro_batch": mb, "params": params,
            "trainable_params": trainable, "step_time_s": f"{med:.6f}", "step_time_min_s": f"{min(times):.6f}",
            "step_time_max_s": f"{max(times):.6f}", "steps_timed": len(times),
            "tokens_per_s": f"{mb * s.seq_len / med:.1f}", "peak_mem_gib": f"{peak:.3f}", "compile_scope": scope,
            "optimizer": opt_name,
            "notes": f"warmup {args.warmup} steps {warm_s:.1f} s; loss {loss0:.3f}->{loss_end:.3f}"}


# ---------------------------------------------------------------------------------------------
def time_op(fn, device, smoke: bool) -> float:
    """Median seconds per call: warm-up >= 0.3 s (clocks ramp), then 7 batches of 20 back-to-back
    calls between two CUDA events."""
    t_w = time.perf_counter()
    n = 0
    while n < 3 or (not smoke and time.perf_counter() - t_w < 0.3):
        out = fn()
        n += 1
        if n % 20 == 0 or smoke:
            sync(device)
    sync(device)
    per = []
    inner = 2 if smoke else 20
    for _ in range(3 if smoke else 7):
        if device.type == "cuda":
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(inner):
                out = fn()
            e1.record()
            e1.synchronize()
            per.append(e0.elapsed_time(e1) / 1e3 / inner)
        else:
            a = time.perf_counter()
            for _ in range(inner):
                out = fn()
            per.append((time.perf_counter() - a) / inner)
    assert torch.isfinite(out.float().sum()), "non-finite GEMM output"
    return statistics.median(per)


def gemm_sweep(device, args, log, meta, path):
    hs = [32, 64] if args.smoke else [768, 1024, 2048, 4096, 8192]
    m = 64 if args.smoke else args.gemm_tokens
    for h in hs:
        k, n = h, 4 * h
        try:
            torch.manual_seed(h)
            a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
            bt = torch.randn(n, k, device=device, dtype=torch.bfloat16)  # weight (out, in), like nn.Linear
            b = bt.t()
            aq, as_ = to_fp8(a, E4M3)
            bq, bs = to_fp8(bt, E4M3)
            ref = (a.double() @ b.double())
            y8 = torch._scaled_mm(aq, bq.t(), scale_a=as_, scale_b=bs, out_dtype=torch.bfloat16)
            rel = float((y8.double() - ref).norm() / ref.norm())
            if not rel < 0.1:
                raise RuntimeError(f"fp8 GEMM relative error {rel:.3f}")

            def fp8_cast():
                qa, sa = to_fp8(a, E4M3)
                qb, sb = to_fp8(bt, E4M3)
                return torch._scaled_mm(qa, qb.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

            cases = [("bf16", lambda: a @ b, "bf16 x bf16 -> bf16 (torch.matmul)"),
                     ("fp8", lambda: torch._scaled_mm(aq, bq.t(), scale_a=as_, scale_b=bs, out_dtype=torch.bfloat16),
                      f"e4m3 x e4m3 -> bf16, operands pre-quantized (torch._scaled_mm; rel. err {rel:.3f})"),
                     ("fp8+cast", fp8_cast,
                      "e4m3 x e4m3 -> bf16 incl. dynamic per-tensor quantization of both operands every call")]
            for dtype, fn, label in cases:
                t = time_op(fn, device, args.smoke)
                tf = 2.0 * m * k * n / t / 1e12
                append_csv(path, GEMM_COLUMNS, {**meta, "m": m, "k": k, "n": n, "dtype": dtype,
                                                "label": f"tokens x h x 4h (h={h}): {label}",
                                                "time_ms": f"{t * 1e3:.4f}", "tflops": f"{tf:.1f}"})
                log(f"  GEMM {m}x{k}x{n} {dtype:9s} {t * 1e3:8.3f} ms {tf:7.1f} TFLOP/s")
            del a, b, bt, aq, bq, ref, y8
        except Exception as e:  # noqa: BLE001
            log(f"  GEMM h={h} failed: {type(e).__name__}: {str(e)[:300]}")
    free(device)


# ---------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes (logic check on the CPU)")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--budget-s", type=float, default=420.0, help="start no new job after this many seconds")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12, help="timed steps at most")
    ap.add_argument("--min-steps", type=int, default=3, help="timed steps at least")
    ap.add_argument("--max-timing-s", type=float, default=15.0, help="aim the timed steps at about this long")
    ap.add_argument("--regimes", default="gemm,lora,long_context,fp8")
    ap.add_argument("--modes", default="eager,compile", help="modes of the fp8 jobs (others are eager)")
    ap.add_argument("--jobs", default="", help="comma-separated indices into the job list (default: all)")
    ap.add_argument("--gemm-tokens", type=int, default=8192)
    ap.add_argument("--run-id", default="")
    ap.add_argument("--list", action="store_true", help="print the job list and exit")
    args = ap.parse_args(argv)

    jobs = smoke_jobs() if args.smoke else default_jobs()
    if args.list:
        for i, j in enumerate(jobs):
            print(i, j.label())
        return 0
    if args.jobs:
        jobs = [jobs[int(i)] for i in args.jobs.split(",")]
    regimes = {r.strip() for r in args.regimes.split(",") if r.strip()}
    modes = {m.strip() for m in args.modes.split(",") if m.strip()}
    jobs = [j for j in jobs if j.regime in regimes and (j.regime != "fp8" or j.mode in modes)]

    t_start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    log = Log(os.path.join(args.out, "log.txt"))
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            log("CUDA not available")
            return 2
        dev_name = torch.cuda.get_device_name(device)
        props = torch.cuda.get_device_properties(device)
        log(f"device {dev_name}, {props.multi_processor_count} SMs, {props.total_memory / 2**30:.1f} GiB")
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    else:
        dev_name = f"cpu ({os.cpu_count()} threads)"
    meta = {"date": _dt.date.today().isoformat(), "device": dev_name, "torch": torch.__version__}
    log(f"torch {torch.__version__}, python {sys.version.split()[0]}, date {meta['date']}, {len(jobs)} jobs")
    runs_csv = os.path.join(args.out, "regime_runs.csv")
    gemm_csv = os.path.join(args.out, "gemm.csv")

    fp8_ok, fp8_note = True, ""
    if "gemm" in regimes or "fp8" in regimes:
        try:
            fp8_note = check_fp8(device, log)
        except Exception as e:  # noqa: BLE001
            fp8_ok, fp8_note = False, f"{type(e).__name__}: {str(e)[:300]}"
            log(f"  FP8 unavailable: {fp8_note}")
    if "gemm" in regimes and fp8_ok:
        log("GEMM sweep (random data)")
        gemm_sweep(device, args, log, meta, gemm_csv)

    gqa_native, attn_desc = probe_gqa(device, torch.bfloat16 if device.type == "cuda" else torch.float32)
    flash_ok = gqa_native or device.type != "cuda"
    if device.type == "cuda":
        attn_desc = ("sdpa forced to flash" + (" (enable_gqa)" if gqa_native else "")) if flash_ok else attn_desc
    log(f"attention: {attn_desc}")

    n_rows = 0
    compile_ok = True
    for job in jobs:
        if job.precision == "fp8" and not fp8_ok:
            log(f"skip {job.label()}: FP8 unavailable")
            continue
        if job.mode == "compile" and not compile_ok:
            continue
        elapsed = time.perf_counter() - t_start
        if elapsed > args.budget_s:
            log(f"time budget reached ({elapsed:.0f} s): skipping {job.label()}")
            continue
        mb = job.shape.micro_batch
        while mb >= 1:
            s = job.shape
            log(f"[{time.perf_counter() - t_start:5.0f} s] {job.label()} (L={s.n_layers} h={s.hidden} "
                f"heads={s.n_heads}/{s.n_kv_heads} ffn={s.ffn} V={s.vocab}) mb={mb}")
            try:
                row = measure(job, mb, device, args, log, gqa_native, flash_ok)
            except Exception as e:  # noqa: BLE001
                free(device)
                if is_oom(e) and mb > 1:
                    log(f"    out of memory at mb={mb}; halving")
                    mb //= 2
                    continue
                log(f"    FAILED: {type(e).__name__}: {str(e)[:400]}")
                log("    (traceback, last lines)\n" + "".join(traceback.format_exc().splitlines(True)[-6:]))
                if job.mode == "compile" and not is_oom(e):
                    compile_ok = False
                    log("    compile mode disabled for the remaining jobs")
                break
            row.update(meta)
            row["attention"] = attn_desc
            row["run_id"] = args.run_id
            if job.precision == "fp8":
                row["notes"] += "; " + fp8_note + "; output head bf16"
            append_csv(runs_csv, RUN_COLUMNS, row)
            n_rows += 1
            st, tps = float(row["step_time_s"]), float(row["tokens_per_s"])
            log(f"    median step {st * 1e3:.1f} ms over {row['steps_timed']} steps (min "
                f"{float(row['step_time_min_s']) * 1e3:.1f}, max {float(row['step_time_max_s']) * 1e3:.1f}), "
                f"{tps:,.0f} tok/s, peak {row['peak_mem_gib']} GiB, params {row['params'] / 1e9:.3f} B, "
                f"trainable {row['trainable_params'] / 1e6:.1f} M")
            break
    log(f"done: {n_rows} rows in {time.perf_counter() - t_start:.0f} s -> {runs_csv}")
    return 0 if n_rows else 1


if __name__ == "__main__":
    sys.exit(main())
