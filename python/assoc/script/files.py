"""Table files a script reads and writes: QVD and delimited text (fast engine readers where
the format allows, the options they lack read here)."""

from __future__ import annotations

import csv
import io
import mmap
from pathlib import Path
from typing import Any

import numpy as np

from assoc import _core
from assoc.annotations import Annotations
from assoc.script import syntax as ast
from assoc.script.errors import ScriptError
from assoc.script.numbers import Interpretation, plain_text
from assoc.script.tables import Column, Frame
from assoc.script.values import NAN, Values
from assoc.sources import file_bytes

# How the engine's CSV reader reads quotes under each of a format's quoting options: `msq` is
# RFC 4180 (double quotes, line ends inside them).
_ENGINE_QUOTING = {"standard": "standard", "msq": "rfc4180", "none": "none"}


def _engine_delimiter(header: bytes, quoting: str) -> str | None:
    """The separator the engine's CSV reader picks for a header line (None: one column)."""
    counts = {",": 0, ";": 0, "\t": 0}
    quoted = False
    for ch in header.decode("utf-8", "replace"):
        if ch == '"' and quoting != "none":
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(counts.values())
    return next(d for d in (",", ";", "\t") if counts[d] == best) if best else None


def read_file(
    path: Path,
    fmt: ast.FileFormat,
    name: str,
    interp: Interpretation,
    cpu: _core.CpuAccount | None = None,
    records: int | None = None,
) -> Frame:
    """A table file as a frame: QVD, or delimited text as `fmt` says (`cpu` collects the
    worker threads' time). `records`: no more records than these are needed (a FIRST n or a
    fetch limit on a load that keeps every record it reads), so delimited text is read from
    the start of the file only as far as it holds them (the frame may hold more)."""
    suffix = path.suffix.lower()
    kind = fmt.kind or {".qvd": "qvd", ".parquet": "parquet"}.get(suffix, "txt")
    if kind == "parquet":
        return read_parquet(path, name, interp, cpu)
    try:
        data = file_bytes(path, whole=records is None or kind == "qvd")
    except OSError as exc:
        raise ScriptError(f"cannot open file {path.name!r}: {exc.strerror}") from None
    try:
        if kind == "qvd":
            return Frame.of_native(_core.ScriptTable.read_qvd(data, name, cpu))
        if records is not None:
            # The lines before the labels, the labels', the records and one more, so that
            # the last record wanted is whole whatever quotes a cut line leaves open.
            lines = fmt.header_lines + (fmt.labels is not False) + records + 1
            return _first_records(data, lines, records, fmt, name, interp, cpu)
        return _delimited(data, fmt, name, interp, cpu)
    finally:
        if isinstance(data, mmap.mmap):
            data.close()


def _first_records(
    data: bytes | mmap.mmap,
    lines: int,
    records: int,
    fmt: ast.FileFormat,
    name: str,
    interp: Interpretation,
    cpu: _core.CpuAccount | None,
) -> Frame:
    """At least `records` records of delimited text (all of them when it holds fewer), read
    from the bytes up to the end of line `lines`, four times as many lines while the records
    read from them are not more than `records` (a quoted field may span lines; a line cut
    within one may not read at all)."""
    size = len(data)
    while True:
        end = _after_line(data, lines)
        if end >= size:
            return _delimited(data, fmt, name, interp, cpu)
        with memoryview(data) as view, view[:end] as start:
            try:
                frame = _delimited(start, fmt, name, interp, cpu)
            except (ScriptError, _core.Error):
                frame = None
        if frame is not None and frame.rows > records:
            return frame
        lines *= 4


def _after_line(data: bytes | mmap.mmap | memoryview, lines: int) -> int:
    """The offset just past the end of line `lines` (its newline) in data, or its length
    when it has fewer lines."""
    size = len(data)
    end = min(size, max(1 << 16, lines * 128))
    while True:
        newlines = np.flatnonzero(np.frombuffer(data, np.uint8, count=end) == ord("\n"))
        if len(newlines) >= lines:
            return int(newlines[lines - 1]) + 1
        if end == size:
            return size
        end = min(size, end * 4)


