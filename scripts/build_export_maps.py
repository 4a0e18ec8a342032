"""Rebuild src/gpuplan/export/data/skypilot_accelerators.json from the SkyPilot catalog snapshot.

SkyPilot only knows an accelerator on a cloud if its catalog lists it there; the export tests
check every name in skypilot.json against this list. Run by hand: python scripts/build_export_maps.py
"""
from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT.parent / "shared" / "catalog-snapshots" / "skypilot" / "common" / "accelerators.csv"
OUT = ROOT / "src" / "gpuplan" / "export" / "data" / "skypilot_accelerators.json"


def main() -> None:
    with SNAPSHOT.open(newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    names = {r["AcceleratorName"]: sorted(c.lower() for c in ast.literal_eval(r["Clouds"])) for r in rows}
    OUT.write_text(json.dumps({
        "about": "AcceleratorName -> clouds, from skypilot-org/skypilot-catalog catalogs/v9/common/accelerators.csv",
        "accelerators": dict(sorted(names.items())),
    }, indent=1) + "\n")
    print(f"wrote {OUT} ({len(names)} accelerators)")


if __name__ == "__main__":
    main()
