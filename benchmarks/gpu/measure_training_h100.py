"""Measure single-GPU training throughput of Llama-style decoders (held-out check of gpuplan's time model).

    python3 benchmarks/gpu/measure_training_h100.py --out DIR [--budget-s 420]
    python3 benchmarks/gpu/measure_training_h100.py --device cpu --smoke --out /tmp/x   # logic check

Plain PyTorch, nothing else. Each training step is forward + cross-entropy + backward + AdamW
(fused on CUDA); parameters in fp32 under torch.autocast(bfloat16) (standard mixed precision),
no activation recomputation, no gradient accumulation, random weights and random tokens.
Attention goes through F.scaled_dot_product_attention(is_causal=True) (the flash kernel on
Hopper for bf16), with enable_gqa when the kernel accepts it (checked at start, else K/V are
repeated). Each shape runs in eager mode and compiled: torch.compile of every transformer block
and of the final-norm + output head + loss ("regional" compilation: identical blocks share one
compiled graph, so a shape compiles in seconds instead of minutes; the fused AdamW step stays
eager); shapes named in --full-compile-shapes also run "compile_full", torch.compile(model) of the
whole model, to show the regional compile is not leaving speed behind. A micro-batch that runs out of memory is halved and tried again.

Writes, under --out:
  training_runs.csv   one row per (shape, mode): the columns gpuplan's validation reads
  gemm.csv            bf16 matmul TFLOP/s: (16384 x h) @ (h x 4h) per hidden size, and 8192^3
  log.txt             what happened (also printed)
Rows are appended as they finish, so a run stopped at its time budget keeps what it measured.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import gc
import math
import os
import statistics
import sys
import time
import traceback
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    name: str
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    ffn: int
    vocab: int
    seq_len: int
    micro_batch: int  # first try; halved on out-of-memory

    @property
    def head_dim(self) -> int:
        return self.hidden // self.n_heads


# Priority order: the run stops at its time budget, so the shapes that matter most come first.
SHAPES = [
    Shape("llama3.2-1b-like (untied)", 16, 2048, 32, 8, 8192, 128256, 2048, 8),
    Shape("gpt2-small-like (swiglu)", 12, 768, 12, 12, 2048, 50304, 2048, 16),
    Shape("h3072-1.8b", 16, 3072, 24, 8, 8192, 32000, 2048, 8),
    Shape("h2560-1.6b", 20, 2560, 20, 4, 6912, 32000, 2048, 8),
    Shape("h1024-400m", 24, 1024, 16, 16, 2816, 50304, 2048, 16),
    Shape("qwen2.5-1.5b-like (untied)", 28, 1536, 12, 2, 8960, 151936, 2048, 8),
    Shape("llama3.2-1b-like (untied) s4096", 16, 2048, 32, 8, 8192, 128256, 4096, 4),
    Shape("gpt2-small-like (swiglu) s4096", 12, 768, 12, 12, 2048, 50304, 4096, 8),
    Shape("h4096-x8 (llama3-8b-like layers)", 8, 4096, 32, 8, 14336, 32000, 2048, 8),
    Shape("qwen2.5-0.5b-like (untied)", 24, 896, 14, 2, 4864, 151936, 2048, 8),
    Shape("llama3.2-3b-like (untied)", 28, 3072, 24, 8, 8192, 128256, 2048, 2),
]

SMOKE_SHAPES = [
    Shape("smoke-mha", 2, 64, 4, 4, 176, 512, 64, 2),
    Shape("smoke-gqa", 2, 96, 6, 2, 256, 384, 32, 3),
]

GEMM_HIDDEN = [768, 1024, 1536, 2048, 2560, 3072]

RUN_COLUMNS = ["date", "device", "torch", "mode", "shape", "n_layers", "hidden", "n_heads", "n_kv_heads", "ffn",
               "vocab", "seq_len", "micro_batch", "params", "step_time_s", "step_time_min_s", "step_time_max_s",
               "steps_timed", "tokens_per_s", "peak_mem_gib", "compile_scope", "attention", "optimizer", "run_id", "notes"]
GEMM_COLUMNS = ["date", "device", "torch", "m", "k", "n", "label", "time_ms", "tflops"]


# ---------------------------------------------------------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def rope_tables(seq_len: int, head_dim: int, device, theta: float = 500000.0):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    t = torch.arange(seq_len, device=device, dtype=torch.float32)
    freqs = torch.outer(t, inv)  # (s, d/2)
    emb = torch.cat([freqs, freqs], dim=-1)  # (s, d)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin):
    # x: (b, heads, s, d); rotate-half form (Llama / HF)
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    rot = torch.cat([-x2, x1], dim=-1)
    return x * cos.to(x.dtype) + rot * sin.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, s: Shape, gqa_native: bool):
        super().__init__()
        self.nh, self.nkv, self.hd = s.n_heads, s.n_kv_heads, s.head_dim
        self.q = nn.Linear(s.hidden, s.n_heads * self.hd, bias=False)
        self.k = nn.Linear(s.hidden, s.n_kv_heads * self.hd, bias=False)
        self.v = nn.Linear(s.hidden, s.n_kv_heads * self.hd, bias=False)
        self.o = nn.Linear(s.n_heads * self.hd, s.hidden, bias=False)
        self.gqa_native = gqa_native

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.nh, self.hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.nkv, self.hd).transpose(1, 2)
        v = self.v(x).view(b, t, self.nkv, self.hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if self.nkv != self.nh:
            if self.gqa_native:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            else:
                rep = self.nh // self.nkv
                y = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, dim=1),
                                                   v.repeat_interleave(rep, dim=1), is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, self.nh * self.hd))


class SwiGLU(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.gate = nn.Linear(s.hidden, s.ffn, bias=False)
        self.up = nn.Linear(s.hidden, s.ffn, bias=False)
        self.down = nn.Linear(s.ffn, s.hidden, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, s: Shape, gqa_native: bool):
        super().__init__()
        self.attn_norm = RMSNorm(s.hidden)
        self.attn = Attention(s, gqa_native)
        self.ffn_norm = RMSNorm(s.hidden)
        self.ffn = SwiGLU(s)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.ffn(self.ffn_norm(x))


class HeadLoss(nn.Module):
    """Final norm + untied output head + cross-entropy (mean over tokens)."""

    def __init__(self, s: Shape):
        super().__init__()
        self.norm = RMSNorm(s.hidden)
        self.out = nn.Linear(s.hidden, s.vocab, bias=False)

    def forward(self, x, targets):
        logits = self.out(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


class Decoder(nn.Module):
    def __init__(self, s: Shape, gqa_native: bool):
        super().__init__()
        self.embed = nn.Embedding(s.vocab, s.hidden)
        self.blocks = nn.ModuleList(Block(s, gqa_native) for _ in range(s.n_layers))
        self.head = HeadLoss(s)
        cos, sin = rope_tables(s.seq_len, s.head_dim, self.embed.weight.device)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, idx, targets):
        x = self.embed(idx)
        for blk in self.blocks:
            x = blk(x, self.cos, self.sin)
        return self.head(x, targets)


def init_weights(model: nn.Module) -> None:
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            nn.init.normal_(p, mean=0.0, std=0.02)


# ---------------------------------------------------------------------------------------------
class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def __call__(self, *msg):
        line = " ".join(str(m) for m in msg)
        print(line, flush=True)
        self.f.write(line + "\n")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def is_oom(e: BaseException) -> bool:
    if isinstance(e, torch.cuda.OutOfMemoryError):
        return True
    text = f"{type(e).__name__}: {e}"
    return "out of memory" in text.lower() or "OutOfMemory" in text


def free(device):
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def probe_gqa(device, dtype) -> tuple[bool, str]:
    """Does SDPA's flash kernel take GQA (enable_gqa) here? Forward and backward, forced backend."""
    b, s, d = 2, 128, 64
    q = torch.randn(b, 8, s, d, device=device, dtype=dtype, requires_grad=True)
    k = torch.randn(b, 2, s, d, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(b, 2, s, d, device=device, dtype=dtype, requires_grad=True)
    try:
        if device.type == "cuda":
            from torch.nn.attention import SDPBackend, sdpa_kernel

            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                y.float().sum().backward()
            # Also check plain MHA uses flash when forced.
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                F.scaled_dot_product_attention(q, q, q, is_causal=True).float().sum().backward()
            sync(device)
            return True, "sdpa flash (enable_gqa)"
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        y.float().sum().backward()
        return True, "sdpa (cpu, enable_gqa)"
    except Exception as e:  # noqa: BLE001
        return False, f"sdpa flash with repeated K/V (enable_gqa failed: {type(e).__name__}: {str(e)[:120]})"


def measure_shape(s: Shape, mode: str, device, args, log, gqa_native: bool, mb: int) -> dict:
    """Build, warm up and time one (shape, mode, micro-batch). Raises on failure (OOM included)."""
    free(device)
    with torch.device(device):
        torch.manual_seed(0)
        model = Decoder(s, gqa_native)
    init_weights(model)
    params = sum(p.numel() for p in model.parameters())
    if device.type == "cuda":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)
        opt_name = "AdamW fused"
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, foreach=True)
        opt_name = "AdamW foreach (cpu)"
    scope = ""
    if mode == "compile":
        torch._dynamo.reset()
        for i, blk in enumerate(model.blocks):
            model.blocks[i] = torch.compile(blk, dynamic=False)
        model.head = torch.compile(model.head, dynamic=False)
        scope = "per-block + head/loss (regional), AdamW eager"
    elif mode == "compile_full":
        torch._dynamo.reset()
        model = torch.compile(model, dynamic=False)
        scope = "whole model: torch.compile(model), AdamW eager"
    elif mode != "eager":
        raise ValueError(f"unknown mode {mode!r}")
    gen = torch.Generator(device=device).manual_seed(1)
    idx = torch.randint(0, s.vocab, (mb, s.seq_len), device=device, generator=gen)
    tgt = torch.randint(0, s.vocab, (mb, s.seq_len), device=device, generator=gen)
    amp_dtype = torch.bfloat16

    def step():
        with torch.autocast(device_type=device.type, dtype=amp_dtype):
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    try:
        t0 = time.perf_counter()
        loss0 = None
        for i in range(args.warmup):
            loss = step()
            if i == 0:
                sync(device)
                loss0 = float(loss.detach())
                log(f"    first step {time.perf_counter() - t0:.1f} s (loss {loss0:.3f})")
        sync(device)
        warm_s = time.perf_counter() - t0
        if not math.isfinite(loss0):
            raise RuntimeError(f"non-finite loss {loss0}")
        times = []
        timed_t0 = time.perf_counter()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps + 1)]
            ev[0].record()
            for i in range(args.steps):
                step()
                ev[i + 1].record()
                # stop early on a long step count (keeps within budget): check every few steps
                if i >= args.min_steps - 1 and (i + 1) % 5 == 0 and time.perf_counter() - timed_t0 > args.max_timing_s:
                    ev = ev[: i + 2]
                    break
            torch.cuda.synchronize(device)
            times = [ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(len(ev) - 1)]
            peak = torch.cuda.max_memory_allocated(device) / 2**30
        else:
            for i in range(args.steps):
                a = time.perf_counter()
                step()
                times.append(time.perf_counter() - a)
            peak = float("nan")
        loss_end = float(step().detach())
        sync(device)
        if not math.isfinite(loss_end):
            raise RuntimeError(f"non-finite loss after timing: {loss_end}")
    finally:
        del opt, model, idx, tgt
        free(device)
    med = statistics.median(times)
    row = {"mode": mode, "shape": s.name, "n_layers": s.n_layers, "hidden": s.hidden, "n_heads": s.n_heads,
           "n_kv_heads": s.n_kv_heads, "ffn": s.ffn, "vocab": s.vocab, "seq_len": s.seq_len, "micro_batch": mb,
           "params": params, "step_time_s": f"{med:.6f}", "step_time_min_s": f"{min(times):.6f}",
           "step_time_max_s": f"{max(times):.6f}", "steps_timed": len(times),
           "tokens_per_s": f"{mb * s.seq_len / med:.1f}", "peak_mem_gib": f"{peak:.3f}", "compile_scope": scope,
           "optimizer": opt_name, "notes": f"warmup {args.warmup} steps {warm_s:.1f} s; loss {loss0:.3f}->{loss_end:.3f}"}
    return row


