"""Training estimator vs published runs: every usable row of perf/data/training-runs.csv.

    python benchmarks/validate_training.py [--quick] [--regime R] [--no-rows] [--write-bands] [--by-family]
                                        [--forward YYYY-MM]

Prints each row's prediction with the shipped parameters (data/training-efficiency.json), the same row predicted
leave-one-row-out (LOO) and leave-one-source-out (LOSO: every row of the row's paper/table/page left out of the
fit together), then per regime and row kind the median and p90 absolute percentage errors, and a summary against
the issue-13 targets. The LOSO table is the headline. `--write-bands` writes data/training-error-bands.json
(per-regime held-out quantiles of log(predicted/measured)); the shipped training bands are written leave-one-source-out:
held out as a family, NVIDIA's Megatron-Bridge MoE rows are predicted from the few MoE rows of other stacks alone.
Refits (in-sample, LOO, LOSO) move every parameter that
scripts/fit_training_efficiency.py fits, on the model linearized at the shipped point, then predict the held-out
rows exactly (see gpuplan.perf.training_validation). `--quick` predicts the LOO rows with the linear model;
`--regime` restricts the printed rows and tables (fits always use every row). `--forward 2026-01` also predicts every
row published from that month on with a fit on the older rows alone (forward in time: how the estimator does on
measurements newer than its fit, as an independent set of newer publications would test it). `--by-family` holds out a
publisher's table across its releases together (Megatron-Bridge 25.09 to 26.08, MLPerf Training's rounds, ...: see
training_validation.SOURCE_FAMILY_PREFIXES) instead of one release at a time, a stricter check. Whole runs are
predicted at the layout the planner would pick; those whose sources publish a layout are also shown at it. Last, the
throughput rows timing one configuration in two or more sources (a vendor's table re-measured at a later software
release) and their spread per regime (gpuplan.perf.repeatability): the floor under the error of an estimator that
cannot see the release.

Targets (LOSO): whole runs median <= 15 %, p90 <= 35 %; training throughput median <= 10 %, p90 <= 25 %;
no regime's median above 25 %.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from pathlib import Path

BANDS = Path(__file__).resolve().parents[1] / "src" / "gpuplan" / "perf" / "data" / "training-error-bands.json"
UNITS = {"FULL": "GPU-hours", "THROUGHPUT": "s/step", "PROJECTION": "GPU-hours (steady)", "all": "all kinds"}


def _f(x) -> str:
    return "   -" if x is None else f"{x:5.1f}"


def _forward_table(preps, eff, cutoff: str, res: list[dict]) -> None:
    """Forward in time: rows from `cutoff` on, fitted without them, next to their leave-one-source-out errors."""
    import numpy as np

    from gpuplan.perf.training_validation import forward_in_time

    try:
        fwd = forward_in_time(preps, eff, cutoff)
    except ValueError as e:
        print(f"forward in time: {e}")
        return
    loso = {r["row"]: r["loso_error_pct"] for r in res}
    print()
    print(f"Forward in time: the {len(fwd)} rows published from {cutoff} on, predicted by a fit on the "
          f"{len(preps) - len(fwd)} older rows only (absolute % error; bias = median signed forward error)")
    print(f"{'regime':12} {'kind':10} {'n':>4}  {'fwd med':>7} {'fwd p90':>7}  {'LOSO med':>8} {'LOSO p90':>8} {'bias':>6}")
    keys = sorted({(f["regime"], f["kind"]) for f in fwd}) + sorted({("all", f["kind"]) for f in fwd})
    for g, k in keys:
        sel = [f for f in fwd if (g == "all" or f["regime"] == g) and f["kind"] == k]
        a = np.abs([f["error_pct"] for f in sel])
        b = np.abs([loso[f["row"]] for f in sel])
        print(f"{g:12} {k:10} {len(sel):>4}  {np.median(a):7.1f} {np.percentile(a, 90):7.1f}  "
              f"{np.median(b):8.1f} {np.percentile(b, 90):8.1f} {np.median([f['error_pct'] for f in sel]):+6.1f}")


def _layout(lay: dict) -> str:
    return (f"t{lay['tp']} p{lay['pp']} d{lay['dp']} c{lay['cp']} e{lay['ep']} b{lay['micro_batch']} "
            f"rc{lay['recompute']} z{lay['zero']} v{lay['vp']}")


def _stated_layout_table(eff, regime: str | None) -> None:
    """Whole runs whose sources publish their layout: the planner's layout (the headline) against the stated one."""
    import numpy as np

    from gpuplan.perf.training_validation import stated_layout_check

    rows = [r for r in stated_layout_check(eff) if not regime or r["regime"] == regime]
    if not rows:
        return
    print()
    print(f"Whole runs whose sources state their layout ({len(rows)}), shipped parameters: % error at the layout the "
          f"planner picks (the headline: what a user asking for the GPU-hours gets) and at the stated one")
    print(f"{'row':>3} {'name':34} {'planner%':>8} {'stated%':>8}  stated layout")
    for r in rows:
        print(f"{r['row']:>3} {r['name'][:34]:34} {r['planner_error_pct']:>8.1f} {r['stated_error_pct']:>8.1f}  "
              f"{_layout(r['stated_layout'])}{'' if r['stated_fits'] else ' (does not fit!)'}")
    a, b = np.abs([r["planner_error_pct"] for r in rows]), np.abs([r["stated_error_pct"] for r in rows])
    print(f"{'median / p90':38} {np.median(a):5.1f} / {np.percentile(a, 90):.1f}  at the planner's layout; "
          f"{np.median(b):.1f} / {np.percentile(b, 90):.1f} at the stated one")


