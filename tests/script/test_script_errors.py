"""Script errors: line and column, missing files, escaping paths, failed reloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import assoc
from assoc.script import (
    FolderConfinement,
    FolderConnections,
    ScriptError,
    ScriptRunner,
    check_syntax,
)


@pytest.mark.parametrize(
    ("script", "line", "column", "words"),
    [
        ("T: LOAD a, FROM x;", 1, 12, "expected an expression"),
        ("SET a = 1;\nT: LOAD 1 AS x AUTOGENERATE 1\nWHERE ;", 3, 7, "expected an expression"),
        ("\n\n   FOO bar;", 3, 4, "unknown statement"),
        ("T: LOAD * INLINE [\na\n1\n] (txt, bogus);", 4, 9, "unknown file format option"),
        ("T: LOAD 'abc AS x AUTOGENERATE 1;", 1, 9, "unterminated"),
        ("T: LOAD (1 + 2 AS x AUTOGENERATE 1;", 1, 16, "expected ')'"),
        ("/* open comment\nLOAD 1;", 1, 1, "unterminated /* comment"),
    ],
)
def test_syntax_errors_name_line_and_column(
    script: str, line: int, column: int, words: str
) -> None:
    errors = check_syntax(script)
    assert len(errors) == 1
    assert (errors[0].line, errors[0].column) == (line, column)
    assert words in errors[0].message
    with pytest.raises(ScriptError, match=f"line {line}, column {column}"):
        assoc.App.from_script(script)


def test_check_syntax_accepts_a_good_script() -> None:
    assert check_syntax("SET x = 1;\nT: LOAD $(x) AS one AUTOGENERATE 2 WHERE RecNo() > 1;") == []


def test_runtime_errors_name_the_statement(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match=r"line 2, column 1: .*no such file") as info:
        assoc.App.from_script(
            "SET a = 1;\nLOAD * FROM [lib://d/missing.csv] (txt);", folders={"d": tmp_path}
        )
    assert info.value.line == 2
    with pytest.raises(ScriptError, match="table not found: Nope"):
        assoc.App.from_script("T: LOAD * RESIDENT Nope;")
    with pytest.raises(ScriptError, match="line 1, column 12: field not found: b"):
        assoc.App.from_script("T: LOAD a, b AS c INLINE [\na\n1\n];")
    with pytest.raises(ScriptError, match="no connection named 'other'"):
        assoc.App.from_script("LOAD * FROM [lib://other/x.csv];", folders={"d": tmp_path})
    with pytest.raises(ScriptError, match="unknown function NOPE"):
        assoc.App.from_script("T: LOAD Nope(1) AS x AUTOGENERATE 1;")
    with pytest.raises(ScriptError, match=r"UPPER takes 1\.\.1 arguments"):
        assoc.App.from_script("T: LOAD Upper(1, 2) AS x AUTOGENERATE 1;")


def test_bad_file_content_is_a_script_error(tmp_path: Path) -> None:
    (tmp_path / "bad.qvd").write_bytes(b"not a qvd at all")
    (tmp_path / "ragged.csv").write_text("a,b\n1,2,3\n")
    with pytest.raises(ScriptError, match="line 1, column 1: cannot read"):
        assoc.App.from_script("LOAD * FROM [lib://d/bad.qvd] (qvd);", folders={"d": tmp_path})
    with pytest.raises(ScriptError, match="cannot read"):
        assoc.App.from_script("LOAD * FROM [lib://d/ragged.csv] (txt);", folders={"d": tmp_path})


def test_paths_cannot_escape_the_connection(tmp_path: Path) -> None:
    inside = tmp_path / "inside"
    inside.mkdir()
    (tmp_path / "secret.csv").write_text("s\n1\n")
    (inside / "link.csv").symlink_to(tmp_path / "secret.csv")
    folders = {"d": inside}
    for path in (
        "lib://d/../secret.csv",
        "lib://d/link.csv",
        "lib://d//etc/passwd",
        "/etc/passwd",
        "secret.csv",
        "lib://d/sub/../../secret.csv",
    ):
        with pytest.raises(ScriptError, match=r"outside|must|lib://"):
            assoc.App.from_script(f"LOAD * FROM [{path}] (txt);", folders=folders)


def test_confinement_refuses_folders_outside_allowed(tmp_path: Path) -> None:
    allowed = tmp_path / "files"
    (allowed / "team").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", allowed / "sneaky")
    confinement = FolderConfinement([allowed])
    conns = FolderConnections({"team": allowed / "team"}, confinement)
    assert conns.names() == ["team"]
    assert conns.has("TEAM")
    assert not conns.has("other")
    for folder in (
        tmp_path / "elsewhere",
        allowed / "sneaky",
        allowed / ".." / "elsewhere",
        "relative/dir",
    ):
        with pytest.raises(ScriptError):
            conns.add("x", folder)
    with pytest.raises(ScriptError, match="absolute"):
        FolderConfinement(["relative"])


def test_failed_reload_keeps_the_old_data_and_reports_progress(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("k\n1\n2\n")
    good = "T: LOAD * FROM [lib://d/a.csv] (txt);"
    app = assoc.App.from_script(good, folders={"d": tmp_path})
    runner = ScriptRunner(
        good + "\nU: LOAD * FROM [lib://d/gone.csv] (txt);", FolderConnections({"d": tmp_path})
    )
    with pytest.raises(ScriptError):
        runner.run()
    # The app built before still holds its data; the failed run reports where it stopped.
    assert app.table("T").column("k") == [1, 2]
    assert runner.progress.finished
    assert runner.progress.error is not None
    assert runner.progress.error.line == 2
    assert runner.progress.statements_done == 1
    assert runner.progress.statements_total == 2


def test_duplicate_field_names_are_errors() -> None:
    with pytest.raises(ScriptError, match="line 1, column 4: field a is loaded twice"):
        assoc.App.from_script("T: LOAD 1 AS a, 2 AS a AUTOGENERATE 1;")
    with pytest.raises(ScriptError, match="line 2, column 1: table T has a field b already"):
        assoc.App.from_script("T: LOAD 1 AS a, 2 AS b AUTOGENERATE 1;\nRENAME FIELD a TO b;")
