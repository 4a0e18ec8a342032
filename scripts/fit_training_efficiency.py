"""Fit the training efficiency and goodput parameters to the validation rows; write them to
src/gpuplan/perf/data/training-efficiency.json.

Run by hand from the repository root:  python scripts/fit_training_efficiency.py

Compute parameters (eta_max, h_half, tp_exposed) are fitted to the THROUGHPUT rows (seconds per
step at a stated layout); goodput parameters (goodput_base, lost_h_per_failure) to the FULL RUN
rows (whole-run GPU-hours), given the compute fit. Loss: mean absolute log error. Rows whose GPU
count is not published run at the planner's default count, which itself depends on the fit, so
the fit is repeated once with the first result (deterministic).
"""
from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "gpuplan" / "perf" / "data" / "training-efficiency.json"


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from gpuplan.perf.efficiency import FITTED_NAMES, TrainingEfficiency
    from gpuplan.perf.training_validation import evaluate, fit_all, prepare_all, summarize

    eff = TrainingEfficiency()
    for _ in range(2):
        preps = prepare_all(eff)
        eff = fit_all(preps, TrainingEfficiency())
    results = evaluate(preps, eff)
    summ = summarize(results)
    used = sorted({r["row"] for r in results})
    doc = {
        "_doc": ("Training efficiency parameters fitted by scripts/fit_training_efficiency.py to "
                 "data/training-runs.csv. eta = eta_max * lowp_ratio / (1 + h_half / hidden); tp_exposed: "
                 "share of tensor-parallel collectives on the critical path; goodput(n) = goodput_base / "
                 "(1 + n * lost_h_per_failure / gpu_h_per_failure). Other parameters are fixed defaults "
                 "(see gpuplan.perf.efficiency)."),
        "source": f"fitted {dt.date.today().isoformat()} on {len(used)} rows",
        "fitted": list(FITTED_NAMES),
        "params": {k: v for k, v in eff.as_dict().items() if k != "source"},
        "rows": used,
        "summary_in_sample": summ,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    print({k: doc["params"][k] for k in FITTED_NAMES})
    for k, v in summ.items():
        print(f"  {k:14s} n={v['n']:2d} median {v['median_abs_pct']:.1f}%  p90 {v['p90_abs_pct']:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