def main(argv: list[str]) -> int:
    from gpuplan.perf.error_bands import REGIMES

    ap = argparse.ArgumentParser(prog="validate_training.py", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="leave-one-row-out from the linear model (faster)")
    ap.add_argument("--regime", help=f"print only this regime's rows and lines ({', '.join(REGIMES)})")
    ap.add_argument("--no-rows", action="store_true", help="omit the per-row listing")
    ap.add_argument("--write-bands", action="store_true", help="write data/training-error-bands.json")
    ap.add_argument("--by-family", action="store_true",
                    help="hold out whole source families (a publisher's table across releases), not single sources")
    ap.add_argument("--forward", metavar="YYYY-MM",
                    help="also predict the rows published from this month on with a fit on the older rows only")
    args, unknown = ap.parse_known_args(argv)
    if unknown:
        print(f"error: unknown argument {unknown[0]!r} (see --help)", file=sys.stderr)
        return 2
    if args.regime and args.regime not in REGIMES:
        print(f"error: unknown regime {args.regime!r}; one of {', '.join(REGIMES)}", file=sys.stderr)
        return 2
    if args.forward and not re.fullmatch(r"(19|20)\d\d-(0[1-9]|1[0-2])", args.forward):
        print(f"error: --forward wants a month as YYYY-MM, not {args.forward!r}", file=sys.stderr)
        return 2
    if args.write_bands and (args.regime or args.quick):
        print("error: --write-bands needs the full run over every regime (drop --quick/--regime)", file=sys.stderr)
        return 2

    from gpuplan.perf.efficiency import default_efficiency
    from gpuplan.perf.training_validation import error_bands, load_rows, prepare_all, regime_table, validate

    t0 = time.perf_counter()
    eff = default_efficiency()
    preps = prepare_all(eff)
    res, fitted = validate(preps, eff, quick=args.quick, by_family=args.by_family)
    shown = [r for r in res if not args.regime or r["regime"] == args.regime]
    print(f"parameters: {eff.source}: eta_max {eff.eta_max}, h_half {eff.h_half}, tp_exposed {eff.tp_exposed}, "
          f"goodput_base {eff.goodput_base}, lost_h_per_failure {eff.lost_h_per_failure}")
    print("refitted on every row: " + ", ".join(f"{k} {v:.4g}" for k, v in fitted.items()))
    if not args.no_rows:
        print(f"{'row':>3} {'regime':12} {'kind':10} {'name':50} {'gpu':9} {'n':>5} {'measured':>10} "
              f"{'predicted':>10} {'err%':>7} {'LOO%':>7} {'LOSO%':>7}  source / layout")
        for r in shown:
            print(f"{r['row']:>3} {r['regime']:12} {r['kind']:10} {r['name'][:50]:50} {r['gpu'][:9]:9} "
                  f"{r['n_gpus']:>5} {r['measured']:>10.4g} {r['predicted']:>10.4g} {r['error_pct']:>7.1f} "
                  f"{r['loo_error_pct']:>7.1f} {r['loso_error_pct']:>7.1f}  {r['source_id']} | {_layout(r['layout'])}"
                  f"{'' if r['fits'] else ' (does not fit!)'}{' ' + r['count_note'] if r['count_note'] else ''}")
        for row in load_rows():
            if row["use"] != "1" and (not args.regime or row.get("regime") == args.regime):
                print(f"{row['row']:>3} {'skipped':23} {row['name'][:50]:50} {row['skip_reason']}")
        print()

    table = [t for t in regime_table(res) if not args.regime or t["regime"] in (args.regime, "all")]
    held = "leave-one-family-out (a publisher's releases held out together)" if args.by_family else \
        "leave-one-source-out (headline)"
    print("Absolute % error by regime and row kind. shipped = training-efficiency.json as is; in = refitted on "
          f"every row; LOSO = {held}; LOO = leave-one-row-out; bias = median signed LOSO "
          "error (+ = predicts more time than measured)")
    print(f"{'regime':12} {'kind':10} {'n':>4} {'src':>4}  {'shipped':>7}  {'in med':>6} {'in p90':>6}  "
          f"{'LOSO med':>8} {'LOSO p90':>8} {'LOO med':>7} {'bias':>6}")
    for t in table:
        if args.regime and t["regime"] == "all" and t["kind"] != "all":
            continue
        print(f"{t['regime']:12} {t['kind']:10} {t['n']:>4} {t['sources']:>4}  {_f(t['shipped_median']):>7}  "
              f"{_f(t['in_median']):>6} "
              f"{_f(t['in_p90']):>6}  {_f(t['loso_median']):>8} {_f(t['loso_p90']):>8} {_f(t['loo_median']):>7} "
              f"{t['loso_bias_pct']:>+6.1f}")

    by = {(t["regime"], t["kind"]): t for t in regime_table(res)}
    full, thr = by.get(("all", "FULL")), by.get(("all", "THROUGHPUT"))
    reg = [(g, by[(g, "all")]["loso_median"]) for g in REGIMES if (g, "all") in by]
    worst = max(reg, key=lambda x: x[1])
    print()
    print(f"Summary against the issue-13 targets (leave-one-{'family' if args.by_family else 'source'}-out):")
    print(f"  rows used {len(res)} from {len({r['source_id'] for r in res})} sources")
    if full:
        print(f"  whole runs (GPU-hours)     n={full['n']:3d}  median {full['loso_median']:5.1f}% (target <= 15)  "
              f"p90 {full['loso_p90']:5.1f}% (target <= 35)   "
              f"in-sample {full['in_median']:.1f}% / {full['in_p90']:.1f}%")
    if thr:
        print(f"  training throughput        n={thr['n']:3d}  median {thr['loso_median']:5.1f}% (target <= 10)  "
              f"p90 {thr['loso_p90']:5.1f}% (target <= 25)   in-sample {thr['in_median']:.1f}% / {thr['in_p90']:.1f}%")
    over = [f"{g} {m:.1f}%" for g, m in reg if m > 25]
    print(f"  worst regime median        {worst[0]} {worst[1]:.1f}% (target: none above 25); "
          f"above 25%: {', '.join(over) or 'none'}")
    _stated_layout_table(eff, args.regime)
    from repeat_spread import print_spread  # this folder
    from gpuplan.perf.training_validation import training_repeat_pairs

    print_spread([p for p in training_repeat_pairs() if not args.regime or p["regime"] == args.regime],
                 "a training step (tokens/s per GPU)")
    if args.forward:
        _forward_table(preps, eff, args.forward, res)
    print(f"({time.perf_counter() - t0:.1f} s)")

    if args.write_bands:
        held_out = "source family (a publisher's table across its releases)" if args.by_family else "source"
        doc = {"_source": {"command": "python benchmarks/validate_training.py --write-bands"
                                      + (" --by-family" if args.by_family else ""),
                           "date": dt.date.today().isoformat(), "parameters": eff.source,
                           "rows": len(res), "refitted_parameters": fitted,
                           "sources": len({r["source_id"] for r in res}),
                           "meaning": f"quantiles of log(predicted/measured) per regime, every row predicted with its "
                                      f"{held_out} left out of the fit (all fitted parameters refitted on the model "
                                      "linearized at the shipped point, held-out rows predicted exactly; regimes: "
                                      "gpuplan.perf.error_bands); a positive value means the estimator predicted "
                                      "more time/GPU-hours than measured"},
               "regimes": error_bands(res)}
        BANDS.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {BANDS.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
