"""Quotes in a script's `txt` files, as Qlik's help documents its quoting options, read alike
by the engine's CSV reader and the script's own reader (the file's format spec decides which
one takes it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import assoc
from assoc.script import files

# The same data read by each reader: the engine's takes UTF-8 files with labels on the first
# line; a header line to skip (or another code page) sends them to the script's reader.
READERS = {"engine": ("", ""), "script": ("skipped line\n", ", header is 1 lines")}


def load(
    tmp_path: Path, text: str, spec: str, reader: str, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[Any, ...]]:
    """The rows of the file read under the spec, by the reader named."""
    head, extra = READERS[reader]
    (tmp_path / "f.txt").write_text(head + text, encoding="utf-8")
    used: list[str] = []
    read = files.read_delimited

    def counted(*args: Any) -> Any:
        used.append("script")
        return read(*args)

    monkeypatch.setattr(files, "read_delimited", counted)
    app = assoc.App.from_script(
        f"T: LOAD * FROM [lib://d/f.txt] (txt{spec}{extra});", folders={"d": tmp_path}
    )
    assert used == ([] if reader == "engine" else ["script"])
    t = app.table("T")
    return list(zip(*(t.column(f) for f in t.fields), strict=True))


@pytest.mark.parametrize("reader", list(READERS))
def test_standard_quoting_unquotes_double_and_single_quotes(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (
        "Id,Name,Note\n"
        '1,"Smith, John",x\n'
        "2,'Doe, Jane',y\n"
        "3,O'Brien,5\"\n"
        "4, \"padded\" ,'it''s'\n"
        '5,"say ""hi""",a"b\n'
        "6,'','q'\n"
    )
    assert load(tmp_path, text, "", reader, monkeypatch) == [
        (1, "Smith, John", "x"),
        (2, "Doe, Jane", "y"),
        (3, "O'Brien", '5"'),
        (4, "padded", "it's"),
        (5, 'say "hi"', 'a"b'),
        (6, None, "q"),
    ]


@pytest.mark.parametrize("reader", list(READERS))
def test_standard_quotes_never_span_lines(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = 'Id,Name\n1,"open\n2,close"\n'
    assert load(tmp_path, text, "", reader, monkeypatch) == [(1, '"open'), (2, 'close"')]


@pytest.mark.parametrize("reader", list(READERS))
def test_no_quotes_keeps_every_quote(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = 'Id,Name\n1,"quoted"\n2,\'single\'\n3,"a\n'
    assert load(tmp_path, text, ", no quotes", reader, monkeypatch) == [
        (1, '"quoted"'),
        (2, "'single'"),
        (3, '"a'),
    ]


@pytest.mark.parametrize("reader", list(READERS))
def test_msq_reads_double_quoted_values_over_lines(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = 'Id,Name,Note\n1,"two\nlines",\'kept\'\n2,"a, ""b""",x\n'
    assert load(tmp_path, text, ", msq", reader, monkeypatch) == [
        (1, "two\nlines", "'kept'"),
        (2, 'a, "b"', "x"),
    ]


def test_a_large_standard_quoted_file_reads_as_the_script_reader_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Big enough for the engine's reader to cut it into chunks at line ends.
    lines = ["Id,Name,Note"]
    for i in range(60_000):
        quote = "'" if i % 3 else '"'
        lines.append(f"{i},{quote}n{i % 97}, x{quote},{'a' if i % 2 else chr(34)}")
    text = "\n".join(lines) + "\n"
    engine = load(tmp_path, text, "", "engine", monkeypatch)
    monkeypatch.undo()
    script = load(tmp_path, text, "", "script", monkeypatch)
    assert engine == script
    assert engine[1] == (1, "n1, x", "a")
    assert engine[2] == (2, "n2, x", '"')
