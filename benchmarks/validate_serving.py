#!/usr/bin/env python3
"""Serving estimator vs published measurements, per regime: in-sample and leave-one-source-out.

Every usable row of src/gpuplan/perf/data/inference-runs.csv is predicted with the fitted
parameters (in-sample) and with parameters refitted without every row of its source
(leave-one-source-out, LOSO: one table or paper out at a time). Regimes are those of
gpuplan.perf.inference_validation.classify_regime. For each regime and metric family
(throughput, TTFT, TPOT) the median and p90 absolute percentage error are printed, then the
issue's targets next to the measured figures. Rows whose input length the source does not
give are listed but kept out of the summaries.

    python benchmarks/validate_serving.py [--no-loso] [--rows] [--write-bands] [--by-family] [--forward YYYY-MM]
                                          [--shipped-factors] [--jobs N] [--iters N --restarts N]

Each held-out refit runs the shipped fit's own search from mid-range (inference_validation.FIT_ITERS Nelder-Mead
steps, then up to FIT_RESTARTS restarts): converged, about two minutes per source on one core, so the default
leave-one-source-out takes about 35 minutes on 2 cores (--jobs). `--iters 100 --restarts 0` is the short search
used before 2026-11-28 (12 minutes): its held-out figures move by a few points with any change to the loss.

Held-out refits also refit the architecture factors (scripts/fit_vendor_efficiency.py) without the
vendor rows the held-out source published (the same source id or page: Intel's Gaudi tables, NVIDIA's
TensorRT-LLM v1.0 table, an MLPerf round), so a table never predicts itself through its architecture's
factor; --shipped-factors keeps the shipped factors in every refit instead (the measure before 2026-11-28).

--by-family holds out whole source families instead (the same publisher's table at other software
versions, see inference_validation.SOURCE_FAMILIES): a stricter check, since such tables re-measure
mostly the same configurations.

--forward 2025-09 also refits on the sources dated before that month only and predicts the newer ones (forward
in time: how the estimator does on measurements newer than its fit).

Under the error tables: the rows timing one configuration in two or more sources (a vendor's table re-measured at a
later software release), their spread per regime (gpuplan.perf.repeatability): the floor under the error of an
estimator that cannot see the release.

--write-bands writes src/gpuplan/perf/data/serving-error-bands.json: per regime the held-out
residual quantiles of log(predicted / measured) (p10, p50, p90, n), with the command and date.
The shipped bands are written with --by-family (the stricter hold-out): plans carry the error
the estimator shows on a publisher it never saw.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BANDS = ROOT / "src/gpuplan/perf/data/serving-error-bands.json"
TARGET_MEDIAN, TARGET_P90, TARGET_REGIME_MEDIAN = 15.0, 35.0, 25.0


def _table(ins: dict, loso: dict, first: str = "in-sample median") -> None:
    from gpuplan.perf.inference_validation import REGIMES

    print(f"{'regime':<18} {'metric':<10} {'n':>4}  {first:>16} {'p90':>7}   {'LOSO median':>11} {'p90':>7}")
    for reg in REGIMES + ("all",):
        for fam in ("throughput", "ttft", "tpot", "all"):
            a = ins.get(reg, {}).get(fam)
            if not a:
                continue
            b = loso.get(reg, {}).get(fam)
            lo = f"{b['median_ape']:>10.1f}% {b['p90_ape']:>6.1f}%" if b else f"{'-':>11} {'-':>7}"
            print(f"{reg:<18} {fam:<10} {a['n']:>4}  {a['median_ape']:>15.1f}% {a['p90_ape']:>6.1f}%   {lo}")


def main(argv: list[str] | None = None) -> int:
    from gpuplan.perf import inference_validation as v
    from gpuplan.perf.engines import fitted_efficiency

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-loso", action="store_true", help="skip the leave-one-source-out refits (minutes)")
    ap.add_argument("--rows", action="store_true", help="print every comparison")
    ap.add_argument("--iters", type=int, default=v.FIT_ITERS,
                    help="Nelder-Mead steps per pass of each held-out refit (default: the shipped fit's search)")
    ap.add_argument("--restarts", type=int, default=v.FIT_RESTARTS,
                    help="further passes from the best point, stopping once one gains < 0.1%% (0: one short search)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="held-out refits run in this many processes (default: one per CPU)")
    ap.add_argument("--write-bands", action="store_true", help="write serving-error-bands.json from the LOSO residuals")
    ap.add_argument("--by-family", action="store_true",
                    help="hold out whole source families (a publisher's table across versions), not single sources")
    ap.add_argument("--shipped-factors", action="store_true",
                    help="held-out refits keep the shipped architecture factors (fitted on every vendor row)")
    ap.add_argument("--forward", metavar="YYYY-MM",
                    help="also predict the rows of sources dated from this month on with a refit on the older ones")
    args = ap.parse_args(argv)
    if args.forward and not re.fullmatch(r"(19|20)\d\d-(0[1-9]|1[0-2])", args.forward):
        print(f"error: --forward wants a month as YYYY-MM, not {args.forward!r}", file=sys.stderr)
        return 2
    if args.iters < 1 or args.restarts < 0 or args.jobs < 1:
        print("error: --iters and --jobs want 1 or more, --restarts 0 or more", file=sys.stderr)
        return 2
    if args.write_bands and args.no_loso:
        print("error: --write-bands needs the leave-one-source-out refits; drop --no-loso", file=sys.stderr)
        return 2

    eff = fitted_efficiency()
    print(f"parameters: eta_bw {eff.eta_bw:.3f}, eta_c {eff.eta_c:.3f} (x{eff.lowp_gemm_ratio} for 8/4-bit GEMMs), "
          f"all-reduce {eff.allreduce_latency_us:.1f} us, step overhead {eff.step_overhead_ms:.2f} ms, "
          f"latency factor {eff.latency_factor:.3f}, MoE t_half {eff.moe_half_tokens:.1f} tokens, MoE GEMM share {eff.moe_gemm_ratio:.3f}, "
          f"MoE pair overhead {eff.moe_pair_overhead_ns:.1f} ns, expert-popularity CV {eff.ep_hot_excess:.2f}, "
          f"layer floor {eff.layer_overhead_us:.1f} us, server front end {eff.frontend_ms:.1f} ms, engine factors "
          f"{ {k: round(x, 3) for k, x in eff.engine_factor.items()} }  [{eff.source}]")
    rows = v.usable_rows()
    unfitted = len(rows) - len(v.fit_rows())
    print(f"rows: {len(rows)} used from {len({r['source_id'] for r in rows})} sources ({unfitted} scored, not fitted: "
          "an assumed input length or a fit_note); by regime: "
          + ", ".join(f"{g} {sum(r['regime'] == g for r in rows)}" for g in v.REGIMES))
    ins = v.errors(eff)
    from validate_vendor_efficiency import fit_module  # this folder: scripts/fit_vendor_efficiency.py as a module

    without = None if args.shipped_factors else fit_module().factors_without
    loso_list = [] if args.no_loso else v.leave_one_source_out(
        eff, iters=args.iters, restarts=args.restarts, by_family=args.by_family, factors_without=without, jobs=args.jobs)
    if args.by_family:
        fams = sorted({v.source_family(r["source_id"]) for r in rows})
        print(f"held out by source family ({len(fams)}): " + ", ".join(fams))
    loso = {(e["row_id"], e["metric"]): e for e in loso_list}
    if args.rows:
        print(f"{'row':>3} {'metric':<8} {'regime':<17} {'source':<22} {'measured':>9} {'pred':>9} {'err':>7} {'LOSO':>7}  run")
        for e in ins:
            lo = loso.get((e["row_id"], e["metric"]))
            lerr = f"{100 * lo['error']:>+6.0f}%" if lo else f"{'-':>7}"
            metric = {"output_tokens_per_s": "tok/s", "ttft_ms": "TTFT", "tpot_ms": "TPOT"}[e["metric"]]
            print(f"{e['row_id']:>3} {metric:<8} {e['regime']:<17} {e['source_id'][:22]:<22} {e['measured']:>9.1f} "
                  f"{e['predicted']:>9.1f} {100 * e['error']:>+6.0f}% {lerr}  {e['label']}")
        for r in v.validation_rows():
            if r["use"] != "yes":
                print(f"skip row {r['row_id']} ({r['model_label']}): {r['skip_reason']}")
    print()
    s_ins = v.summarize_regimes(ins)
    s_loso = v.summarize_regimes(loso_list) if loso_list else {}
    _table(s_ins, s_loso)
    if s_loso:
        a = s_loso["all"]["all"]
        worst = max(((reg, f["all"]["median_ape"]) for reg, f in s_loso.items() if reg != "all"), key=lambda x: x[1])
        ok = lambda b: "met" if b else "NOT met"  # noqa: E731
        print()
        print(f"targets (issue 13, leave-one-{'family' if args.by_family else 'source'}-out)   measured")
        print(f"  serving median APE <= {TARGET_MEDIAN:.0f}%              {a['median_ape']:.1f}%  {ok(a['median_ape'] <= TARGET_MEDIAN)}")
        print(f"  serving p90 APE    <= {TARGET_P90:.0f}%              {a['p90_ape']:.1f}%  {ok(a['p90_ape'] <= TARGET_P90)}")
        print(f"  no regime median   >  {TARGET_REGIME_MEDIAN:.0f}%              worst {worst[0]} {worst[1]:.1f}%  "
              f"{ok(worst[1] <= TARGET_REGIME_MEDIAN)}")
    from repeat_spread import print_spread  # this folder

    print_spread(v.serving_repeat_pairs(), "a serving run (output tokens/s)")
    if args.forward:
        try:
            fwd = v.forward_in_time(eff, args.forward, iters=args.iters, restarts=args.restarts,
                                    factors_without=without)
        except ValueError as e:
            print(f"forward in time: {e}")
        else:
            newer = {(e["row_id"], e["metric"]) for e in fwd}
            print()
            print(f"Forward in time: {len(fwd)} comparisons of sources dated from {args.forward} on, predicted by a refit "
                  f"on the older sources only; LOSO columns: the same comparisons held out one source at a time")
            _table(v.summarize_regimes(fwd), v.summarize_regimes([e for e in loso_list if (e["row_id"], e["metric"]) in newer]),
                   first="forward median")
    if args.write_bands:
        doc = {
            "_doc": (f"Per-regime leave-one-{'family' if args.by_family else 'source'}-out residuals of the serving "
                     "estimator: quantiles of log(predicted / measured) over every comparison (throughput, TTFT, TPOT) "
                     "of the regime's rows with stated inputs (not those timing other software than their engine key, "
                     "a fit_note), each predicted by a refit that never saw its source"
                     f"{' family (every version of a publisher table)' if args.by_family else ''}. "
                     "A prediction x has a p10-p90 band of "
                     "x / exp(p90) .. x / exp(p10) for the measured value. Regimes: "
                     "gpuplan.perf.inference_validation.classify_regime."),
            "command": "python benchmarks/validate_serving.py --write-bands" + (" --by-family" if args.by_family else ""),
            "date": dt.date.today().isoformat(),
            "efficiency_source": eff.source,
            "regimes": v.residual_bands(loso_list),
        }
        BANDS.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {BANDS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
