#!/usr/bin/env python3
"""Print the advisors' reproductions of published results, with their errors, and their speed.

    python benchmarks/validate_advisors.py

Published figures: Sardana & Frankle (arXiv 2401.00448): a model matching a Chinchilla-optimal
13B that serves 2T inference tokens should have ~7B parameters on ~1.25T tokens and saves ~17%
of lifetime FLOPs; Hoffmann et al. (2022) compute-optimal ~20 tokens per parameter.
"""
from __future__ import annotations

import time


def _row(what: str, got: float, want: float) -> None:
    err = abs(got - want) / abs(want)
    print(f"  {what:<34} got {got:>12.4g}   published {want:>12.4g}   error {err:6.2%}")


def main() -> None:
    from gpuplan.economics.scaling_laws import size_for_compute, size_for_quality_of
    from gpuplan.economics.self_host import compare_self_host_to_apis

    print("Sardana & Frankle: 13B-quality model, 2T inference tokens (laws=sardana)")
    r = size_for_quality_of(13e9, 2e12, laws="sardana")
    _row("parameters", r.params, 6.969e9)
    _row("training tokens", r.tokens, 1.248e12)
    _row("share of lifetime FLOPs saved", r.savings_fraction, 0.1745)

    # Chinchilla's own budget. Epoch AI's refit (Besiroglu et al. 2024) is the default for --compute;
    # Hoffmann's published approach-3 constants are known not to reproduce the 70B model (~40B).
    for laws in ("epoch", "hoffmann"):
        print(f"Chinchilla compute-optimal: 5.76e23 FLOPs (laws={laws})")
        c = size_for_compute(5.76e23, laws)
        _row("parameters (Chinchilla: 70B)", c.params, 70e9)
        _row("tokens (Chinchilla: 1.4T)", c.tokens, 1.4e12)

    print("Speed")
    for label, fn in [
        ("size --quality-of 13B --inference-tokens 2T", lambda: size_for_quality_of(13e9, 2e12, laws="sardana")),
        ("breakeven llama-3.1-70b 5B tokens/month",
         lambda: compare_self_host_to_apis("llama-3.1-70b", 5e9, price_per_gpu_hour=2.5)),
    ]:
        fn()
        t0 = time.perf_counter()
        for _ in range(5):
            out = fn()
        print(f"  {label:<46} {(time.perf_counter() - t0) / 5 * 1000:8.1f} ms")
    be = out["breakeven_tokens_per_month"]
    print(f"  breakeven compared {len(out['comparisons'])} APIs; primary {out['primary_api']}: "
          + (f"break-even at {be:.3g} tokens/month" if be else "self-hosting never breaks even at this GPU price"))


if __name__ == "__main__":
    main()
