"""What every compare_* benchmark hands to run_all.py: a list of measures, each with all its
times, its peers' times, and the bytes the engine path must read (its floor).

A measure's ratio is assoc's best time over the best peer's best time. Its noise is the
robust spread of the per-round ratios (rounds run every contender once, in turn). Its floor is the
bytes it must read divided by the memory bandwidth run_all measures in the same run; the
bytes come from the engine's own sizes (bit widths of the packed indexes, the byte_size of
fields and tables in the app's metadata, file sizes), never from guesses.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

Run = tuple[Callable[[], Any], Callable[[], None] | None]  # timed call, untimed set-up


def interleaved_times(runs: dict[str, Run], repeat: int) -> dict[str, list[float]]:
    """Every wall time (seconds) of each run over `repeat` rounds; each round runs every one
    once, in turn, so that all see the same load from other processes."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, (fn, before) in runs.items():
            if before is not None:
                before()
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return times


@dataclass
class Measure:
    """One timed engine path beside its peers.

    `times` are assoc's seconds, one per round; `peers` the same rounds of each peer (a
    "peer" may be another assoc path the goal names, e.g. App.from_csv for a script load).
    `floor_bytes` is what the path must read; `floor_what` says which bytes those are."""

    name: str
    what: str
    times: list[float]
    peers: dict[str, list[float]] = field(default_factory=dict)
    floor_bytes: int | None = None
    floor_what: str = ""
    goal: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The measure with its derived figures (best times, ratio, noise)."""
        out = asdict(self)
        out["best_s"] = min(self.times)
        if self.peers:
            bests = {k: min(v) for k, v in self.peers.items()}
            peer = min(bests, key=lambda k: bests[k])
            out["peer"] = peer
            out["peer_best_s"] = bests[peer]
            out["ratio"] = min(self.times) / bests[peer]
            rounds = ratio_rounds(self.times, self.peers[peer])
            out["ratio_rounds"] = rounds
            out["ratio_noise"] = robust_spread(rounds)
        else:
            out["peer"] = None
            out["ratio"] = None
            out["ratio_rounds"] = []
            out["ratio_noise"] = None
        out["time_noise"] = robust_spread(self.times)
        return out


def ratio_rounds(ours: list[float], theirs: list[float]) -> list[float]:
    """assoc / peer in each round (the rounds ran side by side); if the counts differ (a peer
    measured fewer times), each of ours against the peer's best."""
    if len(ours) == len(theirs):
        return [a / b for a, b in zip(ours, theirs, strict=True)]
    best = min(theirs)
    return [a / best for a in ours]


def robust_spread(values: list[float]) -> float:
    """The run-to-run noise of `values` relative to their median: 1.4826 x the median absolute
    deviation (a standard deviation that one stray round, e.g. a peer's warm-up, cannot blow
    up) over the median; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mid = statistics.median(values)
    mad = statistics.median(abs(v - mid) for v in values)
    return 1.4826 * mad / mid if mid else 0.0


# ---- bytes a path must read, from the engine's own sizes ---------------------------------


def _model(app: Any) -> Any:
    """The _core.DataModel behind an App (or the model itself)."""
    return getattr(app, "_impl", app)


def column_bytes(app: Any, table: str, fields: Iterable[str]) -> int:
    """Bytes of the packed indexes of `fields` in `table`: rows x the column's bit width,
    as the engine packs it (the table's byte_size is their sum plus word padding)."""
    model = _model(app)
    rows = model.table_rows(table)
    return sum((rows * model.bit_width(table, f) + 7) // 8 for f in fields)


def symbol_bytes(app: Any, fields: Iterable[str]) -> int:
    """Bytes of the symbol tables of `fields` (their byte_size in the app's metadata)."""
    wanted = set(fields)
    md = _model(app).metadata()
    found = {f["name"]: int(f["byte_size"]) for f in md["fields"] if f["name"] in wanted}
    missing = wanted - found.keys()
    assert not missing, f"no such fields: {sorted(missing)}"
    return sum(found.values())


def model_bytes(app: Any) -> int:
    """Bytes of every user table's indexes and every user field's symbols (metadata)."""
    md = _model(app).metadata()
    return sum(int(t["byte_size"]) for t in md["tables"] if not t["is_system"]) + sum(
        int(f["byte_size"]) for f in md["fields"] if not f["is_system"]
    )
