"""Shared test setup: every test runs against the bundled catalog unless it opts into a store."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    """Never read or write the developer's real store or config: point them at empty temp dirs."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.delenv("GPUPLAN_DB", raising=False)
    # A developer's calibration profile must never change what the tests compute.
    monkeypatch.setenv("GPUPLAN_CONFIG_DIR", str(home / "gpuplan-config"))
    monkeypatch.delenv("GPUPLAN_PROFILE", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def cli(capsys):
    """Run the CLI in-process: returns (exit code, stdout, stderr)."""
    from gpuplan.cli.main import main

    def run(*args: str):
        code = main([str(a) for a in args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture(scope="session")
def vendor_fit():
    """scripts/fit_vendor_efficiency.py as a module (the architecture-factor fit and its held-out refits)."""
    path = Path(__file__).resolve().parents[1] / "scripts/fit_vendor_efficiency.py"
    spec = importlib.util.spec_from_file_location("fit_vendor_efficiency", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
