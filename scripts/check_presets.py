"""Print every preset's computed parameter counts against the published ones, whether each is within the
tolerance tests/test_models_presets.py pins, and how far a shape derived from the bare count
(gpuplan.models.derive) lands from the real shape's KV cache.

Run by hand: python scripts/check_presets.py [--json]
"""
from __future__ import annotations

import json
import sys

from gpuplan.models import get_preset, model_from_params, preset_ids
from gpuplan.models.presets import count_tolerances, preset_records


def rows() -> list[dict]:
    recs = {r["id"]: r for r in preset_records()}
    out = []
    for pid in preset_ids():
        spec, rec = get_preset(pid), recs[pid]
        active = spec.non_embedding_active_params() if rec.get("active_excludes_input_embedding") else spec.active_params()
        if rec.get("active_excludes_embeddings"):  # GLM-4.5 counts active weights without both embeddings
            active = spec.active_params() - spec.embedding_params()
        tol_total, tol_active = count_tolerances(rec)
        derived = model_from_params(spec.published_params, spec.published_active_params if spec.is_moe else None)
        total_err = spec.total_params() / spec.published_params - 1
        active_err = active / spec.published_active_params - 1 if spec.published_active_params else None
        out.append({
            "id": pid,
            "total_b": spec.total_params() / 1e9,
            "published_b": spec.published_params / 1e9,
            "total_err_pct": total_err * 100,
            "total_tol_pct": tol_total * 100,
            "active_b": active / 1e9,
            "published_active_b": (spec.published_active_params or 0) / 1e9 or None,
            "active_err_pct": active_err * 100 if active_err is not None else None,
            "active_tol_pct": tol_active * 100 if active_err is not None else None,
            "within_tolerance": abs(total_err) <= tol_total and (active_err is None or abs(active_err) <= tol_active),
            "tolerance_exception": rec.get("count_tolerance_reason"),
            "kv_kib_bf16": spec.kv_bytes_per_token(2.0) / 1024,
            "kv_gib_128k_bf16": spec.kv_bytes_per_sequence(131072, 2.0) / 2**30,
            "derived_kv_ratio": derived.kv_bytes_per_token(2.0) / spec.kv_bytes_per_token(2.0),
        })
    return out


def main() -> int:
    data = rows()
    if "--json" in sys.argv:
        print(json.dumps(data, indent=1))
        return 0
    print(f"{'preset':22s} {'total B':>9s} {'publ. B':>9s} {'err %':>7s} {'tol %':>5s} {'active B':>8s} {'publ. B':>7s}"
          f" {'err %':>6s} {'tol %':>5s} {'ok':>3s} {'KV KiB/tok':>10s} {'KV GiB@128k':>11s} {'derived KV/real':>15s}")
    for r in data:
        act = (f"{r['active_b']:8.2f} {r['published_active_b']:7.2f} {r['active_err_pct']:+6.2f} {r['active_tol_pct']:5.1f}"
               if r["active_err_pct"] is not None else " " * 29)
        print(f"{r['id']:22s} {r['total_b']:9.3f} {r['published_b']:9.3f} {r['total_err_pct']:+7.3f} {r['total_tol_pct']:5.1f}"
              f" {act} {'yes' if r['within_tolerance'] else 'NO':>3s} {r['kv_kib_bf16']:10.1f} {r['kv_gib_128k_bf16']:11.2f}"
              f" {r['derived_kv_ratio']:15.2f}")
    exceptions = [r for r in data if r["tolerance_exception"]]
    for r in exceptions:
        print(f"  exception {r['id']}: tolerance {r['total_tol_pct']:g}%: {r['tolerance_exception']}")
    worst_total = max(abs(r["total_err_pct"]) for r in data)
    worst_active = max(abs(r["active_err_pct"]) for r in data if r["active_err_pct"] is not None)
    ok = sum(r["within_tolerance"] for r in data)
    print(f"\n{len(data)} presets; {ok} within tolerance ({len(exceptions)} stated exceptions); worst total error "
          f"{worst_total:.3f}%, worst MoE active error {worst_active:.2f}%")
    return 0 if ok == len(data) else 1


if __name__ == "__main__":
    sys.exit(main())