def _delimited(
    data: bytes | mmap.mmap | memoryview,
    fmt: ast.FileFormat,
    name: str,
    interp: Interpretation,
    cpu: _core.CpuAccount | None,
) -> Frame:
    """Delimited text as `fmt` says: the engine's reader where the format is its own."""
    first_line = bytes(data[:65536]).split(b"\n", 1)[0]
    quoting = _ENGINE_QUOTING[fmt.quoting]
    fast = (
        fmt.labels is not False
        and fmt.header_lines == 0
        and fmt.encoding in ("utf8", "cp65001")
        and (fmt.delimiter is None or fmt.delimiter == _engine_delimiter(first_line, quoting))
    )
    if fast:
        frame = Frame.of_native(_core.ScriptTable.read_csv(data, name, cpu, quoting))
        # Money, dates and grouped digits the reader left as text become duals.
        frame.interpret_texts(interp.read, interp.number_characters(), cpu)
        return frame
    return read_delimited(bytes(data).decode(_encoding(fmt.encoding), "replace"), fmt, name, interp)


def _encoding(name: str) -> str:
    return {
        "utf8": "utf-8-sig",
        "unicode": "utf-16",
        "ansi": "cp1252",
        "oem": "cp437",
        "mac": "mac_roman",
        "cp65001": "utf-8-sig",
        "cp1200": "utf-16",
    }.get(name, name)


def read_delimited(text: str, fmt: ast.FileFormat, name: str, interp: Interpretation) -> Frame:
    """Delimited text read with every option of the format spec (cells trimmed of spaces,
    but for what quotes hold)."""
    lines = text.splitlines()[fmt.header_lines :]
    delimiter = fmt.delimiter or ","
    rows: list[list[str]]
    if fmt.quoting == "standard":
        rows = [split_standard(line, delimiter) for line in lines]
    elif fmt.quoting == "none":
        rows = [[c.strip() for c in line.split(delimiter)] for line in lines]
    else:  # msq: RFC 4180, as the engine's reader
        reader = csv.reader(
            io.StringIO("\n".join(lines)), delimiter=delimiter, quotechar='"', strict=True
        )
        try:
            rows = [[c.strip() for c in row] for row in reader]
        except csv.Error as exc:
            raise ScriptError(
                f"table {name!r}: line {reader.line_num}: {exc} (msq quoting)"
            ) from None
    rows = [r for r in rows if r and any(c for c in r)]
    if delimiter == " ":
        rows = [[c for c in r if c != ""] for r in rows]
    if not rows:
        raise ScriptError(f"table {name!r}: the data has no lines")
    if fmt.labels is False:
        width = max(len(r) for r in rows)
        labels = [f"@{i + 1}" for i in range(width)]
    else:
        labels = [c.strip() for c in rows[0]]
        rows = rows[1:]
        seen = set()
        for label in labels:
            if not label or label in seen:
                raise ScriptError(
                    f"table {name!r}: empty or repeated field name {label!r} in the labels"
                )
            seen.add(label)
    return frame_of_texts(name, labels, rows, interp)


def split_standard(line: str, delimiter: str) -> list[str]:
    """One line's cells under standard quoting: a cell whose first and last non-blank
    characters are both `"` or both `'` is what stands between them (a doubled quote inside
    is one, a delimiter is data); other cells are trimmed of blanks, quotes and all."""
    blanks = "".join(b for b in " \t" if b not in delimiter)
    cells: list[str] = []
    at, n, width = 0, len(line), len(delimiter)
    while True:
        start = at
        while start < n and line[start] in blanks:
            start += 1
        if start < n and line[start] in "\"'":
            quote = line[start]
            k = start + 1
            while k < n:
                if line[k] != quote:
                    k += 1
                    continue
                if line.startswith(quote, k + 1):
                    k += 2
                    continue
                end = k + 1
                while end < n and line[end] in blanks:
                    end += 1
                if end == n or line.startswith(delimiter, end):
                    cells.append(line[start + 1 : k].replace(quote * 2, quote))
                    if end == n:
                        return cells
                    at = end + width
                    break
                k += 1
            else:
                quote = ""  # no closing quote: an ordinary cell
            if quote:
                continue
        end = line.find(delimiter, at)
        if end < 0:
            cells.append(line[at:].strip(blanks))
            return cells
        cells.append(line[at:end].strip(blanks))
        at = end + width


