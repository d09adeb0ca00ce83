"""The cluster under node deaths: SeaweedFS, three `assoc serve` nodes and HAProxy on loopback;
clients import, replace, delete, reload and read through HAProxy while a node is `kill -9`ed and
restarted at random.

    python stress/cluster.py --trials 20 [--apps 6] [--workers 3] [--seed 1] [--max-seconds 900]

Each app belongs to one worker (no two writers race on it). An app's state is the pair (table
marker, media marker): an AUTOREPLACE import sets both, a QIX reload (SetScript + DoReload)
sets the table marker only, a delete removes the app. A write answered 200 is acknowledged;
one that failed (its node died under it) may have happened or not. After each trial the
workers pause and every app is read back through HAProxy:

- lost: an acknowledged state is not there (must be 0),
- half-visible: a state no write ever made, e.g. a new table with old media (must be 0),
- recovery: from the kill until every app that exists answers its metadata through HAProxy
  again (goal: within 5 s),
- QIX resume: a client holding an app whose node died reconnects through HAProxy, is told
  SESSION_CREATED, opens the app again on the node HAProxy now picks and re-creates its object,
- left in the store: after the last trial, the unfinished multipart uploads and the versions
  no pointer names (replaced ones, and any a kill left between upload and pointer swap), and
  what one janitor pass with no grace period leaves of them (must be nothing).

Exits 1 when anything was lost or half-visible (each printed), something was left after the
janitor, or no trial could run.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import assoc

_HERE = Path(__file__).resolve().parent
for _path in (_HERE, _HERE.parent / "tests", _HERE.parent / "tests" / "qix"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from crash_consistency import GONE, package  # noqa: E402
from qixclient import QixClient  # noqa: E402

from s3cluster import Cluster, start_cluster  # noqa: E402

State = Any  # (table marker, media marker) or GONE
RECOVERY_LIMIT = 30.0  # seconds a trial waits for every app to be served again
LISTBOX = {
    "qInfo": {"qType": "L"},
    "qListObjectDef": {
        "qDef": {"qFieldDefs": ["Marker"]},
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 10}],
    },
}


def script(marker: int) -> str:
    return f"Marker:\nLOAD * INLINE [\nMarker, Pad\n{marker}, 0\n];\n"


@dataclass
class Ledger:
    """Per app, the states it may be in: one after an acknowledged write, more after a failed
    one (it may or may not have happened)."""

    allowed: dict[str, set[State]] = field(default_factory=dict)
    made: dict[str, set[State]] = field(default_factory=dict)  # every state ever written
    lock: threading.Lock = field(default_factory=threading.Lock)
    acknowledged: int = 0
    failed: int = 0
    reads: int = 0
    stale_reads: list[str] = field(default_factory=list)

    def settled(self, app_id: str) -> State | None:
        """The app's one possible state, or None while it is uncertain."""
        with self.lock:
            states = self.allowed.get(app_id, {GONE})
            return next(iter(states)) if len(states) == 1 else None

    def begin(self, app_id: str, new: State) -> None:
        with self.lock:
            self.allowed.setdefault(app_id, {GONE}).add(new)
            self.made.setdefault(app_id, {GONE}).add(new)

    def ack(self, app_id: str, new: State) -> None:
        with self.lock:
            self.allowed[app_id] = {new}
            self.acknowledged += 1

    def fail(self) -> None:
        with self.lock:
            self.failed += 1


def read_state(client: httpx.Client, app_id: str) -> State | None:
    """The app's state through HAProxy; None when it could not be read (a node died)."""
    try:
        exported = client.get(f"/v1/apps/{app_id}/export")
        if exported.status_code == 404:
            return GONE
        if exported.status_code != 200:
            return None
        app = assoc.App.from_package(exported.content)
        (marker,) = app.table("Marker").column("Marker")
        media = client.get(f"/v1/apps/{app_id}/media/files/marker.txt")
        if media.status_code != 200:
            return None
        return (int(marker), int(media.text))
    except (httpx.HTTPError, ValueError):
        return None


