"""Terminal output for `assoc` commands: rich tables, progress bars only on a terminal, and the
one-line error every command fails with."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)


class CommandFailed(Exception):
    """A command cannot go on; its message is the one line the user reads."""


def stdout_console() -> Console:
    """The console results are printed on (tables; never progress)."""
    return Console(file=sys.stdout, soft_wrap=True)


def stderr_console() -> Console:
    """The console progress bars are drawn on, so that piped results stay clean."""
    return Console(file=sys.stderr)


class Step:
    """One long step's progress: bytes moved, or a spinner when the size is unknown."""

    def __init__(self, progress: Progress | None, task: Any) -> None:
        self._progress = progress
        self._task = task

    def advance(self, amount: int) -> None:
        """Counts `amount` more bytes done."""
        if self._progress is not None:
            self._progress.advance(self._task, amount)


@contextlib.contextmanager
def progress_step(description: str, total: int | None = None) -> Iterator[Step]:
    """A progress bar for one step on stderr when it is a terminal; nothing otherwise.

    With `total` (bytes) it shows a bar, size and speed; without, a spinner and the time."""
    console = stderr_console()
    if not console.is_terminal:
        yield Step(None, None)
        return
    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), DownloadColumn(), TransferSpeedColumn()]
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield Step(progress, task)


def fail_message(command: str, message: str) -> str:
    """The one line a failed command prints: `assoc <command>: <message>`."""
    text = " ".join(str(message).split())
    return f"assoc {command}: {text}"
