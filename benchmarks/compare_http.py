"""Side-by-side HTTP benchmarks of `assoc serve`.

1. GET /v1/apps/{appId}/data/metadata of a 50-field app (imported from CSV), against a bare
   Starlette endpoint that answers the same bytes under the same uvicorn settings, at 1 and 64
   connections.
   Load comes from `wrk` in its own process, or `benchmarks/http_load.py` where wrk is absent.
2. POST /v1/apps/import of a QVD file against POSTing the same body to a bare Starlette
   endpoint that only reads it (runs alternate; the ratio is the median of adjacent pairs),
   and against `assoc.App.from_qvd` of the same file.

    python benchmarks/compare_http.py [--duration 5] [--runs 3] [--rows 1000000]

Targets: metadata requests/s >= 0.8x the bare endpoint and p99 <= 1.5x; HTTP import <= 1.3x
the bare upload of the same body, the answer still coming only once the data is on disk.
The script prints the figures as a Markdown table; it never fails
on a missed target.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

import assoc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import SCALE, scaled
from harness import Measure, model_bytes

HERE = Path(__file__).resolve().parent


# ---- processes ------------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    package_parent = str(Path(assoc.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    return env


LISTENING = re.compile(r"listening on (http://\S+)")


class Server:
    """A server process on a loopback port it picks and reports, stopped by `close`."""

    def __init__(self, args: list[str], health_path: str) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="assoc-bench-", suffix=".log")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, *args, "--port", "0"],
            env=_child_env(),
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        self.url = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{args} exited with {self.proc.returncode}")
            if not self.url:
                bound = LISTENING.search(Path(self.log.name).read_text(errors="replace"))
                self.url = bound.group(1) if bound else ""
            try:
                if self.url:
                    httpx.get(self.url + health_path, timeout=1)
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.close()
        raise RuntimeError(f"{args} did not start")

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the server process has used (Linux: /proc)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        """SIGTERM and wait."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


def import_qvd(server: Server, qvd: Path) -> str:
    """Imports a QVD file into `server` (POST /v1/apps/import); the new app's id."""
    with httpx.Client(base_url=server.url, timeout=600) as client:
        answer = client.post("/v1/apps/import", content=qvd.read_bytes())
        answer.raise_for_status()
        return str(answer.json()["attributes"]["id"])


def assoc_server(data_dir: Path) -> Server:
    """`assoc serve` with default settings and warnings-only logging."""
    args = ["-m", "assoc.cli", "serve", "--data-dir", str(data_dir), "--log-level", "warning"]
    return Server(args, "/health")


# ---- load -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadResult:
    """One load run: throughput, tail latency, failed answers."""

    requests_per_s: float
    p99_ms: float
    errors: int


_WRK_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def load_generator() -> str:
    """'wrk' when installed, else the Python asyncio client."""
    return "wrk" if shutil.which("wrk") else "http_load.py"


