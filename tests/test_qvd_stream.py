"""QvdStream: a QVD fed in any chunks gives the table reading the whole file gives, and the same
errors for broken, truncated or mis-sized input."""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import assoc
from appfiles import with_header
from assoc import App, Dual, QvdStream
from assoc.qvd_stream import QvdTable


def streamed(
    data: bytes, chunks: list[int] | None = None, size: int | None = None, file: Path | None = None
) -> QvdTable:
    """The table of `data` fed to a stream of `size` (default: its length) in `chunks`, also
    written to `file` when given."""
    stream = QvdStream(len(data) if size is None else size, file)
    at = 0
    for n in chunks or [len(data)]:
        stream.feed(data[at : at + n])
        at += n
    stream.feed(data[at:])
    assert stream.received == len(data)
    return stream.finish()


def random_chunks(total: int, rng: random.Random, largest: int) -> list[int]:
    """Chunk sizes (some empty) that add up to `total`."""
    sizes: list[int] = []
    while sum(sizes) < total:
        sizes.append(min(rng.randint(0, largest), total - sum(sizes)))
    return sizes


def content(app: App) -> dict[str, Any]:
    """Everything a user sees of an app's one table: metadata (but for its load time) and values."""
    meta = app.metadata()
    del meta["reload_meta"]["cpu_time_spent_ms"]
    table = app.table(app.tables[0])
    values = {
        f: [repr(v) if isinstance(v, Dual | float) else v for v in table.column(f)]
        for f in table.fields
    }
    return {"metadata": meta, "values": values}


def read_error(data: bytes) -> str:
    """The message App.from_qvd gives for these bytes."""
    with pytest.raises(assoc.Error) as info:
        App.from_qvd(data)
    return str(info.value)


@pytest.fixture(scope="module")
def small_qvd() -> bytes:
    """A small QVD of every symbol type, with NULLs, written by the engine."""
    app = App.from_tables(
        {
            "Small": {
                "I": [1, 2, None, 3, 2, -7, 8, 9, 10, 11],
                "F": [1.5, None, 2.25, 1.5, -0.5, 1e300, 7.0, 0.1, 2.5, 3.5],
                "S": ["a", "bc", None, "a", "ünï", "", "x", "y", "z", "w"],
                "D": [Dual(1, "one"), Dual(2.5, "two"), None, Dual(1, "one"), Dual(3, "x")] * 2,
            }
        }
    )
    return app._impl.write_qvd("Small")


@pytest.fixture(scope="module")
def big_qvd() -> bytes:
    """A QVD whose records span several of the stream's record blocks."""
    rng = random.Random(7)
    rows = 300_000
    app = App.from_tables(
        {
            "Big": {
                "Id": list(range(rows)),
                "Cat": [f"c{rng.randint(0, 999)}" for _ in range(rows)],
                "Amount": [rng.randint(0, 10**6) / 100 for _ in range(rows)],
                "Flag": [None if i % 7 == 0 else i % 3 for i in range(rows)],
            }
        }
    )
    return app._impl.write_qvd("Big")


def test_every_split_of_a_small_file_gives_the_same_table(small_qvd: bytes) -> None:
    expected = content(App.from_qvd(small_qvd))
    assert content(App.from_qvd(streamed(small_qvd, [1] * len(small_qvd)))) == expected
    for cut in range(len(small_qvd) + 1):
        assert content(App.from_qvd(streamed(small_qvd, [cut]))) == expected, cut


def test_random_chunks_of_a_big_file_give_the_same_table(big_qvd: bytes) -> None:
    expected = content(App.from_qvd(big_qvd))
    rng = random.Random(1)
    for largest in (1 << 10, 1 << 16, 1 << 20):
        table = streamed(big_qvd, random_chunks(len(big_qvd), rng, largest))
        assert content(App.from_qvd(table)) == expected, largest


