"""gpuplan.files: the one writer of user files (exports, catalog export, reports) and CSV cell escaping."""
from __future__ import annotations

import os
import stat

import pytest

from gpuplan.errors import GpuplanError, UsageError
from gpuplan.files import WriteError, check_out_path, csv_safe, csv_unescape, is_stdout, write_atomic


def names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_new_and_replaced_files_are_whole(tmp_path):
    f = tmp_path / "a.yaml"
    assert write_atomic(f, "one\n") == f
    assert f.read_text() == "one\n"
    write_atomic(str(f), "two\n" * 10_000)
    assert f.read_text() == "two\n" * 10_000
    assert names(tmp_path) == ["a.yaml"]


def test_existing_mode_is_kept_and_new_files_follow_the_umask(tmp_path):
    f = tmp_path / "secret.yaml"
    f.write_text("x")
    os.chmod(f, 0o600)
    write_atomic(f, "y")
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.yaml", "z")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.yaml").stat().st_mode) == 0o640


def test_symlinks_are_followed_and_stay_links(tmp_path):
    (tmp_path / "sub").mkdir()
    real = tmp_path / "sub" / "real.yaml"
    real.write_text("keep")
    hop = tmp_path / "hop.yaml"
    hop.symlink_to(real)
    link = tmp_path / "link.yaml"
    link.symlink_to("hop.yaml")  # relative, two hops
    write_atomic(link, "new")
    assert link.is_symlink() and hop.is_symlink() and os.readlink(link) == "hop.yaml"
    assert real.read_text() == "new"
    assert names(tmp_path / "sub") == ["real.yaml"]  # the temp file lived next to the real target


def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "target.csv")
    write_atomic(link, "made")
    assert link.is_symlink() and (tmp_path / "target.csv").read_text() == "made"


@pytest.mark.parametrize("kind,needle", [
    ("fifo", "FIFO"), ("directory", "is a directory"), ("missing", "does not exist"), ("loop", "symlink loop"),
    ("stderr", "file descriptors"), ("fd", "file descriptors"), ("empty", "empty"), ("nul", "NUL"),
    ("under-a-file", "not a directory"),
])
def test_impossible_targets_are_refused_before_writing(tmp_path, kind, needle):
    target = {"fifo": tmp_path / "f", "directory": tmp_path, "missing": tmp_path / "no" / "x",
              "loop": tmp_path / "a", "stderr": "/dev/stderr", "fd": "/proc/self/fd/2", "empty": "",
              "nul": "a\x00b", "under-a-file": tmp_path / "plain" / "x"}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    if kind == "loop":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
    if kind == "under-a-file":
        (tmp_path / "plain").write_text("x")
    before = names(tmp_path)
    with pytest.raises(UsageError, match=needle) as e:
        check_out_path(target)
    assert "\n" not in str(e.value)
    with pytest.raises(UsageError, match=needle):
        write_atomic(target, "x")
    assert names(tmp_path) == before
    if kind == "fifo":
        assert stat.S_ISFIFO(os.stat(target).st_mode)  # never replaced by a regular file


def test_character_device_is_refused():
    with pytest.raises(UsageError, match="character device"):
        check_out_path("/dev/null")


def test_dash_and_dev_stdout_print(capsys):
    assert is_stdout("-") and is_stdout("/dev/stdout") and not is_stdout("out.csv")
    assert str(write_atomic("-", "to stdout\n")) == "-"
    write_atomic("/dev/stdout", "again\n")
    assert capsys.readouterr().out == "to stdout\nagain\n"


def test_os_errors_while_writing_are_one_line_and_keep_the_old_file(tmp_path, monkeypatch):
    f = tmp_path / "out.csv"
    f.write_text("old")
    for errno_, text in ((28, "No space left on device"), (30, "Read-only file system"), (5, "Input/output error")):
        def boom(fd, errno_=errno_, text=text):
            raise OSError(errno_, text)
        monkeypatch.setattr(os, "fsync", boom)
        with pytest.raises(WriteError, match=text) as e:
            write_atomic(f, "new" * 1000)
        assert isinstance(e.value, GpuplanError) and e.value.exit_code == 1 and "\n" not in str(e.value)
        assert f.read_text() == "old" and names(tmp_path) == ["out.csv"]


def test_text_that_cannot_be_encoded_is_one_line(tmp_path):
    with pytest.raises(WriteError):
        write_atomic(tmp_path / "x.txt", "bad \udcff surrogate")
    assert names(tmp_path) == []


def test_unwritable_folder_and_file_are_refused_first(tmp_path, monkeypatch):
    (tmp_path / "old.txt").write_text("old")
    real = os.access

    def access(path, mode, *a, **kw):
        if mode & os.W_OK:
            return False
        return real(path, mode, *a, **kw)
    monkeypatch.setattr(os, "access", access)
    for target in (tmp_path / "new.txt", tmp_path / "old.txt"):
        with pytest.raises(UsageError, match="permission denied"):
            write_atomic(target, "x")
    assert names(tmp_path) == ["old.txt"] and (tmp_path / "old.txt").read_text() == "old"


@pytest.mark.parametrize("cell,escaped", [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"), ("+1+2", "'+1+2"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("\rx", "'\rx"), ("lambda", "lambda"), ("", ""), ("'=already", "''=already"),
    ("'plain", "'plain"),
])
def test_csv_formula_cells(cell, escaped):
    assert csv_safe(cell) == escaped
    assert csv_unescape(csv_safe(cell)) == cell
    assert csv_safe(-5) == -5 and csv_safe(2.5) == 2.5 and csv_safe(None) is None