def run_load(url: str, connections: int, duration: float) -> LoadResult:
    """Loads `url` from a second process for `duration` seconds."""
    if shutil.which("wrk"):
        threads = min(2, connections)
        seconds = max(1, round(duration))
        out = subprocess.run(
            ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
        p99 = re.search(r"\s99%\s+([\d.]+)(us|ms|s)\b", out)
        assert p99 is not None, out
        bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
        errors = int(bad.group(1)) if bad else 0
        socket_errors = re.search(r"Socket errors: (.*)", out)
        if socket_errors:
            errors += sum(int(n) for n in re.findall(r"\d+", socket_errors.group(1)))
        return LoadResult(rps, float(p99.group(1)) * _WRK_UNITS[p99.group(2)], errors)
    args = [sys.executable, str(HERE / "http_load.py"), url]
    args += ["--connections", str(connections), "--duration", str(duration)]
    doc = json.loads(subprocess.run(args, capture_output=True, check=True, text=True).stdout)
    return LoadResult(doc["requests_per_s"], doc["p99_ms"], doc["errors"])


# ---- apps -----------------------------------------------------------------------------


def wide_csv(fields: int, rows: int) -> bytes:
    """CSV of one table of `fields` columns: integers, decimals, texts of many cardinalities."""
    rng = np.random.default_rng(7)
    columns: dict[str, list[str]] = {}
    for i in range(fields):
        if i % 3 == 0:
            columns[f"Int{i}"] = [str(n) for n in rng.integers(0, 10 * (i + 1), rows)]
        elif i % 3 == 1:
            columns[f"Float{i}"] = [f"{x:.2f}" for x in rng.random(rows) * 1000]
        else:
            columns[f"Text{i}"] = [f"v{i}-{n}" for n in rng.integers(0, 50 * (i + 1), rows)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(zip(*columns.values(), strict=True))
    return out.getvalue().encode()


def sales_app(rows: int) -> assoc.App:
    """A fact table: order ids, customers, products, amounts, quantities, dates."""
    rng = np.random.default_rng(11)
    return assoc.App.from_tables(
        {
            "Sales": {
                "OrderId": np.arange(rows, dtype=np.float64),
                "Customer": [f"C{n:05d}" for n in rng.integers(0, 20_000, rows)],
                "Product": [f"P{n:04d}" for n in rng.integers(0, 2_000, rows)],
                "Amount": np.round(rng.random(rows) * 500, 2),
                "Quantity": rng.integers(1, 20, rows).astype(np.float64),
                "Day": rng.integers(45_000, 46_000, rows).astype(np.float64),
            }
        }
    )


def write_table_qvd(app: assoc.App, table: str, path: Path) -> None:
    """The table as a QVD file: assoc's writer, or pyqvd where the writer is missing."""
    try:
        app.write_qvd(table, path)
        return
    except AttributeError:
        pass
    from pyqvd import QvdTable
    from pyqvd.io.writer import QvdFileWriterOptions

    t = app.table(table)
    names = t.fields
    rows = [list(r) for r in zip(*(t.column(f) for f in names), strict=True)]
    with open(path, "wb") as f:
        QvdTable.from_dict({"columns": names, "data": rows}).to_stream(
            f, QvdFileWriterOptions(table_name=table)
        )


# ---- the two comparisons --------------------------------------------------------------


@dataclass(frozen=True)
class MetadataComparison:
    """Medians of the runs at one connection count, ours and the bare endpoint."""

    connections: int
    ours: LoadResult
    bare: LoadResult
    body_bytes: int
    ours_rps: tuple[float, ...] = ()  # requests/s of every run
    bare_rps: tuple[float, ...] = ()

    @property
    def throughput_ratio(self) -> float:
        return self.ours.requests_per_s / self.bare.requests_per_s

    @property
    def p99_ratio(self) -> float:
        return self.ours.p99_ms / self.bare.p99_ms


def _median(results: list[LoadResult]) -> LoadResult:
    return LoadResult(
        statistics.median(r.requests_per_s for r in results),
        statistics.median(r.p99_ms for r in results),
        sum(r.errors for r in results),
    )


def compare_metadata(
    duration: float,
    runs: int,
    connections: tuple[int, ...] = (1, 64),
    fields: int = 50,
    rows: int = 10_000,
) -> list[MetadataComparison]:
    """Ours against the bare endpoint, runs alternating, medians per connection count."""
    with tempfile.TemporaryDirectory(prefix="assoc-bench-") as tmp:
        source = wide_csv(fields, rows)
        ours = assoc_server(Path(tmp) / "data")
        bare: Server | None = None
        try:
            answer = httpx.post(
                ours.url + "/v1/apps/import", content=source, params={"name": "Wide"}, timeout=120
            )
            answer.raise_for_status()
            path = f"/v1/apps/{answer.json()['attributes']['id']}/data/metadata"
            body = httpx.get(ours.url + path).content
            assert len(json.loads(body)["fields"]) >= fields
            body_file = Path(tmp) / "body.json"
            body_file.write_bytes(body)
            bare = Server([str(HERE / "bare_metadata_server.py"), str(body_file)], path)
            assert httpx.get(bare.url + path).content == body
            out = []
            for c in connections:
                mine: list[LoadResult] = []
                theirs: list[LoadResult] = []
                for _ in range(runs):
                    mine.append(run_load(ours.url + path, c, duration))
                    theirs.append(run_load(bare.url + path, c, duration))
                out.append(
                    MetadataComparison(
                        c,
                        _median(mine),
                        _median(theirs),
                        len(body),
                        tuple(r.requests_per_s for r in mine),
                        tuple(r.requests_per_s for r in theirs),
                    )
                )
            return out
        finally:
            ours.close()
            if bare is not None:
                bare.close()


@dataclass(frozen=True)
class ImportComparison:
    """Median seconds of App.from_qvd and of an HTTP import of the same file."""

    rows: int
    file_bytes: int
    from_qvd_s: float
    http_import_s: float
    bare_upload_s: float  # the same body POSTed to a bare endpoint that only reads it
    upload_ratio: float  # median over runs of HTTP import / bare upload (each pair adjacent)
    import_cpu_s: float  # the service's CPU per import, over all runs
    upload_cpu_s: float  # the bare endpoint's CPU per upload, over all runs
    import_runs: tuple[float, ...] = ()  # seconds of every HTTP import
    upload_runs: tuple[float, ...] = ()  # seconds of every bare upload
    model_bytes: int = 0  # the imported app's indexes and symbols

    @property
    def speed_ratio(self) -> float:
        return self.from_qvd_s / self.http_import_s


def compare_import(rows: int, runs: int) -> ImportComparison:
    """POST /v1/apps/import of a QVD against App.from_qvd of the same file."""
    with tempfile.TemporaryDirectory(prefix="assoc-bench-") as tmp:
        qvd = Path(tmp) / "sales.qvd"
        write_table_qvd(sales_app(rows), "Sales", qvd)
        data = qvd.read_bytes()
        (Path(tmp) / "empty.json").write_bytes(b"{}")
        bare = Server([str(HERE / "bare_metadata_server.py"), str(Path(tmp) / "empty.json")], "/")
        server: Server | None = None
        local: list[float] = []
        written = 0
        remote: list[float] = []
        upload: list[float] = []
        import_cpu = upload_cpu = 0.0
        try:
            server = assoc_server(Path(tmp) / "data")
            with (
                httpx.Client(base_url=server.url, timeout=600) as client,
                httpx.Client(base_url=bare.url, timeout=600) as bare_client,
            ):
                # Runs alternate so that both sides see the same machine load.
                for _ in range(runs):
                    start = time.perf_counter()
                    app = assoc.App.from_qvd(qvd)
                    local.append(time.perf_counter() - start)
                    assert app.table("Sales").num_rows == rows
                    written = model_bytes(app)
                    del app
                    cpu = server.cpu_seconds()
                    start = time.perf_counter()
                    answer = client.post("/v1/apps/import", content=data)
                    remote.append(time.perf_counter() - start)
                    import_cpu += server.cpu_seconds() - cpu
                    answer.raise_for_status()
                    app_id = answer.json()["attributes"]["id"]
                    tables = client.get(f"/v1/apps/{app_id}/data/metadata").json()["tables"]
                    assert tables[0]["no_of_rows"] == rows
                    client.delete(f"/v1/apps/{app_id}").raise_for_status()
                    cpu = bare.cpu_seconds()
                    start = time.perf_counter()
                    drained = bare_client.post("/drain", content=data)
                    upload.append(time.perf_counter() - start)
                    upload_cpu += bare.cpu_seconds() - cpu
                    assert drained.text == str(len(data))
        finally:
            if server is not None:
                server.close()
            bare.close()
        return ImportComparison(
            rows,
            len(data),
            statistics.median(local),
            statistics.median(remote),
            statistics.median(upload),
            statistics.median(r / u for r, u in zip(remote, upload, strict=True)),
            import_cpu / runs,
            upload_cpu / runs,
            tuple(remote),
            tuple(upload),
            written,
        )


def report(metadata: list[MetadataComparison], imported: ImportComparison | None) -> str:
    """The results as Markdown tables."""
    lines = [f"Load generator: {load_generator()}; machine: {os.cpu_count()} logical cores."]
    if metadata:
        lines += [
            "",
            "| connections | assoc req/s | bare req/s | ratio (>= 0.8) | assoc p99 ms "
            "| bare p99 ms | p99 ratio (<= 1.5) | errors |",
            "|---|---|---|---|---|---|---|---|",
        ]
    for m in metadata:
        lines.append(
            f"| {m.connections} | {m.ours.requests_per_s:,.0f} | {m.bare.requests_per_s:,.0f} "
            f"| {m.throughput_ratio:.2f} | {m.ours.p99_ms:.2f} | {m.bare.p99_ms:.2f} "
            f"| {m.p99_ratio:.2f} | {m.ours.errors + m.bare.errors} |"
        )
    if metadata:
        lines += ["", f"Metadata body: {metadata[0].body_bytes:,} bytes."]
    if imported is not None:
        lines += [
            "",
            "| rows | QVD bytes | App.from_qvd s | HTTP import s | bare upload s "
            "| import / bare upload (<= 1.3) | from_qvd / import |",
            "|---|---|---|---|---|---|---|",
            f"| {imported.rows:,} | {imported.file_bytes:,} | {imported.from_qvd_s:.4f} "
            f"| {imported.http_import_s:.4f} | {imported.bare_upload_s:.4f} "
            f"| {imported.upload_ratio:.2f} | {imported.speed_ratio:.2f} |",
            "",
            f"Server CPU per request: import {imported.import_cpu_s * 1000:.1f} ms, "
            f"bare upload {imported.upload_cpu_s * 1000:.1f} ms.",
        ]
    return "\n".join(lines)


def measures(repeat: int) -> list[Measure]:
    """Metadata under load and the HTTP import as measures for run_all.py: a metadata
    measure's times are seconds per request (1 / requests per second) of each run."""
    duration = 0.25 if SCALE < 0.1 else 2.0
    out = [
        Measure(
            f"http.metadata_{m.connections}_conn",
            f"GET metadata of a 50-field app, {m.connections} connection(s), {duration} s runs"
            " vs bare Starlette (time = 1 / requests per second)",
            [1 / r for r in m.ours_rps],
            {"bare Starlette": [1 / r for r in m.bare_rps]},
            floor_what="a network round trip: no data read",
            goal="<= 1.25x bare (>= 0.8x its requests/s)",
        )
        for m in compare_metadata(duration, repeat)
    ]
    rows = scaled(1_000_000)
    imported = compare_import(rows, repeat)
    out.append(
        Measure(
            "http.import",
            f"POST /v1/apps/import of a {rows:,}-row QVD vs a bare upload of the same body",
            list(imported.import_runs),
            {"bare upload": list(imported.upload_runs)},
            imported.file_bytes + imported.model_bytes,
            "the QVD body, and the indexes and symbols written",
            "<= 1.3x bare upload",
        )
    )
    return out


def main() -> None:
    """Runs both comparisons and prints the Markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per load run")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the import QVD")
    parser.add_argument("--skip-import", action="store_true")
    parser.add_argument("--skip-metadata", action="store_true")
    args = parser.parse_args()
    metadata = [] if args.skip_metadata else compare_metadata(args.duration, args.runs)
    imported = None if args.skip_import else compare_import(args.rows, args.runs)
    print(report(metadata, imported))


if __name__ == "__main__":
    main()