def test_the_table_takes_a_name_and_is_added_once(small_qvd: bytes) -> None:
    table = streamed(small_qvd)
    assert table.name == "Small"
    assert App.from_qvd(table, "Renamed").tables == ["Renamed"]
    with pytest.raises(assoc.Error, match="added to a model already"):
        App.from_qvd(table)


def test_a_stream_finishes_once(small_qvd: bytes) -> None:
    stream = QvdStream(len(small_qvd))
    stream.feed(small_qvd)
    stream.finish()
    with pytest.raises(assoc.Error, match="finished"):
        stream.finish()
    with pytest.raises(assoc.Error, match="finished"):
        stream.feed(b"x")


def test_real_qlik_files_stream_to_the_same_table(qlik_qvd_dir: Path) -> None:
    paths = sorted(qlik_qvd_dir.glob("*.qvd"))
    assert len(paths) >= 10
    for path in paths:
        data = path.read_bytes()
        try:
            expected: Any = content(App.from_qvd(data))
        except assoc.Error as exc:  # the damaged file: the same error
            expected = str(exc)
        rng = random.Random(path.name)
        for chunks in ([1 << 16], random_chunks(len(data), rng, 4096)):
            try:
                got: Any = content(App.from_qvd(streamed(data, chunks)))
            except assoc.Error as exc:
                got = str(exc)
            assert got == expected, path.name


def test_truncated_files_give_the_readers_error(small_qvd: bytes) -> None:
    for cut in range(len(small_qvd)):
        part = small_qvd[:cut]
        expected = read_error(part)
        # Declared as what arrives, and declared as the whole file (the body stopped short).
        for size in (cut, len(small_qvd)):
            with pytest.raises(assoc.Error) as info:
                streamed(part, [3] * (cut // 3), size=size)
            assert str(info.value) == expected, (cut, size)


def test_trailing_bytes_give_the_readers_error(small_qvd: bytes) -> None:
    longer = small_qvd + b"\0\0\0"
    expected = read_error(longer)
    assert "bytes follow the symbols and records" in expected
    for size in (len(longer), len(small_qvd), 10):  # declared, or fewer than arrive
        with pytest.raises(assoc.Error) as info:
            streamed(longer, [5] * 40, size=size)
        assert str(info.value) == expected


def test_more_bytes_than_declared_still_read_as_a_whole(small_qvd: bytes) -> None:
    assert content(App.from_qvd(streamed(small_qvd, [7], size=7))) == content(
        App.from_qvd(small_qvd)
    )


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("<TableName>Small</TableName>", "<TableName>Small</TableNam>", "closes <TableName>"),
        ("<RecordByteSize>", "<RecordByteSize>9", "lie past|do not fit"),
        ("<NoOfSymbols>8</NoOfSymbols>", "<NoOfSymbols>9</NoOfSymbols>", "runs past"),
        ("<Length>", "<Length>9", "end past the"),
        ("<Offset>0</Offset>", "<Offset>99999999</Offset>", "end past the"),
        ("<Bias>-2</Bias>", "<Bias>0</Bias>", "symbol"),
    ],
)
def test_corrupt_files_give_the_readers_error(
    small_qvd: bytes, old: str, new: str, message: str
) -> None:
    broken = with_header(small_qvd, old, new)
    expected = read_error(broken)
    assert any(m in expected for m in message.split("|"))
    with pytest.raises(assoc.Error) as info:
        streamed(broken, [1] * 200)
    assert str(info.value) == expected


def test_bad_symbols_and_records_give_the_readers_error(small_qvd: bytes) -> None:
    nul = small_qvd.index(b"\0")
    rng = random.Random(3)
    for _ in range(200):
        damaged = bytearray(small_qvd)
        at = rng.randrange(nul + 1, len(small_qvd))
        damaged[at] = rng.randrange(256)
        try:
            expected: Any = content(App.from_qvd(bytes(damaged)))
        except assoc.Error as exc:
            expected = str(exc)
        try:
            got: Any = content(App.from_qvd(streamed(bytes(damaged), [rng.randint(1, 64)] * 8)))
        except assoc.Error as exc:
            got = str(exc)
        assert got == expected, at


