"""The README's commands run as written, and docs/cli.md matches the CLI (like Datasette's test_docs.py).

Every line of a ```bash block in README.md that starts with `gpuplan ` is run in-process through
`gpuplan.cli.main.main` (the line split by shlex, `# comments` dropped, `> file` honoured), in
order, in one temporary directory that holds a copy of `examples/` (so `--from plan.json` reads the
plan an earlier line wrote, and the calibration profile an earlier line made is in effect, as in a
user's shell). `gpuplan web` is skipped (it serves until Ctrl-C). Each must exit 0, or 1 where the
README's comment on that line says nothing fits.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SKIP = ("gpuplan web",)  # serves until Ctrl-C
NOTHING_FITS = re.compile(r"nothing fits", re.I)
# Lines whose README comment does not (yet) say that nothing fits, but where nothing does: exit 1.
# 405B on 15T tokens needs ~2,800 GPUs to finish in 180 days and no listed cluster rents more than
# 64 nodes, so the plan lists the closest offers and what would fit (a contracted cluster, --max-wall).
EXPECTED_EXIT = {"gpuplan plan train --model llama-3.1-405b --tokens 15e12 --max-wall 180d": 1}


def readme_commands() -> list[tuple[int, str]]:
    """(line number, command line) for each `gpuplan ...` line of a ```bash block, in order."""
    out: list[tuple[int, str]] = []
    in_bash = False
    for n, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1):
        s = line.strip()
        if s.startswith("```"):
            in_bash = (not in_bash) and s[3:].strip() == "bash"
            continue
        if in_bash and s.startswith("gpuplan "):
            out.append((n, s))
    return out


def split(line: str) -> tuple[list[str], str | None, int]:
    """argv (without `gpuplan`), the file a `>` redirects stdout to, and the expected exit code."""
    comment = line.split(" #", 1)[1] if " #" in line else ""
    words = shlex.split(line, comments=True)
    target = None
    if ">" in words:
        i = words.index(">")
        words, target = words[:i], words[i + 1]
    assert words[0] == "gpuplan"
    expected = EXPECTED_EXIT.get(shlex.join(words), 1 if NOTHING_FITS.search(comment) else 0)
    return words[1:], target, expected


def test_readme_has_the_tour():
    cmds = [c for _, c in readme_commands()]
    assert len(cmds) >= 25, cmds
    assert any(c.startswith("gpuplan testtime examples/queries.csv") for c in cmds)
    assert (ROOT / "examples" / "queries.csv").is_file()


def test_readme_commands_run_as_written(tmp_path, monkeypatch, capsys):
    from gpuplan.cli.main import main

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    failures, ran, took = [], 0, []
    for n, line in readme_commands():
        if line.startswith(SKIP):
            continue
        argv, target, expected = split(line)
        t0 = time.perf_counter()
        code = main(argv)
        took.append((time.perf_counter() - t0, line))
        out = capsys.readouterr()
        ran += 1
        if target is not None:
            (tmp_path / target).write_text(out.out, encoding="utf-8")
        if code != expected:
            failures.append(f"README.md:{n}: `{line}` exited {code} (expected {expected}): {out.err.strip()[-400:]}")
    print(f"ran {ran} README commands; slowest: {max(took)[0]:.1f} s `{max(took)[1]}`")
    assert ran >= 25
    assert not failures, "\n".join(failures)


def test_cli_reference_is_up_to_date():
    """docs/cli.md is generated; after changing a command run `python scripts/build_cli_reference.py`."""
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_cli_reference.py"), "--check"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr


def test_cli_reference_covers_every_command():
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for sub in ("estimate train", "plan serve", "catalog refresh", "export skypilot", "testtime", "models list"):
        assert f"## gpuplan {sub}\n" in text
    assert "Exit codes" in text


@pytest.mark.parametrize("line", ["gpuplan plan train --model x --json > plan.json  # comment",
                                  "gpuplan size --quality-of 13B   # nothing fits here"])
def test_split(line):
    argv, target, code = split(line)
    assert argv[0] in ("plan", "size") and "#" not in " ".join(argv)
    assert (target, code) in (("plan.json", 0), (None, 1))