def gemm_sweep(device, args, log, meta, path, when: str = ""):
    """bf16 matmul TFLOP/s on random data, median of CUDA-event-timed repeats after a warm-up of
    at least 0.3 s of back-to-back products (lets the clocks ramp up)."""
    cases = [(args.gemm_tokens, h, 4 * h, f"tokens x h x 4h (h={h}){when}") for h in GEMM_HIDDEN]
    cases.append((8192, 8192, 8192, f"8192^3{when}"))
    if args.smoke:
        cases = [(64, 32, 128, f"smoke{when}"), (128, 128, 128, f"smoke-cube{when}")]
    rows = []
    for m, k, n, label in cases:
        try:
            a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
            b = torch.randn(k, n, device=device, dtype=torch.bfloat16)
            t_w = time.perf_counter()
            n_w = 0
            while n_w < 5 or (not args.smoke and time.perf_counter() - t_w < 0.3):
                for _ in range(20 if not args.smoke else 1):
                    c = a @ b
                    n_w += 1
                sync(device)
            reps = 50 if not args.smoke else 3
            ts = []
            for _ in range(reps):
                if device.type == "cuda":
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    c = a @ b
                    e1.record()
                    e1.synchronize()
                    ts.append(e0.elapsed_time(e1) / 1e3)
                else:
                    t0 = time.perf_counter()
                    c = a @ b
                    ts.append(time.perf_counter() - t0)
            med = statistics.median(ts)
            tf = 2.0 * m * k * n / med / 1e12
            assert torch.isfinite(c.float().sum()), "non-finite GEMM output"
            row = {**meta, "m": m, "k": k, "n": n, "label": label, "time_ms": f"{med * 1e3:.4f}", "tflops": f"{tf:.1f}"}
            rows.append(row)
            append_csv(path, GEMM_COLUMNS, row)
            log(f"  GEMM {label:28s} {m}x{k}x{n}: {med * 1e3:8.3f} ms  {tf:7.1f} TFLOP/s")
            del a, b, c
        except Exception as e:  # noqa: BLE001
            log(f"  GEMM {label} failed: {type(e).__name__}: {e}")
    free(device)
    return rows