def reload(proxy: str, app_id: str, marker: int) -> bool:
    """SetScript + DoReload through HAProxy; True when the reload was committed."""
    url = proxy.replace("http://", "ws://") + f"/app/{app_id}"
    with QixClient(url) as qix:
        doc = qix.open_doc(app_id)
        qix.result("SetScript", [script(marker)], doc)
        return bool(qix.result("DoReload", [], doc)["qReturn"])


def worker(
    proxy: str, apps: list[str], ledger: Ledger, pause: threading.Event, rng: random.Random
) -> None:
    """Writes and reads its own apps through HAProxy until `pause` is set."""
    with httpx.Client(base_url=proxy, timeout=15) as client:
        while not pause.is_set():
            app_id = rng.choice(apps)
            state = ledger.settled(app_id)
            roll = rng.random()
            marker = rng.randrange(1, 1 << 30)
            try:
                if state is None or state == GONE or roll < 0.4:  # (re)create or replace
                    new: State = (marker, marker)
                    ledger.begin(app_id, new)
                    body = package(app_id, marker)
                    ok = client.post("/v1/apps/import?mode=AUTOREPLACE", content=body)
                    done = ok.status_code == 200
                elif roll < 0.6:  # a reload changes the table, keeps the media
                    new = (marker, state[1])
                    ledger.begin(app_id, new)
                    done = reload(proxy, app_id, marker)
                elif roll < 0.7:
                    new = GONE
                    ledger.begin(app_id, new)
                    done = client.delete(f"/v1/apps/{app_id}").status_code == 200
                else:  # a read must show the acknowledged state
                    seen = read_state(client, app_id)
                    if seen is not None:
                        with ledger.lock:
                            ledger.reads += 1
                            if seen != state:
                                ledger.stale_reads.append(f"{app_id}: read {seen}, acked {state}")
                    continue
            except Exception:  # the node died under the request: maybe done, maybe not
                done = False
            if done:
                ledger.ack(app_id, new)
            else:
                ledger.fail()
                time.sleep(0.05)


@dataclass
class QixWatch:
    """One QIX client on one app: after its socket dies it reconnects through HAProxy, opens
    the app again and re-creates its list box."""

    proxy: str
    app_id: str
    resumes: list[float] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def _open(self) -> tuple[QixClient, int]:
        qix = QixClient(self.proxy.replace("http://", "ws://") + f"/app/{self.app_id}")
        self.states.append(qix.connected["params"]["qSessionState"])
        doc = qix.open_doc(self.app_id)
        listbox = qix.handle_of("CreateSessionObject", [LISTBOX], doc)
        return qix, listbox

    def run(self, stop: threading.Event) -> None:
        qix, listbox = self._open()
        try:
            while not stop.wait(0.05):
                try:
                    qix.result("GetLayout", [], listbox)
                    continue
                except Exception:
                    died = time.monotonic()
                with contextlib.suppress(Exception):
                    qix.__exit__(None, None, None)
                deadline = died + RECOVERY_LIMIT
                while time.monotonic() < deadline and not stop.is_set():
                    try:
                        qix, listbox = self._open()
                        layout = qix.result("GetLayout", [], listbox)["qLayout"]
                        if not layout["qListObject"]["qDataPages"][0]["qMatrix"]:
                            self.problems.append("the re-opened list box is empty")
                        self.resumes.append(time.monotonic() - died)
                        break
                    except Exception:
                        time.sleep(0.1)
                else:
                    if not stop.is_set():
                        self.problems.append(f"QIX did not resume within {RECOVERY_LIMIT} s")
                        return
        finally:
            with contextlib.suppress(Exception):
                qix.__exit__(None, None, None)


