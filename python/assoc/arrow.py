"""Arrow in and out through the PyCapsule interface (`__arrow_c_stream__`): tables from any
Arrow producer (pyarrow, polars, DuckDB, pandas), and tables and hypercubes for any consumer."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

from assoc import _core
from assoc._core import ArrowExport

if TYPE_CHECKING:
    from assoc.script.numbers import Interpretation

__all__ = ["DUALS", "ArrowExport", "Duals", "check_duals", "is_arrow_stream", "read_arrow"]

Duals = Literal["number", "text", "struct"]
DUALS = ("number", "text", "struct")


def is_arrow_stream(obj: object) -> bool:
    """True when `obj` speaks the Arrow PyCapsule stream interface."""
    return callable(getattr(obj, "__arrow_c_stream__", None))


def check_duals(duals: str) -> str:
    """Checks a `duals` option: "number", "text" or "struct"."""
    if duals not in DUALS:
        raise _core.Error(f'duals must be "number", "text" or "struct", not {duals!r}')
    return duals


def read_arrow(
    obj: Any,
    name: str,
    interp: Interpretation | None = None,
    cpu: _core.CpuAccount | None = None,
) -> _core.ScriptTable:
    """The table of an object with `__arrow_c_stream__`; dates and timestamps become duals of
    Qlik's day number and their text in the DateFormat / TimestampFormat of `interp`."""
    if not is_arrow_stream(obj):
        raise _core.Error(
            f"table {name!r}: {type(obj).__name__} has no __arrow_c_stream__ "
            "(give a pyarrow Table, a polars DataFrame, a DuckDB relation or a pandas DataFrame)"
        )
    native, temporal = _core.ScriptTable.read_arrow(obj.__arrow_c_stream__(), name, cpu)
    if any(temporal):
        if interp is None:
            from assoc.script.numbers import DEFAULTS, Interpretation

            interp = Interpretation(DEFAULTS)
        for i, kind in enumerate(temporal):
            if not kind:
                continue
            fmt = interp.date_format if kind == "date" else interp.timestamp_format
            numbers, _, _ = native.symbols(i)
            texts = [interp.format_date(x, fmt) for x in numbers.tolist()]
            native.set_texts(i, texts, "DATE" if kind == "date" else "TIMESTAMP", fmt, cpu)
    return native


def build_model(tables: dict[str, Any]) -> _core.DataModel:
    """A model of {name: Arrow stream object} (the work of App.from_arrow)."""
    builder = _core.ModelBuilder()
    cpu = _core.CpuAccount()
    start = time.thread_time_ns()
    for name, obj in tables.items():
        read_arrow(obj, name, None, cpu).add_to(builder)
    builder.charge_cpu(cpu.ns + time.thread_time_ns() - start)
    return builder.build()
