"""Print every preset's computed parameter counts against the published ones, and how far a shape
derived from the bare count (gpuplan.models.derive) lands from the real shape's KV cache.

Run by hand: python scripts/check_presets.py [--json]
"""
from __future__ import annotations

import json
import sys

from gpuplan.models import get_preset, model_from_params, preset_ids
from gpuplan.models.presets import preset_records


def rows() -> list[dict]:
    recs = {r["id"]: r for r in preset_records()}
    out = []
    for pid in preset_ids():
        spec, rec = get_preset(pid), recs[pid]
        active = spec.non_embedding_active_params() if rec.get("active_excludes_input_embedding") else spec.active_params()
        if rec.get("active_excludes_embeddings"):  # GLM-4.5 counts active weights without both embeddings
            active = spec.active_params() - spec.embedding_params()
        derived = model_from_params(spec.published_params, spec.published_active_params if spec.is_moe else None)
        out.append({
            "id": pid,
            "total_b": spec.total_params() / 1e9,
            "published_b": spec.published_params / 1e9,
            "total_err_pct": (spec.total_params() / spec.published_params - 1) * 100,
            "active_b": active / 1e9,
            "published_active_b": (spec.published_active_params or 0) / 1e9 or None,
            "active_err_pct": (active / spec.published_active_params - 1) * 100 if spec.published_active_params else None,
            "kv_kib_bf16": spec.kv_bytes_per_token(2.0) / 1024,
            "derived_kv_ratio": derived.kv_bytes_per_token(2.0) / spec.kv_bytes_per_token(2.0),
        })
    return out


def main() -> int:
    data = rows()
    if "--json" in sys.argv:
        print(json.dumps(data, indent=1))
        return 0
    print(f"{'preset':18s} {'total B':>10s} {'publ. B':>10s} {'err %':>8s} {'active B':>9s} {'publ. B':>8s} {'err %':>7s}"
          f" {'KV KiB':>8s} {'derived KV / real':>18s}")
    for r in data:
        act = f"{r['active_b']:9.2f} {r['published_active_b']:8.2f} {r['active_err_pct']:+7.2f}" if r["active_err_pct"] is not None else " " * 26
        print(f"{r['id']:18s} {r['total_b']:10.3f} {r['published_b']:10.3f} {r['total_err_pct']:+8.3f} {act}"
              f" {r['kv_kib_bf16']:8.1f} {r['derived_kv_ratio']:18.2f}")
    worst_total = max(abs(r["total_err_pct"]) for r in data)
    worst_active = max(abs(r["active_err_pct"]) for r in data if r["active_err_pct"] is not None)
    print(f"\n{len(data)} presets; worst total error {worst_total:.3f}%, worst MoE active error {worst_active:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