def wait_served(proxy: str, ledger: Ledger, started: float) -> float | None:
    """Seconds from `started` until every app that surely exists answers its metadata through
    HAProxy; None when that took over RECOVERY_LIMIT."""
    with ledger.lock:
        apps = [a for a, states in ledger.allowed.items() if GONE not in states]
    waiting = set(apps)
    with httpx.Client(base_url=proxy, timeout=5) as client:
        while waiting and time.monotonic() - started < RECOVERY_LIMIT:
            for app_id in sorted(waiting):
                try:
                    if client.get(f"/v1/apps/{app_id}/data/metadata").status_code == 200:
                        waiting.discard(app_id)
                except httpx.HTTPError:
                    pass
            if waiting:
                time.sleep(0.05)
    return None if waiting else time.monotonic() - started


def verify(proxy: str, ledger: Ledger) -> tuple[list[str], list[str]]:
    """(lost, half-visible) after a trial, the workers paused; settles every app's state."""
    lost, half = [], []
    with httpx.Client(base_url=proxy, timeout=30) as client:
        for app_id, allowed in sorted(ledger.allowed.items()):
            seen = None
            for _ in range(50):  # bounded: a node may still be coming back
                seen = read_state(client, app_id)
                if seen is not None:
                    break
                time.sleep(0.2)
            if seen is None:
                lost.append(f"{app_id}: unreadable through HAProxy after the trial")
                continue
            if seen not in allowed:
                made = ledger.made.get(app_id, set())
                (half if seen not in made else lost).append(
                    f"{app_id}: found {seen}, expected one of {sorted(map(str, allowed))}"
                )
            ledger.allowed[app_id] = {seen}
    return lost, half


@dataclass
class Results:
    trials: int = 0
    acknowledged: int = 0
    failed: int = 0
    reads: int = 0
    lost: list[str] = field(default_factory=list)
    half: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    recovery: list[float] = field(default_factory=list)
    unrecovered: int = 0
    qix_resumes: list[float] = field(default_factory=list)
    qix_states: list[str] = field(default_factory=list)
    qix_problems: list[str] = field(default_factory=list)
    left_uploads: int = 0
    left_versions: int = 0
    after_janitor: int = 0


def janitor_pass(cluster: Cluster, results: Results) -> None:
    """Counts the unfinished uploads and the versions no pointer names in the store, runs the
    janitor once with no grace period (no writer is at work) and counts what is left of them."""
    from assoc.server.store import ObjectStore

    url = next(s.split("=", 1)[1] for s in cluster.nodes[0].settings if s.startswith("AppStore="))
    objects = ObjectStore(url, cluster.weed.endpoint)
    try:
        results.left_uploads = len(cluster.weed.pending_uploads())
        results.left_versions = len(objects.collect_garbage(0))
        results.after_janitor = len(cluster.weed.pending_uploads())
        results.after_janitor += len(objects.collect_garbage(0))
    finally:
        objects.close()


