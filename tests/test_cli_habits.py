"""CLI habits: --version, a quick start when run bare, shell completion, exit codes in --help,
quiet exit on a broken pipe, and --json (and --csv where a command prints rows) on data commands."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpuplan import __version__


def _command_options() -> dict[str, set[str]]:
    import typer.main

    from gpuplan.cli.app import app

    out: dict[str, set[str]] = {}

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        else:
            out[" ".join(path)] = {o for p in cmd.params for o in p.opts}

    walk(typer.main.get_command(app), [])
    return out


# Commands that print no data: they serve, write files (whose content is the data) or launch.
NO_JSON = {"web", "catalog export", "export skypilot", "export dstack", "export k8s", "report train", "report serve"}
# Commands whose output is a table of rows: these take --csv as well.
# Commands that act (calibrate, catalog import/refresh/prune/remove) print a status, not data: --json only.
NO_CSV = NO_JSON | {"calibrate", "catalog import", "catalog refresh", "catalog prune", "catalog remove"}


def test_version(cli):
    code, out, _ = cli("--version")
    assert code == 0 and out.strip() == f"gpuplan {__version__}"


def test_bare_run_prints_quick_start_in_workflow_order(cli):
    code, out, err = cli()
    assert code == 0 and not err
    steps = [out.index(f"{n}. {w}") for n, w in enumerate(("catalog", "estimate", "plan", "export", "web"), 1)]
    assert steps == sorted(steps)
    assert "gpuplan offers" in out and "gpuplan plan train" in out and "--install-completion" in out


def test_quick_start_commands_are_real(cli):
    """Every `gpuplan ...` example of the quick start parses (its --help exits 0)."""
    from gpuplan.cli.app import QUICK_START

    for line in QUICK_START.splitlines():
        words = line.split()
        if "gpuplan" not in words or ">" in words:
            continue
        i = words.index("gpuplan")
        sub = [w for w in words[i + 1:i + 3] if not w.startswith("-")]
        code, _, err = cli(*sub, "--help")
        assert code == 0, (line, err)


def test_help_documents_exit_codes_and_completion(cli):
    code, out, _ = cli("--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "Exit codes: 0 ok; 1 nothing fits" in flat and "2 usage" in flat
    for opt in ("--version", "--install-completion", "--show-completion", "--profile"):
        assert opt in out


def test_show_completion_prints_a_script(cli, monkeypatch):
    # Typer detects the shell from the process tree (shellingham); under nohup or a service manager there is no
    # shell above pytest, so the detection is pinned to bash here and the test checks the script, not the tree.
    import shellingham

    monkeypatch.setattr(shellingham, "detect_shell", lambda *a, **k: ("bash", "/bin/bash"))
    code, out, err = cli("--show-completion", "bash")
    assert code == 0 and "_GPUPLAN_COMPLETE" in out.upper(), (code, out[-300:], err[-300:])


def test_usage_error_is_exit_2(cli):
    code, _, err = cli("offers", "--no-such-option")
    assert code == 2 and "error:" in err and "Traceback" not in err


def test_profile_still_applies_before_a_command(cli):
    code, out, _ = cli("--profile", "none", "gpus", "--json")
    assert code == 0 and out.lstrip().startswith("[")


def test_every_data_command_takes_json_and_tables_take_csv():
    opts = _command_options()
    missing_json = sorted(c for c, o in opts.items() if c not in NO_JSON and "--json" not in o)
    assert not missing_json
    missing_csv = sorted(c for c, o in opts.items() if c not in NO_CSV and "--csv" not in o)
    assert not missing_csv


@pytest.mark.parametrize("args", [["thresholds", "--csv"], ["own-vs-rent", "--gpu", "H100", "--csv"],
                                  ["catalog", "status", "--csv"], ["tco", "--final-run-usd", "1e5", "--csv"],
                                  ["estimate", "serve", "--model", "llama-3.1-8b", "--gpu", "H100", "--csv"],
                                  ["models", "show", "llama-3.1-8b", "--csv"]])
def test_csv_has_a_header_and_rows(cli, args):
    code, out, _ = cli(*args)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) >= 2 and "," in lines[0]


def test_record_csv_is_one_flat_row(cli):
    """An estimate is one row: nested fields as dotted columns, the same values as --json."""
    import csv
    import io
    import json

    args = ("estimate", "train", "--model", "llama-3.1-8b", "--gpu", "H100", "--tokens", "1e11")
    _, out, _ = cli(*args, "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    _, js, _ = cli(*args, "--json")
    data = json.loads(js)
    assert len(rows) == 1 and float(rows[0]["gpu_hours"]) == pytest.approx(data["gpu_hours"])
    assert int(rows[0]["layout.tp"]) == data["layout"]["tp"]


def test_csv_cells_that_a_spreadsheet_would_run_are_escaped(capsys):
    from gpuplan.cli.output import print_csv, print_record_csv

    print_csv([{"a": "=cmd|' /C calc'!A0", "b": "+1+2", "c": "-x", "d": "@SUM(A1)", "e": -5, "f": "ok"}])
    print_record_csv({"name": "=HYPERLINK(1)", "nested": {"v": "@x"}})
    out = capsys.readouterr().out.splitlines()
    assert out[1].split(",")[:4] == ["'=cmd|' /C calc'!A0", "'+1+2", "'-x", "'@SUM(A1)"]
    assert out[1].split(",")[4:] == ["-5", "ok"]  # numbers stay numbers
    assert out[3] == "'=HYPERLINK(1),'@x"


def test_plan_table_fits_80_columns_and_never_splits_a_number(cli, monkeypatch):
    import re

    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--limit", "8")
    assert code == 0
    table = [ln for ln in out.splitlines() if ln.startswith("│")]
    assert len(table) == 8 and all(len(ln) <= 80 for ln in out.splitlines())
    for ln in table:  # every money cell whole: "$86,021", never "$86,0" + "21" on the next line
        cells = [c.strip() for c in ln.strip("│").split("│")]
        assert any(re.fullmatch(r"\$[\d,]+(\.\d+)?[kMB]?", c) for c in cells), ln
    assert "left out (--wide" in " ".join(out.split())
    code, wide, _ = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--limit", "8", "--wide")
    head = next(ln for ln in wide.splitlines() if "provider" in ln)
    for column in ("region", "pricing", "layout", "p90 wall", "price age", "confidence"):
        assert column in head


def test_plan_table_has_a_region_column(cli):
    code, out, _ = cli("plan", "serve", "--model", "llama-3.1-8b", "--tokens-per-month", "5B", "--limit", "3")
    head = next(ln for ln in out.splitlines() if "provider" in ln)
    assert code == 0 and "region" in head


def test_nothing_fits_is_exit_1(cli):
    code, out, _ = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--budget", "1")
    assert code == 1
    code, _, _ = cli("plan", "train", "--model", "llama-3.1-8b", "--tokens", "1e12", "--budget", "1", "--json")
    assert code == 1


def test_plan_batch_csv(cli):
    code, out, _ = cli("plan", "batch", "--model", "llama-3.1-8b", "--items", "1M", "--input-len", "500",
                       "--output-len", "200", "--deadline", "3d", "--limit", "2", "--csv")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("rank,label,fleet") and len(lines) == 3


def test_plan_csv(cli):
    code, out, _ = cli("plan", "serve", "--model", "llama-3.1-8b", "--tokens-per-month", "5B", "--limit", "3", "--csv")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("rank,workload,provider,gpu") and len(lines) == 4


@pytest.mark.parametrize("args", [["offers", "--csv"], ["offers"], ["offers", "--json"], ["--version"], []])
def test_broken_pipe_is_quiet_and_exits_0(args, tmp_path):
    """`gpuplan offers | head -1`: the reader stops early; no traceback, exit 0."""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "GPUPLAN_CONFIG_DIR": str(tmp_path / "cfg")}
    code = "import sys; from gpuplan.cli.main import main; sys.exit(main())"
    r, w = os.pipe()
    os.close(r)  # a reader that has already gone: every write is EPIPE
    try:
        p = subprocess.run([sys.executable, "-c", code, *args], stdout=w, stderr=subprocess.PIPE, env=env,
                           timeout=120)
    finally:
        os.close(w)
    assert p.returncode == 0, p.stderr.decode()[-800:]
    assert b"Traceback" not in p.stderr and b"BrokenPipe" not in p.stderr


def test_head_reads_one_line_then_closes(tmp_path):
    """The same through a real pipe that closes after the first line."""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "GPUPLAN_CONFIG_DIR": str(tmp_path / "cfg")}
    code = "import sys; from gpuplan.cli.main import main; sys.exit(main())"
    p = subprocess.Popen([sys.executable, "-c", code, "offers", "--csv"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    assert p.stdout.readline().startswith(b"provider,")
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=120) == 0, err.decode()[-800:]
    assert b"Traceback" not in err
