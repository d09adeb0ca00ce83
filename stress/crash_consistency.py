"""Crash consistency: kill -9 the service at random moments while clients write, restart it, and
check that every acknowledged operation survived and nothing is half-present.

    python stress/crash_consistency.py --trials 50 [--workers 6] [--seed 1]

Each worker owns its apps and runs, in a loop: an AUTOREPLACE import of a package (a one-row
table `Marker` plus a media file holding the same marker), a media PUT, a NEW CSV import, and a
delete. An operation the server answered with 200 must be visible after the restart; an
operation in flight at the kill may show its old or its new state, never a mix (the table's
marker and the media marker always agree) and never a broken app (every listed app answers its
metadata and exports). Exits 1 on the first violation, printing it.
"""

from __future__ import annotations

import argparse
import io
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import httpx

import assoc

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from server import Server
else:
    from .server import Server

GONE = "gone"


def package(app_id: str, marker: int) -> bytes:
    """An app package with attributes.id, a one-row `Marker` table and a media marker file."""
    app = assoc.App.from_tables({"Marker": {"Marker": [marker], "Pad": list(range(1))}})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "app.json",
            f'{{"format":"assoc-app","formatVersion":1,"attributes":{{"id":"{app_id}",'
            f'"name":"m{marker}"}},"tables":[{{"name":"Marker","file":"tables/Marker.qvd"}}]}}',
        )
        archive.writestr("tables/Marker.qvd", app._impl.write_qvd("Marker"))
        archive.writestr("media/marker.txt", str(marker))
    return out.getvalue()


@dataclass
class Ledger:
    """What the clients were told: per app, the states it may be in after a restart."""

    allowed: dict[str, set[object]] = field(default_factory=dict)
    media: dict[tuple[str, str], set[bytes | None]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    acknowledged: int = 0

    def begin(self, key: str, new: object) -> None:
        """An operation starts: the old state and the new one are both possible."""
        with self.lock:
            self.allowed.setdefault(key, {GONE}).add(new)

    def ack(self, key: str, new: object) -> None:
        """The server answered 200: only the new state is possible."""
        with self.lock:
            self.allowed[key] = {new}
            self.acknowledged += 1

    def begin_media(self, key: tuple[str, str], new: bytes | None) -> None:
        with self.lock:
            self.media.setdefault(key, {None}).add(new)

    def ack_media(self, key: tuple[str, str], new: bytes | None) -> None:
        with self.lock:
            self.media[key] = {new}
            self.acknowledged += 1


def worker(url: str, ledger: Ledger, stop: threading.Event, rng: random.Random) -> None:
    """Writes until the server dies; records each operation before and after its answer."""
    app_id = str(uuid.UUID(int=rng.getrandbits(128)))
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            while not stop.is_set():
                marker = rng.randrange(1, 1 << 30)
                ledger.begin(app_id, marker)
                ledger.begin_media((app_id, "extra.bin"), None)  # a replace drops it
                response = client.post(
                    "/v1/apps/import?mode=AUTOREPLACE", content=package(app_id, marker)
                )
                if response.status_code != 200:
                    raise AssertionError(f"import answered {response.status_code}: {response.text}")
                ledger.ack(app_id, marker)
                ledger.ack_media((app_id, "extra.bin"), None)

                body = rng.randbytes(rng.randrange(1, 4096))
                ledger.begin_media((app_id, "extra.bin"), body)
                response = client.put(f"/v1/apps/{app_id}/media/files/extra.bin", content=body)
                assert response.status_code == 200, response.text
                ledger.ack_media((app_id, "extra.bin"), body)

                csv_marker = rng.randrange(1, 1 << 30)
                response = client.post("/v1/apps/import", content=f"Marker\n{csv_marker}\n")
                assert response.status_code == 200, response.text
                ledger.ack(response.json()["attributes"]["id"], csv_marker)

                if rng.random() < 0.3:
                    ledger.begin(app_id, GONE)
                    response = client.delete(f"/v1/apps/{app_id}")
                    assert response.status_code == 200, response.text
                    ledger.ack(app_id, GONE)
                    app_id = str(uuid.UUID(int=rng.getrandbits(128)))
    except httpx.TransportError:
        return  # the server was killed


def marker_of(client: httpx.Client, app_id: str) -> int:
    """The Marker value of an app, read back from its export."""
    response = client.get(f"/v1/apps/{app_id}/export")
    if response.status_code != 200:
        raise AssertionError(f"{app_id}: export answered {response.status_code}: {response.text}")
    app = assoc.App.from_package(response.content)
    values = app.table(app.tables[0]).column("Marker")
    assert len(values) == 1, values
    return int(values[0])


def verify(url: str, ledger: Ledger) -> list[str]:
    """Every violation of the ledger after a restart."""
    problems = []
    with httpx.Client(base_url=url, timeout=60) as client:
        listed = {item["attributes"]["id"] for item in client.get("/v1/apps").json()}
        for app_id in listed:
            if client.get(f"/v1/apps/{app_id}/data/metadata").status_code != 200:
                problems.append(f"{app_id}: listed but its metadata does not load")
        for app_id, allowed in ledger.allowed.items():
            if app_id not in listed:
                if GONE not in allowed:
                    problems.append(f"{app_id}: acknowledged as {allowed} but gone")
                continue
            marker = marker_of(client, app_id)
            if marker not in allowed:
                problems.append(f"{app_id}: marker {marker}, expected one of {allowed}")
            media = client.get(f"/v1/apps/{app_id}/media/files/marker.txt")
            if media.status_code == 200 and int(media.text) != marker:
                problems.append(f"{app_id}: media marker {media.text} with table marker {marker}")
            extra = client.get(f"/v1/apps/{app_id}/media/files/extra.bin")
            content = extra.content if extra.status_code == 200 else None
            allowed_media = ledger.media.get((app_id, "extra.bin"), {None})
            if content not in allowed_media:
                problems.append(f"{app_id}: extra.bin is not one of the acknowledged states")
    return problems


def trial(root: Path, rng: random.Random, workers: int) -> tuple[int, list[str]]:
    """One run: start, write from `workers` threads, kill -9 at a random moment, restart, check."""
    data = root / "data"
    ledger = Ledger()
    server = Server(data, "EFEMode=1", log=root / "serve.log").start()
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=worker, args=(server.url, ledger, stop, random.Random(rng.random()))
        )
        for _ in range(workers)
    ]
    try:
        for thread in threads:
            thread.start()
        time.sleep(rng.uniform(0.2, 2.5))
        server.kill()
        stop.set()
        for thread in threads:
            thread.join(60)
        server = Server(data, "EFEMode=1", log=root / "serve.log").start()
        return ledger.acknowledged, verify(server.url, ledger)
    finally:
        stop.set()
        server.stop()


def run(trials: int, workers: int, seed: int, keep: Path | None = None) -> int:
    """Runs the trials; returns how many found a violation (each is printed)."""
    rng = random.Random(seed)
    failed = 0
    for number in range(1, trials + 1):
        root = Path(tempfile.mkdtemp(prefix="assoc-crash-", dir=keep))
        acknowledged, problems = trial(root, rng, workers)
        verdict = "ok" if not problems else f"{len(problems)} problems"
        print(f"trial {number}/{trials}: {acknowledged} acknowledged writes, {verdict}", flush=True)
        for problem in problems:
            print(f"  {problem}", flush=True)
        if problems:
            failed += 1
            print(f"  data kept in {root}", flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return failed


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    failed = run(args.trials, args.workers, args.seed)
    print(f"{args.trials} trials, {failed} with violations")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
