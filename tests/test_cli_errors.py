"""What every stage command shares when its input or output is wrong: one clear line and
status 2 rather than a traceback, and no output that replaces a folder."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import duckdb
import pytest

from citeval.cli import require_unique, run_cli
from citeval.errors import CitevalError
from citeval.io import write_text


def command_line(action) -> int:
    def build_parser() -> argparse.ArgumentParser:
        return argparse.ArgumentParser(prog="citeval test")

    return run_cli(build_parser, lambda args: action(), [])


def test_a_file_that_cannot_be_opened_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.tsv"
    assert command_line(lambda: missing.open()) == 2
    assert f"error: {missing}: No such file or directory" in capsys.readouterr().err
    assert command_line(lambda: tmp_path.open()) == 2
    assert f"error: {tmp_path}: Is a directory" in capsys.readouterr().err


def test_an_error_is_said_once_on_stderr_even_with_logging_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A job's log and a user's terminal are both stderr: the message is one line there."""

    def fail() -> None:
        raise CitevalError("papers.jsonl:3 (field 'year'): not an integer")

    assert command_line(fail) == 2
    err = capsys.readouterr().err
    assert err.count("not an integer") == 1, err
    assert err == "error: papers.jsonl:3 (field 'year'): not an integer\n"


def test_a_pattern_duckdb_finds_nothing_for_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pattern = str(tmp_path / "nope.parquet")
    status = command_line(lambda: duckdb.connect().execute(f"SELECT * FROM '{pattern}'"))
    assert status == 2
    err = capsys.readouterr().err
    assert f'error: IO Error: No files found that match the pattern "{pattern}"' in err
    assert "LINE 1" not in err and "Traceback" not in err


def test_other_errors_keep_their_traceback() -> None:
    with pytest.raises(ZeroDivisionError):
        command_line(lambda: 1 / 0)
    with pytest.raises(ConnectionError):  # an OSError about no file
        command_line(lambda: (_ for _ in ()).throw(ConnectionError("hub unreachable")))


def test_a_file_output_never_replaces_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "kept.txt").write_text("kept")
    with pytest.raises(CitevalError, match="is a file, but a folder is there"):
        write_text("x", folder)
    assert (folder / "sub" / "kept.txt").read_text() == "kept"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["results"]  # no temporary


def test_an_output_whose_folder_cannot_be_made_is_an_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("")
    with pytest.raises(CitevalError, match=r"cannot create the folder of the output .*afile/out"):
        write_text("x", blocker / "out")


def test_a_command_that_succeeds_exits_0() -> None:
    assert command_line(lambda: None) == 0


def test_a_name_given_twice_is_an_error_naming_it() -> None:
    require_unique("--models", ["bm25", "minilm"])
    with pytest.raises(CitevalError, match=r"--models names \['bm25'\] more than once"):
        require_unique("--models", ["bm25", "minilm", "bm25"])


@pytest.mark.parametrize(
    ("stage", "arguments"),
    [
        ("bm25", ["search", "--tag", "my run"]),
        ("fusion", ["--tag", ""]),
        ("retrieve", ["--tag", "a\tb"]),
        ("rerank", ["rerank", "--tag-prefix", "ce k"]),
    ],
)
def test_a_run_tag_with_whitespace_is_refused_before_any_work(
    stage: str, arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    main = importlib.import_module(f"citeval.{stage}.cli").main
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    assert exit_info.value.code == 2
    assert "a run tag must be non-empty and contain no whitespace" in capsys.readouterr().err