def append_csv(path, columns, row):
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerow(row)


# ---------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes (logic check on the CPU)")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--budget-s", type=float, default=420.0, help="start no new measurement after this many seconds")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--min-steps", type=int, default=10)
    ap.add_argument("--max-timing-s", type=float, default=25.0, help="stop timing a shape after this (>= min-steps)")
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--shapes", default="", help="comma-separated indices into the shape list (default: all)")
    ap.add_argument("--gemm-tokens", type=int, default=16384)
    ap.add_argument("--no-gemm", action="store_true")
    ap.add_argument("--run-id", default="", help="a label written into every row")
    ap.add_argument("--gemm-after", action="store_true", help="repeat the GEMM sweep after the training runs")
    ap.add_argument("--full-compile-shapes", default="",
                    help="indices (into the selected shapes) that also run mode compile_full: torch.compile(model)")
    args = ap.parse_args(argv)

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
    log(f"torch {torch.__version__}, python {sys.version.split()[0]}, date {meta['date']}")
    runs_csv = os.path.join(args.out, "training_runs.csv")
    gemm_csv = os.path.join(args.out, "gemm.csv")

    if not args.no_gemm:
        log("GEMM sweep (bf16, random data)")
        gemm_sweep(device, args, log, meta, gemm_csv)

    gqa_native, attn_desc = probe_gqa(device, torch.bfloat16 if device.type == "cuda" else torch.float32)
    log(f"attention: {attn_desc}")

    shapes = SMOKE_SHAPES if args.smoke else SHAPES
    if args.shapes:
        shapes = [shapes[int(i)] for i in args.shapes.split(",")]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    full_idx = {int(i) for i in args.full_compile_shapes.split(",") if i.strip()}
    compile_ok = {"compile": True, "compile_full": True}
    n_rows = 0
    # Jobs: every shape in every mode, then the whole-model compiles (last: the budget may cut them).
    jobs = [(si, m) for si in range(len(shapes)) for m in modes]
    jobs += [(si, "compile_full") for si in sorted(full_idx) if si < len(shapes) and "compile_full" not in modes]
    mb_ok: dict[int, int] = {}
    for si, mode in jobs:
        s = shapes[si]
        if not compile_ok.get(mode, True):
            continue
        elapsed = time.perf_counter() - t_start
        if elapsed > args.budget_s:
            log(f"time budget reached ({elapsed:.0f} s): skipping {s.name} {mode}")
            continue
        mb = mb_ok.get(si) or s.micro_batch
        while mb >= 1:
            log(f"[{time.perf_counter() - t_start:5.0f} s] {s.name} {mode}: L={s.n_layers} h={s.hidden} "
                f"heads={s.n_heads}/{s.n_kv_heads} ffn={s.ffn} V={s.vocab} s={s.seq_len} mb={mb}")
            try:
                row = measure_shape(s, mode, device, args, log, gqa_native, mb)
            except Exception as e:  # noqa: BLE001
                free(device)
                if is_oom(e) and mb > 1:
                    log(f"    out of memory at mb={mb}; halving")
                    mb //= 2
                    continue
                log(f"    FAILED: {type(e).__name__}: {str(e)[:400]}")
                if mode != "eager":
                    log("    (compile traceback, last lines)\n" + "".join(traceback.format_exc().splitlines(True)[-8:]))
                if mode != "eager" and not is_oom(e):
                    compile_ok[mode] = False  # do not burn the budget on further compile failures
                    log(f"    {mode} mode disabled for the remaining shapes")
                break
            row.update(meta)
            row["attention"] = attn_desc
            row["run_id"] = args.run_id
            append_csv(runs_csv, RUN_COLUMNS, row)
            n_rows += 1
            if mode == "eager":
                mb_ok[si] = mb
            st, tps = float(row["step_time_s"]), float(row["tokens_per_s"])
            log(f"    {mode}: median step {st * 1e3:.1f} ms over {row['steps_timed']} steps "
                f"(min {float(row['step_time_min_s']) * 1e3:.1f}, max {float(row['step_time_max_s']) * 1e3:.1f}), "
                f"{tps:,.0f} tok/s, peak {row['peak_mem_gib']} GiB, params {row['params'] / 1e9:.3f} B")
            break
    if args.gemm_after and not args.no_gemm:
        log("GEMM sweep again, after the training runs")
        gemm_sweep(device, args, log, meta, gemm_csv, when=" after training")
    log(f"done: {n_rows} rows in {time.perf_counter() - t_start:.0f} s -> {runs_csv}")
    return 0 if n_rows else 1


if __name__ == "__main__":
    sys.exit(main())
