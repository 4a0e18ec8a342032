"""Training estimator vs published runs: every usable row of perf/data/training-runs.csv.

    python benchmarks/validate_training.py [--no-loo]

Prints each row's prediction and error with the shipped (fitted) parameters, the same with
leave-one-out refits (the row's own kind of parameters refitted without it), and the baseline
rule GPU-hours = 6·N·D / (peak x 0.40) for full runs. Targets: full runs median <= 15%,
p90 <= 35%; throughput rows median <= 10%.
"""
from __future__ import annotations

import sys
import time


def main(argv: list[str]) -> int:
    from gpuplan.perf.efficiency import default_efficiency
    from gpuplan.perf.training_validation import evaluate, load_rows, prepare_all, summarize

    t0 = time.perf_counter()
    eff = default_efficiency()
    preps = prepare_all(eff)
    ins = evaluate(preps, eff)
    loo = evaluate(preps, eff, loo=True) if "--no-loo" not in argv else None
    loo_by_row = {r["row"]: r for r in loo} if loo else {}
    print(f"parameters: {eff.source}: eta_max {eff.eta_max}, h_half {eff.h_half}, tp_exposed {eff.tp_exposed}, "
          f"goodput_base {eff.goodput_base}, lost_h_per_failure {eff.lost_h_per_failure}")
    print(f"{'row':>3} {'kind':10} {'name':46} {'gpu':14} {'n':>6} {'measured':>11} {'predicted':>11} "
          f"{'err%':>7} {'LOO%':>7} {'base%':>7}  layout")
    for r in ins:
        lay = r["layout"]
        lay_s = f"t{lay['tp']} p{lay['pp']} d{lay['dp']} c{lay['cp']} e{lay['ep']} b{lay['micro_batch']} " \
                f"rc{lay['recompute']} z{lay['zero']} v{lay['vp']}"
        l = loo_by_row.get(r["row"])
        print(f"{r['row']:>3} {r['kind']:10} {r['name'][:46]:46} {r['gpu'][:14]:14} {r['n_gpus']:>6} "
              f"{r['measured']:>11.4g} {r['predicted']:>11.4g} {r['error_pct']:>7.1f} "
              f"{(l['error_pct'] if l else float('nan')):>7.1f} {r.get('baseline_error_pct', float('nan')):>7.1f}  "
              f"{lay_s}{'' if r['fits'] else ' (does not fit!)'}{' ' + r['count_note'] if r['count_note'] else ''}")
    skipped = [row for row in load_rows() if row["use"] != "1"]
    for row in skipped:
        print(f"{row['row']:>3} skipped    {row['name'][:46]:46} {row['skip_reason']}")
    print()
    units = {"FULL": "GPU-hours", "THROUGHPUT": "s/step", "PROJECTION": "GPU-hours (steady state)"}
    s_in = summarize(ins)
    s_loo = summarize(loo) if loo else {}
    for kind in ("FULL", "THROUGHPUT", "PROJECTION"):
        a = s_in[kind]
        line = f"{kind:10} ({units[kind]}) n={a['n']:2d}  in-sample median {a['median_abs_pct']:5.1f}%  p90 {a['p90_abs_pct']:5.1f}%"
        if s_loo:
            b = s_loo[kind]
            line += f"   LOO median {b['median_abs_pct']:5.1f}%  p90 {b['p90_abs_pct']:5.1f}%"
        print(line)
    b = s_in["FULL_baseline"]
    print(f"{'baseline':10} (6ND/(peak x 0.40)) n={b['n']:2d}  median {b['median_abs_pct']:5.1f}%  p90 {b['p90_abs_pct']:5.1f}%")
    print(f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
