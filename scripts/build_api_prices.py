"""Copy ../shared/data/api-prices.csv into package data with a clean id and an open-model mapping.

Run by hand from the repository root: `python scripts/build_api_prices.py`. The output
(src/gpuplan/economics/data/api-prices.csv) is committed; nothing at runtime reads ../shared.
"""
from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT.parent / "shared" / "data" / "api-prices.csv"
DST = ROOT / "src" / "gpuplan" / "economics" / "data" / "api-prices.csv"

PROVIDER_IDS = {"OpenAI": "openai", "Anthropic": "anthropic", "Google": "google", "DeepSeek": "deepseek",
                "Together AI": "together", "Fireworks AI": "fireworks", "DeepInfra": "deepinfra", "Groq": "groq"}

# API model -> the gpuplan preset with the same architecture (empty for closed models).
# (regex on the lower-cased model name, preset id, note)
OPEN_MODELS = [
    (r"llama-3\.1-8b|llama-v3p1-8b|3\.1-8b-instant", "llama-3.1-8b", ""),
    (r"llama-3\.1-70b|llama-v3p1-70b", "llama-3.1-70b", ""),
    (r"llama-3\.3-70b", "llama-3.3-70b", ""),
    (r"llama-3\.1-405b|llama-v3p1-405b", "llama-3.1-405b", ""),
    (r"deepseek-v3|deepseek-chat", "deepseek-v3", ""),
    (r"deepseek-r1|deepseek-reasoner", "deepseek-v3", "DeepSeek-R1 has the DeepSeek-V3 architecture (different weights)"),
    (r"qwen3-235b-a22b", "qwen3-235b-a22b", ""),
    (r"qwen3-32b", "qwen3-32b", ""),
    (r"qwen2\.5-72b", "qwen2.5-72b", ""),
    (r"qwen2-72b", "qwen2.5-72b", "Qwen2-72B has the Qwen2.5-72B architecture (different weights)"),
]

COLUMNS = ["id", "provider", "provider_id", "model", "open_model", "input_usd_per_mtok", "output_usd_per_mtok",
           "as_of", "note", "source"]


def slug(text: str) -> str:
    text = re.sub(r"\(.*?\)", lambda m: "-" + m.group(0)[1:-1], text)  # keep qualifiers, drop parentheses
    text = text.split("/", 1)[1] if "/" in text else text
    text = text.replace("/", "-")
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def open_model_of(model: str) -> tuple[str, str]:
    low = model.lower()
    for pattern, preset, note in OPEN_MODELS:
        if re.search(pattern, low):
            return preset, note
    return "", ""


def main() -> int:
    rows = list(csv.DictReader(SRC.open(encoding="utf-8")))
    out, seen = [], set()
    for r in rows:
        pid = PROVIDER_IDS.get(r["provider"]) or slug(r["provider"])
        rid = f"{pid}/{slug(r['model'])}"
        if rid in seen:
            sys.exit(f"duplicate id {rid}")
        seen.add(rid)
        preset, note = open_model_of(r["model"])
        as_of = r["as_of"].strip()
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", as_of):
            year = re.match(r"(\d{4})", as_of)
            if not year:
                sys.exit(f"{rid}: as_of {as_of!r} has no date")
            note = "; ".join(x for x in (note, f"as_of approximate: {as_of!r}") if x)
            as_of = f"{year[1]}-01-01"
        out.append({"id": rid, "provider": r["provider"], "provider_id": pid, "model": r["model"], "open_model": preset,
                    "input_usd_per_mtok": r["input_usd_per_mtok"], "output_usd_per_mtok": r["output_usd_per_mtok"],
                    "as_of": as_of, "note": note, "source": r["source"]})
    DST.parent.mkdir(parents=True, exist_ok=True)
    with DST.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    print(f"wrote {len(out)} API prices to {DST.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