def frame_of_texts(
    name: str, labels: list[str], rows: list[list[str]], interp: Interpretation
) -> Frame:
    """A frame from rows of text cells, each distinct text interpreted once."""
    columns: dict[str, Column] = {}
    for c, label in enumerate(labels):
        index: dict[str, int] = {}
        codes = np.empty(len(rows), dtype=np.int32)
        for r, row in enumerate(rows):
            cell = row[c] if c < len(row) else ""
            if cell == "":
                codes[r] = -1
                continue
            k = index.get(cell)
            if k is None:
                k = index[cell] = len(index)
            codes[r] = k
        texts: list[str | None] = list(index)
        nums = np.array(
            [NAN if (x := interp.read(t)) is None else x for t in index], dtype=np.float64
        )
        # A number written in its plain form needs no text of its own.
        for k, x in enumerate(nums.tolist()):
            if x == x and plain_text(x) == texts[k]:
                texts[k] = None
        columns[label] = Column(Values.of_texts(texts, nums), codes)
    return Frame(name, len(rows), columns)


def inline_frame(source: ast.InlineSource, name: str, interp: Interpretation) -> Frame:
    """The table of `INLINE [ … ]` (labels on the first line, comma separated unless told)."""
    return read_delimited(source.text.strip("\r\n"), source.format, name, interp)


def write_txt(frame: Frame, path: Path) -> None:
    """A frame as a comma-separated text file with a header line."""
    cols = [frame.column(f) for f in frame.fields]
    texts = [[*c.symbols.text_list(), ""] for c in cols]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\r\n")
        writer.writerow(frame.fields)
        for r in range(frame.rows):
            writer.writerow([t[c.codes[r]] or "" for t, c in zip(texts, cols, strict=True)])


def _parquet() -> Any:
    """pyarrow.parquet, or a ScriptError that says how to install it."""
    try:
        import pyarrow.parquet
    except ImportError:
        raise ScriptError('parquet files need pyarrow: pip install "assoc[parquet]"') from None
    return pyarrow.parquet


def read_parquet(
    path: Path, name: str, interp: Interpretation, cpu: _core.CpuAccount | None = None
) -> Frame:
    """A Parquet file as a frame (read by pyarrow, its columns taken over as Arrow)."""
    from assoc.arrow import read_arrow

    pq = _parquet()
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ScriptError(f"cannot read parquet file {path.name!r}: {exc}") from None
    return Frame.of_native(read_arrow(table, name, interp, cpu))


def write_parquet(frame: Frame, path: Path) -> None:
    """A frame as a Parquet file: text fields as dictionary columns, numbers as int64 or
    double, dates and timestamps (by their number format) as Parquet dates and timestamps."""
    pq = _parquet()
    import pyarrow as pa
    import pyarrow.compute as pc

    builder = _core.ModelBuilder()
    frame.to_native().add_to(builder)
    model = builder.build()
    table = pa.table(model.arrow(frame.name, "number"))
    tags = {f["name"]: f["tags"] for f in model.metadata()["fields"]}
    for i, field in enumerate(table.column_names):
        column = table.column(i)
        if not pa.types.is_integer(column.type) and not pa.types.is_floating(column.type):
            continue
        days = pc.subtract(pc.cast(column, pa.float64()), 25569.0)
        if "$date" in tags[field]:
            whole = pc.cast(pc.floor(days), pa.int32())
            table = table.set_column(i, field, pc.cast(whole, pa.date32()))
        elif "$timestamp" in tags[field]:
            micros = pc.cast(pc.round(pc.multiply(days, 86400e6)), pa.int64())
            table = table.set_column(i, field, pc.cast(micros, pa.timestamp("us")))
    pq.write_table(table, path)


def write_qvd(frame: Frame, path: Path, annotations: Annotations | None = None) -> None:
    """A frame as a QVD file (through the engine's writer), with the script's tags and
    comments of its fields and table in the header."""
    builder = _core.ModelBuilder()
    frame.to_native().add_to(builder)
    notes = annotations or Annotations()
    data = builder.build().write_qvd(
        frame.name,
        field_tags=notes.field_tags,
        field_comments=notes.field_comments,
        table_comment=notes.table_comments.get(frame.name),
        field_untags=notes.field_untags,
    )
    with open(path, "wb") as f:
        f.write(data)
