"""Per-architecture efficiency factors vs the rows they were fitted on (perf/data/vendor-runs.csv).

    python benchmarks/validate_vendor_efficiency.py [--roofs]

Prints every row of vendor-runs.csv with its reference, derived efficiency ratio (relative
to H100), the shipped factor of its architecture, the in-sample error and the
leave-one-source-out prediction and error; unused rows show their ratio for information
(FP4 training, early-H100 pairs) with the reason they are unused. Serving rows also show the
pure HBM-bandwidth view (measured speed ratio / bandwidth ratio). Then a per-architecture
summary (median |error| in-sample and leave-one-source-out). With --roofs, the serving
estimator's roof ratios are recomputed and compared with the stored model_speed_ratio column
(drift means the estimator changed since the last --refresh-model-ratios).
"""
from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fit_module():
    """scripts/fit_vendor_efficiency.py as a module (benchmarks/validate_serving.py uses its held-out refits)."""
    spec = importlib.util.spec_from_file_location("fit_vendor_efficiency", ROOT / "scripts/fit_vendor_efficiency.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bw(path: Path) -> dict[str, float]:
    with open(path, newline="", encoding="utf-8") as f:
        return {r["id"]: float(r["mem_bw_tbps"]) for r in csv.DictReader(f) if r.get("mem_bw_tbps")}


def _pct(x: float) -> str:
    return f"{100 * (x - 1):+6.1f}%"


def main(argv: list[str]) -> int:
    fit = fit_module()
    rows = fit.load_runs()
    ctx = fit.Context(rows, fit.load_peaks(), fit.load_lowp())
    shipped = json.loads(fit.OUT_JSON.read_text(encoding="utf-8"))
    bw = _bw(fit.GPUS_CSV)
    fits = {g: fit.fit_regime(ctx, g) for g in fit.REGIMES}
    held = {g: fit.loso(ctx, g, fits[g]) for g in fit.REGIMES}

    print(f"{'row':24} {'regime':8} {'arch':13} {'gpu':13} {'n':>5} {'prec':5} {'ref':20} {'ratio':>6} {'factor':>6} "
          f"{'in-smp':>7} {'LOSO':>6} {'LOSOerr':>7} {'bw-view':>7}  note")
    for r in rows:
        regime, arch = r["regime"], fit.arch_of(r["gpu_id"])
        entry = shipped[regime].get(arch, {})
        f = entry.get("factor", float("nan"))
        ratio, why = None, ""
        if r["ref_row"]:
            try:
                raw = ctx.raw_ratio(r)
                ref_gpu = ctx.by_id[r["ref_row"]]["gpu_id"]
                base = fits[regime]["hopper_rel"].get(ref_gpu, 1.0) if fit.arch_of(ref_gpu) == "Hopper" else \
                    shipped[regime][fit.arch_of(ref_gpu)]["factor"]
                ratio = raw * base if arch != "Hopper" else raw
            except (KeyError, ValueError, ZeroDivisionError) as e:
                why = f"(no ratio: {e})"
        bw_view = ""
        if regime == "serving" and r["ref_row"] and r["metric"] in fit.SPEED_METRICS:
            ref = ctx.by_id[r["ref_row"]]
            if r["gpu_id"] in bw and ref["gpu_id"] in bw:
                speed = ctx.speed_per_gpu(r) / ctx.speed_per_gpu(ref)
                bw_view = f"{speed * bw[ref['gpu_id']] / bw[r['gpu_id']]:7.3f}"
        h = held[regime].get(r["row_id"])
        ins = _pct(ratio / f) if ratio and r["use"] == "1" and arch != "Hopper" else ""
        lo = f"{h['pred']:6.3f}" if h else ""
        loerr = _pct(h["obs"] / h["pred"]) if h else ""
        note = "" if r["use"] == "1" else f"UNUSED: {r['skip_reason']}"
        if arch == "Hopper" and r["ref_row"]:
            note = note or "within-Hopper pair (band of the Hopper reference)"
        elif not r["ref_row"]:
            note = note or "reference row"
        print(f"{r['row_id'][:24]:24} {regime:8} {arch:13} {r['gpu_id'][:13]:13} {r['gpu_count']:>5} {r['precision']:5} "
              f"{r['ref_row'][:20]:20} {(f'{ratio:6.3f}' if ratio else '     -'):>6} {f:6.3f} {ins:>7} {lo:>6} {loerr:>7} "
              f"{bw_view:>7}  {note or why}")

    print()
    print(f"{'regime':9} {'arch':13} {'factor':>6} {'p10':>6} {'p90':>6} {'rows':>4} {'src':>3} basis    "
          f"{'in-sample |err|':>15} {'LOSO |err|':>10} {'LOSO max':>8}")
    for regime in fit.REGIMES:
        summary = fit.error_summary(fits[regime], held[regime], fit.candidates(ctx, regime))
        for arch in fit.ARCHITECTURES:
            e = shipped[regime][arch]
            s = summary.get(arch)
            cells = (f"{s['in_sample_median_abs_pct']:14.1f}% {s['loso_median_abs_pct']:9.1f}% {s['loso_max_abs_pct']:7.1f}%"
                     if s and s.get("loso_median_abs_pct") is not None else f"{'-':>15} {'-':>10} {'-':>8}")
            print(f"{regime:9} {arch:13} {e['factor']:6.3f} {e['p10']:6.3f} {e['p90']:6.3f} {e['n_rows']:4d} "
                  f"{e['n_sources']:3d} {e['basis']:8} {cells}")
    fresh = fit.fit_all(rows)
    stale = [f"{g}/{a}" for g in fit.REGIMES for a in fit.ARCHITECTURES if fresh[g][a] != shipped[g][a]]
    print("\nshipped JSON matches a fresh fit" if not stale else f"\nshipped JSON is stale for: {', '.join(stale)}")

    if "--roofs" in argv:
        sys.path.insert(0, str(ROOT / "src"))
        ratios = fit.model_speed_ratios(rows)
        print(f"\n{'row':24} {'stored':>8} {'now':>8} {'drift':>7}")
        for r in rows:
            if r["row_id"] in ratios and r["model_speed_ratio"]:
                old, new = float(r["model_speed_ratio"]), ratios[r["row_id"]]
                print(f"{r['row_id'][:24]:24} {old:8.4f} {new:8.4f} {100 * (new / old - 1):+6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