def test_empty_and_negative_sizes() -> None:
    with pytest.raises(assoc.Error, match="empty"):
        QvdStream(0).finish()
    with pytest.raises(ValueError, match="negative"):
        QvdStream(-1)
    with pytest.raises(assoc.Error, match="larger than this machine's memory"):
        QvdStream(1 << 62)


# ---- the file a stream writes --------------------------------------------------------


def test_a_streamed_file_holds_every_byte_fed(
    tmp_path: Path, small_qvd: bytes, big_qvd: bytes
) -> None:
    # The big file is written with direct I/O (whole pages, from 1 MiB on) and a last partial
    # page through the page cache; the small one through the page cache alone.
    assert len(big_qvd) > 1 << 20
    assert len(big_qvd) % 4096
    rng = random.Random(5)
    for data in (small_qvd, big_qvd):
        expected = content(App.from_qvd(data))
        for n, chunks in enumerate(([len(data)], random_chunks(len(data), rng, 1 << 18))):
            path = tmp_path / f"{len(data)}-{n}.qvd"
            assert content(App.from_qvd(streamed(data, chunks, file=path))) == expected
            assert path.read_bytes() == data


def test_a_streamed_file_holds_what_came_when_it_differs_from_the_declared_size(
    tmp_path: Path, small_qvd: bytes, big_qvd: bytes
) -> None:
    for data in (small_qvd, big_qvd):
        half = data[: len(data) // 2]
        path = tmp_path / f"short-{len(data)}.qvd"
        with pytest.raises(assoc.Error) as info:
            streamed(half, [4096] * (len(half) // 4096), size=len(data), file=path)
        assert str(info.value) == read_error(half)
        assert path.read_bytes() == half
        for size in (7, len(data) // 2 + 1, len(data) + 5000):
            path = tmp_path / f"{size}-{len(data)}.qvd"
            with_size = streamed(data, [1 << 16] * (len(data) >> 16), size=size, file=path)
            assert content(App.from_qvd(with_size)) == content(App.from_qvd(data))
            assert path.read_bytes() == data, size


def _open_flags(path: Path) -> int:
    """The flags this process holds `path` open with."""
    for fd in os.listdir("/proc/self/fd"):
        if os.readlink(f"/proc/self/fd/{fd}") == str(path):
            info = Path(f"/proc/self/fdinfo/{fd}").read_text()
            fields = dict(line.split(":", 1) for line in info.splitlines())
            return int(fields["flags"], 8)
    raise AssertionError(f"{path} is not open")


@pytest.mark.skipif(not hasattr(os, "O_DIRECT"), reason="no direct I/O here")
def test_a_big_streamed_file_bypasses_the_page_cache(tmp_path: Path, big_qvd: bytes) -> None:
    probe = tmp_path / "probe"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_DIRECT))
    except OSError:
        pytest.skip("the file system has no direct I/O")
    stream = QvdStream(len(big_qvd), tmp_path / "big.qvd")
    stream.feed(big_qvd[:100_000])
    assert _open_flags(tmp_path / "big.qvd") & os.O_DIRECT
    stream.feed(big_qvd[100_000:])
    stream.finish()
    small = QvdStream(1000, tmp_path / "small.qvd")
    assert not _open_flags(tmp_path / "small.qvd") & os.O_DIRECT
    del small


def test_a_stream_does_not_overwrite_a_file(tmp_path: Path) -> None:
    path = tmp_path / "there.qvd"
    path.write_bytes(b"kept")
    with pytest.raises(FileExistsError) as info:
        QvdStream(10, path)
    assert info.value.filename == str(path)
    assert path.read_bytes() == b"kept"
    with pytest.raises(FileNotFoundError):
        QvdStream(10, tmp_path / "no-such-folder" / "x.qvd")


def test_a_dropped_stream_closes_its_file(tmp_path: Path, big_qvd: bytes) -> None:
    fds = len(os.listdir("/proc/self/fd"))
    stream = QvdStream(len(big_qvd), tmp_path / "dropped.qvd")
    stream.feed(big_qvd[: len(big_qvd) // 2])
    del stream
    assert len(os.listdir("/proc/self/fd")) == fds


_FILE_SIZE_LIMIT = """
import resource, sys
from assoc import QvdStream
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
try:
    QvdStream(2 << 20, sys.argv[1] + "/over.qvd")
except OSError as exc:
    print("create", exc.errno, exc.filename)
stream = QvdStream(1000, sys.argv[1] + "/grows.qvd")
stream.feed(b"QVD" * (1 << 20))
try:
    stream.finish()
except OSError as exc:
    print("finish", exc.errno, exc.filename)
"""


def test_no_room_for_the_file_is_an_oserror(tmp_path: Path) -> None:
    # A file-size limit stands in for a full disk: the room for the declared size is taken
    # when the stream starts, and a write past it fails when the stream finishes.
    out = subprocess.run(
        [sys.executable, "-c", _FILE_SIZE_LIMIT, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out == [
        f"create {errno.EFBIG} {tmp_path}/over.qvd",
        f"finish {errno.EFBIG} {tmp_path}/grows.qvd",
    ]
    assert not (tmp_path / "over.qvd").exists()


def test_the_table_name_is_known_once_the_header_is_read(small_qvd: bytes, big_qvd: bytes) -> None:
    stream = QvdStream(len(big_qvd))
    assert stream.table_name is None
    stream.feed(big_qvd[:100])
    assert stream.table_name is None  # the header is not all there
    stream.feed(big_qvd[100:])
    deadline = time.monotonic() + 10
    while stream.table_name is None and time.monotonic() < deadline:
        time.sleep(0.001)  # the parser reads it in its own thread
    assert stream.table_name == "Big"
    stream.finish()
    broken = with_header(small_qvd, "<TableName>Small</TableName>", "<TableName>Small</TableNam>")
    stream = QvdStream(len(broken))
    stream.feed(broken)
    with pytest.raises(assoc.Error):
        stream.finish()
    assert stream.table_name is None


def test_a_synced_stream_file_is_complete_when_it_finishes(tmp_path: Path, big_qvd: bytes) -> None:
    path = tmp_path / "synced.qvd"
    stream = QvdStream(len(big_qvd), path, sync=True)
    stream.feed(big_qvd)
    assert stream.finish().name == "Big"
    assert path.read_bytes() == big_qvd


_THREAD_NICE = """
import os, sys, time
from pathlib import Path
import assoc
from assoc import QvdStream
data = Path(sys.argv[1]).read_bytes()
stream = QvdStream(len(data))
for at in range(0, len(data), 1 << 18):
    stream.feed(data[at : at + (1 << 18)])
    time.sleep(0.002)  # the parser runs (at the lowest priority) while bytes arrive
assert stream.table_name is not None
stream.finish()
assoc.App.from_qvd(data)  # parallel work on the pool
for task in Path("/proc/self/task").iterdir():
    # Fields after the command name: state is the first, nice the 17th.
    print((task / "stat").read_text().rsplit(")", 1)[1].split()[16])
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="Linux only")
def test_the_parsers_low_priority_stays_with_it(tmp_path: Path, big_qvd: bytes) -> None:
    # The stream's parser runs at the lowest priority; the thread pool must not inherit it when
    # the parser is the first to reach for the pool (a fresh process), or every parallel job
    # of the process would run on workers that get only what other threads leave.
    path = tmp_path / "big.qvd"
    path.write_bytes(big_qvd)
    out = subprocess.run(
        [sys.executable, "-c", _THREAD_NICE, str(path)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(out) >= 2  # the main thread and the pool's workers
    assert set(out) == {str(os.nice(0))}
