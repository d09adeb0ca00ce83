"""Type stub of assoc._core, the engine core module (private: use the assoc package)."""

from __future__ import annotations

import collections.abc
import typing

import numpy
import numpy.typing
import typing_extensions

class _pybind11_type(type):
    """The metaclass of every class the module defines (pybind11_builtins.pybind11_type)."""

class Error(ValueError):
    pass

class Dual(metaclass=_pybind11_type):
    """
    A value with both a number and a text (such as a formatted date); it equals, and
    hashes as, its number, as the engine matches values by their numeric part.
    """
    def __eq__(self, arg0: object) -> bool: ...
    def __getstate__(self) -> tuple[int | float, str]: ...
    def __hash__(self) -> int: ...
    def __init__(self, number: int | float, text: str) -> None: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, arg0: tuple[int | float, str]) -> None: ...
    @property
    def number(self) -> int | float:
        """
        The numeric part: an int when it is an integer.
        """
    @property
    def text(self) -> str:
        """
        The text part.
        """

class ModelBuilder(metaclass=_pybind11_type):
    """
    Collects tables and builds a model.
    """
    def __init__(self) -> None: ...
    def add_columns(self, name: str, columns: dict[str, typing.Any]) -> None:
        """
        Adds a table from a dict of field name to values.
        """
    def add_csv(self, data: typing_extensions.Buffer, name: str) -> None:
        """
        Adds the table of a CSV file's bytes (UTF-8, header row, `,` `;` or TAB separated).
        """
    def add_qvd(self, data: typing_extensions.Buffer, name: str | None = None) -> None:
        """
        Adds the table of a QVD file (bytes or any contiguous buffer such as an mmap);
        `name` replaces the header's TableName.
        """
    def build(self) -> DataModel:
        """
        Finishes the model.
        """
    @property
    def table_count(self) -> int: ...

class DataModel(metaclass=_pybind11_type):
    """
    An app's loaded data: fields and tables.
    """
    def bit_width(self, table: str, field: str) -> int:
        """
        Bits per row of a column's packed index.
        """
    def column(self, table: str, field: str) -> list[typing.Any]:
        """
        A column's values in row order (None for NULL).
        """
    def column_indices(self, table: str, field: str) -> numpy.typing.NDArray[numpy.int64]:
        """
        A column's symbol indexes in row order (-1 for NULL).
        """
    def field_names(self) -> list[str]: ...
    def metadata(self) -> dict[str, typing.Any]:
        """
        DataModelMetadata as a dict.
        """
    def symbols(self, field: str) -> list[typing.Any]:
        """
        A field's distinct values in symbol order.
        """
    def table_fields(self, arg0: str) -> list[str]: ...
    def table_names(self) -> list[str]:
        """
        Data table names (synthetic key tables included), in load order.
        """
    def table_rows(self, arg0: str) -> int: ...
    def write_qvd(self, table: str) -> bytes:
        """
        One table as the bytes of a QVD file.
        """

class AssociativeModel(metaclass=_pybind11_type):
    """
    A model with its link graph, ready for selections.
    """
    def __init__(self, model: DataModel) -> None: ...

class Session(metaclass=_pybind11_type):
    """
    One user's selection state in an app.
    """
    def __init__(self, model: AssociativeModel, user: str = "") -> None: ...
    def clear(self) -> None:
        """
        Clears every selection.
        """
    def clear_field(self, field: str) -> None:
        """
        Clears one field's selection.
        """
    def close(self) -> None:
        """
        Ends the session.
        """
    def counts(self, field: str) -> dict[str, typing.Any]:
        """
        How many values of a field are in each state.
        """
    def indices(self, field: str, state: str) -> numpy.typing.NDArray[numpy.int64]:
        """
        Symbol indexes of a field's values in one state, in order.
        """
    def possible_rows(self, table: str) -> int:
        """
        How many rows of a table are possible.
        """
    def select(self, field: str, values: collections.abc.Iterable[typing.Any]) -> None:
        """
        Replaces a field's selection; values the field lacks are ignored.
        """
    def selections(self) -> dict[str, typing.Any]:
        """
        The selected values per field, in symbol order.
        """
    def state(self, field: str) -> dict[str, typing.Any]:
        """
        Values of a field by state, each list in symbol order.
        """
    @property
    def closed(self) -> bool: ...
    @property
    def user(self) -> str: ...

def cache_info() -> dict[str, typing.Any]:
    """
    Entries, bytes and byte limit of the engine's result cache.
    """

def clear_cache() -> None:
    """
    Empties the engine's result cache.
    """

def engine_counters() -> dict[str, typing.Any]:
    """
    The engine's own counters: selections, cache, sessions and users.
    """

def logical_cores() -> int:
    """
    Logical cores of this machine.
    """

def memory_blocks() -> dict[str, int]:
    """
    The engine's big arrays (1 MiB and up): blocks mapped from the system, requests served
    from freed blocks kept for reuse, blocks given back, and the bytes kept now and at most.
    """

def set_memory_blocks_kept(bytes: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Sets the most bytes of freed big blocks kept for reuse (0: none); gives back any over it.
    """

def set_cache_limit(bytes: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Bytes of results the engine's result cache may hold (0 turns it off).
    """

def set_threads(n: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Threads heavy work may use (0 = all logical cores).
    """

def threads() -> int:
    """
    Threads heavy work uses now.
    """

def total_memory() -> int:
    """
    Physical memory of this machine, in bytes.
    """