def run(root: Path, trials: int, apps: int, workers: int, seed: int, max_seconds: float) -> Results:
    """Starts the cluster, runs the trials (at most `max_seconds`), stops it."""
    rng = random.Random(seed)
    results = Results()
    cluster: Cluster = start_cluster(root, 3, "EFEMode=1")
    began = time.monotonic()
    try:
        ledger = Ledger()
        ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(apps)]
        qix_app = str(uuid.UUID(int=rng.getrandbits(128)))
        with cluster.client() as client:
            created = client.post("/v1/apps/import?mode=AUTOREPLACE", content=package(qix_app, 1))
            created.raise_for_status()
        watch = QixWatch(cluster.proxy, qix_app)
        stop_qix = threading.Event()
        qix_thread = threading.Thread(target=watch.run, args=(stop_qix,), daemon=True)
        qix_thread.start()
        for number in range(1, trials + 1):
            if time.monotonic() - began > max_seconds:
                print(f"stopping after {number - 1} trials: --max-seconds reached", flush=True)
                break
            pause = threading.Event()
            threads = [
                threading.Thread(
                    target=worker,
                    args=(
                        cluster.proxy,
                        ids[i::workers],
                        ledger,
                        pause,
                        random.Random(rng.random()),
                    ),
                    daemon=True,
                )
                for i in range(workers)
            ]
            for thread in threads:
                thread.start()
            time.sleep(rng.uniform(0.5, 2.0))
            victim = rng.randrange(len(cluster.nodes))
            killed = time.monotonic()
            cluster.nodes[victim].kill()
            served = wait_served(cluster.proxy, ledger, killed)
            cluster.restart(victim)
            time.sleep(rng.uniform(0.2, 1.0))
            pause.set()
            for thread in threads:
                thread.join(60)
            lost, half = verify(cluster.proxy, ledger)
            results.trials = number
            results.lost += lost
            results.half += half
            if served is None:
                results.unrecovered += 1
            else:
                results.recovery.append(served)
            shown = f"{served:.2f} s" if served is not None else f"> {RECOVERY_LIMIT} s"
            print(
                f"trial {number}/{trials}: node{victim + 1} killed, apps served again in {shown}, "
                f"{ledger.acknowledged} acknowledged writes so far, "
                f"lost {len(lost)}, half-visible {len(half)}",
                flush=True,
            )
            for problem in lost + half:
                print(f"  {problem}", flush=True)
        stop_qix.set()
        qix_thread.join(30)
        results.acknowledged, results.failed = ledger.acknowledged, ledger.failed
        results.reads, results.stale = ledger.reads, ledger.stale_reads
        results.qix_resumes, results.qix_states = watch.resumes, watch.states
        results.qix_problems = watch.problems
        janitor_pass(cluster, results)
    finally:
        cluster.stop()
    return results


def report(results: Results) -> None:
    rec = sorted(results.recovery)
    print(f"trials: {results.trials}")
    print(
        f"writes acknowledged: {results.acknowledged}, failed under a kill: {results.failed}, "
        f"reads checked: {results.reads}"
    )
    print(f"acknowledged writes lost: {len(results.lost)}")
    print(f"half-visible versions: {len(results.half)}")
    print(f"stale reads (an acknowledged write not yet served): {len(results.stale)}")
    if rec:
        late = f", not within {RECOVERY_LIMIT} s: {results.unrecovered}"
        print(
            f"served again after a kill: median {statistics.median(rec):.2f} s, "
            f"max {rec[-1]:.2f} s, within 5 s: {sum(r <= 5 for r in rec)}/{len(rec)}"
            + (late if results.unrecovered else "")
        )
    resumes = results.qix_resumes
    print(
        f"QIX resumes: {len(resumes)}"
        + (f" (max {max(resumes):.2f} s)" if resumes else "")
        + f", connection states {sorted(set(results.qix_states))}"
        + (f", problems: {results.qix_problems}" if results.qix_problems else "")
    )
    print(
        f"left in the store: {results.left_uploads} unfinished uploads, "
        f"{results.left_versions} versions no pointer names; after one janitor pass: "
        f"{results.after_janitor}"
    )
    for line in results.stale[:10]:
        print(f"  stale: {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--apps", type=int, default=6)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=900.0)
    parser.add_argument("--keep", type=Path, default=None, help="keep the run's files here")
    args = parser.parse_args(argv)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix="assoc-cluster-", dir=args.keep))
        results = run(root, args.trials, args.apps, args.workers, args.seed, args.max_seconds)
    else:
        with tempfile.TemporaryDirectory(prefix="assoc-cluster-") as tmp:
            results = run(
                Path(tmp), args.trials, args.apps, args.workers, args.seed, args.max_seconds
            )
    report(results)
    bad = results.lost or results.half or results.qix_problems or not results.trials
    bad = bad or results.after_janitor
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
