"""One request, one answer: the CLI (`--json`) and the HTTP API give the same JSON for the same
request, with the same defaults; every request field is a flag of the same name; the page's
formatters (app.js) read numbers as gpuplan.display does.

Small models and the bundled catalog keep it fast."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from fastapi.testclient import TestClient

from gpuplan.web.app import create_app, static_dir

# (name, CLI words, API path, API body): the same request twice; only what the CLI line gives is in
# the body, so a default that differs between the two shows as a difference.
CASES = [
    ("plan train", ["plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e10"],
     "/api/plan/train", {"model": "llama-3.1-8b", "tokens": 1e10}),
    ("plan train constrained",
     ["plan", "train", "--model", "qwen2.5-7b", "--tokens", "20B", "--deadline", "10d", "--budget", "50k",
      "--exclude", "vast", "--limit", "4"],
     "/api/plan/train", {"model": "qwen2.5-7b", "tokens": "20B", "limit": 4,
                         "constraints": {"deadline_hours": "10d", "budget_usd": "50k", "exclude": ["vast"]}}),
    ("plan serve", ["plan", "serve", "--model", "llama-3.1-8b", "--tokens-per-month", "5B", "--input-len", "2k"],
     "/api/plan/serve", {"model": "llama-3.1-8b", "tokens_per_month": "5B", "input_len": "2k"}),
    ("plan batch", ["plan", "batch", "--model", "llama-3.1-8b", "--items", "1M", "--deadline", "3d", "--limit", "3"],
     "/api/plan/batch", {"model": "llama-3.1-8b", "items": "1M", "deadline_hours": "3d", "limit": 3}),
    ("estimate train", ["estimate", "train", "--model", "llama-3.1-8b", "--gpu", "H100", "--tokens", "1e11", "--gpus", "16"],
     "/api/estimate/train", {"model": "llama-3.1-8b", "gpu": "H100", "tokens": "1e11", "gpus": 16}),
    ("estimate train lora", ["estimate", "train", "--model", "qwen2.5-7b", "--gpu", "L40S", "--method", "qlora",
                             "--tokens", "2e8", "--gpus", "2"],
     "/api/estimate/train", {"model": "qwen2.5-7b", "gpu": "L40S", "method": "qlora", "tokens": 2e8, "gpus": 2}),
    ("estimate serve", ["estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100", "--input-len", "8k"],
     "/api/estimate/serve", {"model": "llama-3.1-8b", "gpu": "H100", "input_len": "8k"}),
    ("breakeven", ["breakeven", "--model", "llama-3.1-8b", "--tokens-per-month", "2B"],
     "/api/breakeven", {"model": "llama-3.1-8b", "tokens_per_month": "2B"}),
    ("tco", ["tco", "--final-run-usd", "250000", "--engineers", "3", "--months", "4", "--gpu", "H100"],
     "/api/tco", {"final_run_usd": 250000, "engineers": 3, "months": 4, "gpu": "H100"}),
    ("tco planned", ["tco", "--model", "llama-3.1-8b", "--tokens", "1e10", "--engineers", "1", "--months", "1"],
     "/api/tco", {"model": "llama-3.1-8b", "tokens": "1e10", "engineers": 1, "months": 1}),
]


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


@pytest.mark.parametrize("name, words, path, body", CASES, ids=[c[0] for c in CASES])
def test_cli_json_equals_api_json(cli, client, name, words, path, body):
    code, out, err = cli(*words, "--json")
    assert code == 0, err
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    via_cli, via_api = json.loads(out), r.json()
    assert via_cli == via_api, _first_difference(via_cli, via_api)


def _first_difference(a, b, where="") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}: only in {'CLI' if k in a else 'API'}"
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{where}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return f"{where}: CLI {str(a)[:200]!r} vs API {str(b)[:200]!r}"


# The same bad input gets the same one-line message, the CLI naming the flag and the API the field.
ERRORS = [
    (["plan", "train", "--model", "llama-3.1-8b", "--tokens", "15X"], "/api/plan/train",
     {"model": "llama-3.1-8b", "tokens": "15X"}, "--tokens", "tokens"),
    (["plan", "serve", "--model", "llama-3.1-8b", "--tokens-per-month", "5B", "--input-len", "8.5"],
     "/api/plan/serve", {"model": "llama-3.1-8b", "tokens_per_month": "5B", "input_len": "8.5"},
     "--input-len", "input_len"),
    (["plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e10", "--deadline", "soon"], "/api/plan/train",
     {"model": "llama-3.1-8b", "tokens": 1e10, "constraints": {"deadline_hours": "soon"}},
     "--deadline", "constraints.deadline_hours"),
    (["estimate", "train", "--model", "llama-3.1-8b", "--gpu", "H100", "--tokens", "1e10", "--method", "dora"],
     "/api/estimate/train", {"model": "llama-3.1-8b", "gpu": "H100", "tokens": 1e10, "method": "dora"},
     "--method", "method"),
]


@pytest.mark.parametrize("words, path, body, flag, field", ERRORS, ids=[e[3] for e in ERRORS])
def test_same_error_text(cli, client, words, path, body, flag, field):
    code, _, err = cli(*words)
    r = client.post(path, json=body)
    assert code == 2 and r.status_code == 422
    cli_msg = err.strip().removeprefix("error: ")
    api_msg = r.json()["detail"]
    assert cli_msg.startswith(flag + ": ") and api_msg.startswith(field + ": ")
    assert cli_msg.removeprefix(flag + ": ") == api_msg.removeprefix(field + ": ")


# ---- one name per concept: every request field is a flag of the same name ----------------------

def _options(*path: str) -> dict[str, object]:
    import typer.main

    from gpuplan.cli.app import app

    cmd = typer.main.get_command(app)
    for p in path:
        cmd = cmd.commands[p]
    return {o: p for p in cmd.params for o in p.opts}


# Fields with no flag of their own name, and why.
NOT_FLAGS = {
    "constraints": "its fields are flags themselves",
    "users": "--users takes a comma-separated list",
    "seed": "the API's reproducibility knob; the CLI always plans with seed 0",
    "redundancy": "--no-redundancy",
    "gpus": "in plan constraints: --gpu (a filter of GPU names)",
    "download_final_weights": "library only",
    "checkpoints_kept": "library only",
    "flops_convention": "--flops-convention",
}


def _request_cases():
    from gpuplan.planner.batch_request import BatchPlanRequest
    from gpuplan.planner.requests import (
        BreakevenRequest, Constraints, ServeEstimateRequest, ServePlanRequest, TcoRequest, TrainEstimateRequest,
        TrainPlanRequest,
    )

    return [(("plan", "train"), TrainPlanRequest), (("plan", "train"), Constraints),
            (("plan", "serve"), ServePlanRequest), (("plan", "batch"), BatchPlanRequest),
            (("estimate", "train"), TrainEstimateRequest), (("estimate", "serve"), ServeEstimateRequest),
            (("breakeven",), BreakevenRequest), (("tco",), TcoRequest)]


@pytest.mark.parametrize("path, model", _request_cases(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else v.__name__)
def test_every_request_field_is_a_flag_of_its_name(path, model):
    opts = _options(*path)
    missing = [f for f in model.model_fields
               if f"--{f.replace('_', '-')}" not in opts and f not in NOT_FLAGS
               and not (path == ("plan", "serve") and f in ("deadline_hours", "max_wall_hours", "allow_decentralized",
                                                              "allow_unclustered"))
               and not (path == ("plan", "batch") and f in ("strict_deadline",))]
    assert not missing, f"{' '.join(path)}: request fields with no flag of that name: {missing}"


@pytest.mark.parametrize("path, model", _request_cases(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else v.__name__)
def test_flag_defaults_are_the_request_defaults(path, model):
    """A flag that shows a default shows the request's (the API's) default."""
    from pydantic_core import PydanticUndefined

    opts = _options(*path)
    for name, field in model.model_fields.items():
        param = opts.get(f"--{name.replace('_', '-')}")
        if param is None or field.default is PydanticUndefined or param.default is None:
            continue
        if isinstance(field.default, bool) or param.is_flag:
            continue
        shown = param.default
        try:
            shown = model.model_validate({**_minimal(model), name: shown}).__dict__[name]
        except Exception:  # noqa: BLE001 - a default the request refuses is a mismatch too
            pytest.fail(f"{' '.join(path)} --{name}: CLI default {param.default!r} is not a valid request value")
        assert shown == field.default, f"{' '.join(path)} --{name}: CLI {param.default!r} vs request {field.default!r}"


def _minimal(model) -> dict:
    name = model.__name__
    return {"TrainPlanRequest": {"model": "m", "tokens": 1}, "ServePlanRequest": {"model": "m", "requests_per_s": 1},
            "BatchPlanRequest": {"model": "m", "items": 1, "deadline_hours": 1},
            "TrainEstimateRequest": {"model": "m", "gpu": "H100", "tokens": 1},
            "ServeEstimateRequest": {"model": "m", "gpu": "H100"},
            "BreakevenRequest": {"model": "m", "tokens_per_month": 1}}.get(name, {})


# ---- one display layer: the page's formatters read as gpuplan.display -------------------------

JS_FUNCS = {"fmtUsd": "fmt_usd", "fmtUsdShort": "fmt_usd_short", "fmtHours": "fmt_hours", "fmtDuration": "fmt_duration"}
VALUES = [0, 0.42, 3.5, 12.649, 99.5, 100, 950.2, 1234.5, 39652.39, 146000, 9.99e6, 1.2e7, 5.6148e7, 1.64e9,
          0.2, 0.75, 1, 12.5, 47.9, 48, 60, 71.9, 72, 680.5, 5000]


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the page's formatters")
def test_page_formats_as_display():
    from gpuplan import display

    src = (static_dir() / "app.js").read_text()
    helpers = []
    for name in ("isNum", "trim", *JS_FUNCS):
        m = (re.search(rf"\n\s*function {name}\([^\n]*}}\n", src)  # a one-line function
             or re.search(rf"\n(\s*)function {name}\(.*?\n\1}}\n", src, re.S))
        assert m, f"app.js has no function {name}"
        helpers.append(m.group(0))
    script = "\n".join(helpers) + f"\nconst V = {json.dumps(VALUES)};\nconsole.log(JSON.stringify({{" + ", ".join(
        f"{js}: V.map({js})" for js in JS_FUNCS) + "}));"
    out = json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True,
                                    timeout=30).stdout)
    for js, py in JS_FUNCS.items():
        expected = [getattr(display, py)(v) for v in VALUES]
        assert out[js] == expected, (js, [(v, a, b) for v, a, b in zip(VALUES, out[js], expected) if a != b])


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the page's formatters")
def test_page_layout_text_is_display_layout_text():
    from gpuplan.display import layout_text

    layouts = [{"tp": 1, "pp": 1, "cp": 1, "ep": 1, "dp": 64, "zero": 1}, {"tp": 8, "pp": 4, "cp": 2, "ep": 1, "dp": 16, "zero": 0},
               {"tp": 4, "pp": 1, "cp": 1, "ep": 8, "dp": 2, "zero": 3},
               {"tp": 2, "pp": 8, "cp": 1, "ep": 32, "etp": 1, "dp": 16, "zero": 1},
               {"tp": 2, "pp": 8, "cp": 1, "ep": 8, "etp": None, "dp": 16, "zero": 1}]
    assert layout_text(layouts[3]) == "TP2 PP8 EP32 ETP1 DP16 ZeRO-1"
    src = (static_dir() / "app.js").read_text()
    funcs = [re.search(rf"\n\s*function {n}\([^\n]*}}\n", src) or re.search(rf"\n(\s*)function {n}\(.*?\n\1}}\n", src, re.S)
             for n in ("isNum", "layoutText")]
    script = "".join(m.group(0) for m in funcs) + f"\nconsole.log(JSON.stringify({json.dumps(layouts)}.map(layoutText)));"
    out = json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True, timeout=30).stdout)
    assert out == [layout_text(lay) for lay in layouts]
