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
    def set_interpretation(self, variables: dict[str, str]) -> None:
        """
        The number interpretation variables (DateFormat, FirstWeekDay, …) the model keeps
        for its charts.
        """
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
    def add_qvd_table(self, table: QvdTable, name: str | None = None) -> None:
        """
        Adds a table a QvdStream read; `name` replaces the header's TableName.
        """
    def charge_cpu(self, ns: typing.SupportsInt) -> None:
        """
        Adds CPU time spent on the model outside the builder (a script's statements) to its
        reload time.
        """
    def build(self) -> DataModel:
        """
        Finishes the model.
        """
    @property
    def table_count(self) -> int: ...

class QvdTable(metaclass=_pybind11_type):
    """
    A table read by a QvdStream, for ModelBuilder.add_qvd_table.
    """
    @property
    def name(self) -> str:
        """
        The header's TableName.
        """

class QvdStream(metaclass=_pybind11_type):
    """
    A QVD file parsed while its bytes arrive.
    """
    def __init__(
        self,
        size: typing.SupportsInt | typing.SupportsIndex,
        file: str | None = None,
        sync: bool = False,
    ) -> None:
        """
        A stream of a file of `size` bytes (its declared length), also written to the new
        file `file` when given (and flushed to disk by finish() with `sync`).
        """
    def feed(self, data: typing_extensions.Buffer) -> None:
        """
        Appends the next bytes (any contiguous buffer).
        """
    def finish(self) -> QvdTable:
        """
        The table of the bytes fed, as add_qvd reads them (the same errors); once only.
        """
    @property
    def received(self) -> int:
        """
        Bytes fed so far.
        """
    @property
    def table_name(self) -> str | None:
        """
        The header's TableName once the header is read, else None.
        """

class CpuAccount(metaclass=_pybind11_type):
    """
    CPU time that worker threads spend on a job, in nanoseconds.
    """
    def __init__(self) -> None: ...
    @property
    def ns(self) -> int: ...

class ScriptTable(metaclass=_pybind11_type):
    """
    A table a load script holds between statements.
    """
    def __init__(self, name: str, rows: typing.SupportsInt) -> None:
        """
        An empty table of `rows` rows; add_column adds its columns.
        """
    @staticmethod
    def read_csv(
        data: typing_extensions.Buffer,
        name: str,
        cpu: CpuAccount | None = None,
        quoting: str = "rfc4180",
    ) -> ScriptTable:
        """
        The table of a CSV file's bytes (quoting: 'rfc4180', 'standard' or 'none').
        """
    @staticmethod
    def read_qvd(
        data: typing_extensions.Buffer, name: str, cpu: CpuAccount | None = None
    ) -> ScriptTable:
        """
        The table of a QVD file's bytes, named `name`.
        """
    def add_column(
        self,
        name: str,
        numbers: numpy.typing.ArrayLike,
        texts: collections.abc.Sequence[str | None] | None,
        codes: numpy.typing.ArrayLike,
        cpu: CpuAccount | None = None,
    ) -> None:
        """
        Adds a column whose row r holds value codes[r].
        """
    def add_mapped_column(
        self,
        name: str,
        numbers: numpy.typing.ArrayLike,
        texts: collections.abc.Sequence[str | None] | None,
        source: ScriptTable,
        source_column: typing.SupportsInt,
        cpu: CpuAccount | None = None,
    ) -> None:
        """
        Adds a column with the rows of a source column whose symbol k becomes value k.
        """
    def symbols(
        self, column: typing.SupportsInt
    ) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.uint32], list[str]]:
        """
        A column's symbols: (numbers with NaN for none, indexes of the symbols with a text,
        those texts).
        """
    def codes(
        self, column: typing.SupportsInt, cpu: CpuAccount | None = None
    ) -> numpy.typing.NDArray[numpy.int32]:
        """
        A column's symbol index per row, -1 for NULL.
        """
    def number_candidates(
        self, column: typing.SupportsInt, allowed: str, cpu: CpuAccount | None = None
    ) -> tuple[numpy.typing.NDArray[numpy.uint32], list[str]]:
        """
        The column's symbols that are text without a number, made only of `allowed` characters
        and holding a digit: (symbol indexes, texts).
        """
    def set_numbers(
        self,
        column: typing.SupportsInt,
        at: numpy.typing.ArrayLike,
        numbers: numpy.typing.ArrayLike,
        cpu: CpuAccount | None = None,
    ) -> None:
        """
        Gives the symbols at `at` a number beside their text (equal ones merge, rows follow).
        """
    def select(self, columns: collections.abc.Sequence[tuple[int, str]]) -> ScriptTable:
        """
        A table of some columns (by position, each with a new name), sharing no state.
        """
    def add_to(self, builder: ModelBuilder) -> None:
        """
        Moves the table into a model builder (the table is empty afterwards).
        """
    @staticmethod
    def read_arrow(
        stream: typing.Any, name: str, cpu: CpuAccount | None = None
    ) -> tuple[ScriptTable, list[str]]:
        """
        The table of an arrow_array_stream capsule, and per column "date", "timestamp" or ""
        (whose day-number symbols want set_texts).
        """
    def set_texts(
        self,
        column: typing.SupportsInt,
        texts: collections.abc.Sequence[str],
        type: str,
        fmt: str,
        cpu: CpuAccount | None = None,
    ) -> None:
        """
        Gives each numeric symbol of a column a text (dates: their formatted day numbers) and the
        column a number format (type DATE or TIMESTAMP, and its format).
        """
    @property
    def name(self) -> str: ...
    @name.setter
    def name(self, value: str) -> None: ...
    @property
    def rows(self) -> int: ...
    @property
    def fields(self) -> list[str]: ...

class DataModel(metaclass=_pybind11_type):
    """
    An app's loaded data: fields and tables.
    """
    @property
    def interpretation_variables(self) -> dict[str, str]:
        """
        The number interpretation variables the model keeps (those its script set).
        """
    def arrow(self, table: str, duals: str) -> ArrowExport:
        """
        A table's rows for Arrow consumers.
        """
    def bit_width(self, table: str, field: str) -> int:
        """
        Bits per row of a column's packed index.
        """
    def column(self, table: str, field: str) -> list[typing.Any]:
        """
        A column's values per row (None for NULL), as loaded (via synthetic keys).
        """
    def column_indices(self, table: str, field: str) -> numpy.typing.NDArray[numpy.int64]:
        """
        A column's symbol indexes per row (-1 for NULL), as loaded (via synthetic keys).
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
    def symbol_texts(self, field: str) -> tuple[list[str], numpy.typing.NDArray[numpy.float64]]:
        """
        A field's symbols' texts and numbers, as (list[str], float64 array) in symbol order.
        """
    def source_fields(self, table: str) -> list[str]:
        """
        The fields a table was loaded with, in load order.
        """
    def table_fields(self, table: str) -> list[str]:
        """
        A table's columns in the model (synthetic keys in place of their parts).
        """
    def table_is_synthetic(self, table: str) -> bool:
        """
        True for a synthetic key table ($Syn N Table).
        """
    def table_names(self) -> list[str]:
        """
        Data table names (synthetic key tables included), in load order.
        """
    def table_rows(self, arg0: str) -> int: ...
    def write_qvd(
        self,
        table: str,
        field_tags: collections.abc.Mapping[str, collections.abc.Sequence[str]] = ...,
        field_comments: collections.abc.Mapping[str, str] = ...,
        table_comment: str | None = None,
        field_untags: collections.abc.Mapping[str, collections.abc.Sequence[str]] = ...,
    ) -> bytes:
        """
        One table as the bytes of a QVD file; a load script's tags (after each field's own, less
        those it untagged) and comments (in place of the model's) go into its header.
        """

class AssociativeModel(metaclass=_pybind11_type):
    """
    A model with its link graph, ready for selections.
    """
    def __init__(self, model: DataModel) -> None: ...
    def symbols_with_texts(
        self, field: str, texts: collections.abc.Sequence[str]
    ) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64]]:
        """
        The symbol indexes, in order, whose text is one of `texts` (a bare number's: canonical),
        and beside them the position in `texts` of the text each has.
        """

class RowMask(metaclass=_pybind11_type):
    """
    Section access: the rows one user's reduction leaves, shared by their sessions.
    """
    def __init__(
        self, model: AssociativeModel, reduction: typing.Mapping[str, typing.Sequence[int]]
    ) -> None:
        """
        The mask of a reduction: per field, the symbol indexes it keeps (a field absent is whole).
        """
    def cardinal(self, field: str) -> int:
        """
        How many of a field's values are on the rows the mask keeps.
        """
    def field_byte_size(self, field: str) -> int:
        """
        Bytes of a symbol table holding only the field's values on the kept rows.
        """
    def indices(self, field: str) -> numpy.typing.NDArray[numpy.int64]:
        """
        The symbol indexes of a field on the rows the mask keeps, in order.
        """
    def possible_rows(self, table: str) -> int:
        """
        How many rows of a table the mask keeps.
        """
    def rows(self, table: str) -> numpy.typing.NDArray[numpy.int64] | None:
        """
        The row positions of a table the mask keeps, in order (None: every row).
        """
    def table_byte_size(self, table: str, fields: collections.abc.Sequence[str]) -> int:
        """
        Bytes of the packed index data of the named columns of a table, for only the kept rows.
        """

class Session(metaclass=_pybind11_type):
    """
    One user's selection state in an app.
    """
    def __init__(
        self, model: AssociativeModel, user: str = "", mask: RowMask | None = None
    ) -> None: ...
    def add_state(self, name: str) -> None:
        """
        Adds an alternate state with no selection.
        """
    def clear(self, state: str = "$") -> None:
        """
        Clears every selection of a state.
        """
    def clear_field(self, field: str, state: str = "$") -> None:
        """
        Clears one field's selection.
        """
    def close(self) -> None:
        """
        Ends the session.
        """
    def counts(self, field: str, state: str = "$") -> dict[str, typing.Any]:
        """
        How many values of a field are in each state.
        """
    def hypercube(
        self,
        dimensions: list[str],
        measures: list[str],
        sort: list[tuple[str, str]],
        suppress_zero: bool,
        suppress_missing: bool,
        state: str = "$",
        pivot_top: list[int] | None = None,
    ) -> Hypercube:
        """
        The hypercube of dimensions and measures under one state's selections; `pivot_top`: a pivot
        table's dimensions on top, by position (the inter-record functions read its columns and
        rows), None for other tables.
        """
    def indices(
        self, field: str, state: str, in_state: str = "$"
    ) -> numpy.typing.NDArray[numpy.int64]:
        """
        Symbol indexes of a field's values in one state, in order.
        """
    def state_codes(
        self, field: str, show_alternatives: bool, in_state: str = "$"
    ) -> numpy.typing.NDArray[numpy.int8]:
        """
        Each of a field's values' state as a code, in symbol order: selected 0, possible 1,
        alternative 2 (4 unless shown), selected but excluded 3, excluded 4.
        """
    def arrow_list_page(
        self,
        field: str,
        codes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        states: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        state_names: collections.abc.Sequence[str],
        names: collections.abc.Sequence[str],
        duals: str,
    ) -> ArrowExport:
        """
        A list object's page for Arrow consumers, columns `names`: the field's values `codes`
        (symbol indexes, in page order), each one's symbol index and
        its state (`state_names[states[i]]`).
        """
    def arrow_table(self, table: str, duals: str) -> ArrowExport:
        """
        A table's possible rows under the session's selections, for Arrow consumers.
        """
    def possible_rows(self, table: str, state: str = "$") -> int:
        """
        How many rows of a table are possible.
        """
    def search(self, field: str, state: str = "$") -> str:
        """
        The search text of a field's selection ("" when no search made it).
        """
    def selected(self, field: str, state: str = "$") -> numpy.typing.NDArray[numpy.int64]:
        """
        The symbol indexes selected in a field, ascending, as the selection holds them.
        """
    def set_search(self, field: str, text: str, state: str = "$") -> None:
        """
        Records the search text that made a field's present selection.
        """
    def remove_state(self, name: str) -> None:
        """
        Removes an alternate state.
        """
    def select(
        self, field: str, values: collections.abc.Iterable[typing.Any], state: str = "$"
    ) -> None:
        """
        Replaces a field's selection; values the field lacks are ignored.
        """
    def select_indices(
        self,
        field: str,
        indices: typing.Annotated[numpy.typing.ArrayLike, numpy.int64],
        state: str = "$",
    ) -> None:
        """
        Replaces a field's selection by symbol indexes; indexes out of range are ignored.
        """
    def selections(self, state: str = "$") -> dict[str, typing.Any]:
        """
        The selected values per field, in symbol order.
        """
    def state(self, field: str, state: str = "$") -> dict[str, typing.Any]:
        """
        Values of a field by state, each list in symbol order.
        """
    def state_names(self) -> list[str]:
        """
        The default state '$', then the alternate states by name.
        """
    @property
    def closed(self) -> bool: ...
    @property
    def user(self) -> str: ...

class Hypercube(metaclass=_pybind11_type):
    """
    A computed hypercube: dimension tuples and measure values.
    """
    def __len__(self) -> int: ...
    def arrow(self, duals: str) -> ArrowExport:
        """
        The rows for Arrow consumers (an ArrowExport).
        """
    def array(
        self, column: typing.SupportsInt | typing.SupportsIndex
    ) -> numpy.typing.NDArray[numpy.float64]:
        """
        A column as float64: measures (NaN for NULL), or a dimension's numbers.
        """
    def calculated_source(self, dimension: typing.SupportsInt | typing.SupportsIndex) -> typing.Any:
        """
        A calculated dimension's one field and its symbols' result codes (-1: NULL), or None.
        """
    def codes(
        self, dimension: typing.SupportsInt | typing.SupportsIndex
    ) -> numpy.typing.NDArray[numpy.int64]:
        """
        Each row's symbol index of a dimension (-1 for None).
        """
    def dimension_symbols(
        self, dimension: typing.SupportsInt | typing.SupportsIndex
    ) -> list[typing.Any]:
        """
        The values codes() indexes: the field's symbols, or a calculated dimension's.
        """
    def dimension_symbol_texts(
        self, dimension: typing.SupportsInt | typing.SupportsIndex
    ) -> tuple[list[str], numpy.typing.NDArray[numpy.float64]]:
        """
        dimension_symbols' texts and numbers, as (list[str], float64 array).
        """
    def dimension_symbols_key(
        self, dimension: typing.SupportsInt | typing.SupportsIndex
    ) -> tuple[int, int]:
        """
        (serial of the model, field) naming dimension_symbols' values: equal keys, equal values.
        """
    def rows(
        self,
        top: typing.SupportsInt | typing.SupportsIndex,
        height: typing.SupportsInt | typing.SupportsIndex,
    ) -> list[tuple[typing.Any, ...]]:
        """
        Rows [top, top+height) as tuples.
        """
    def totals(self) -> list[typing.Any]:
        """
        Each measure over every possible record (None for NULL).
        """
    @property
    def dimensions(self) -> list[str]: ...
    @property
    def measures(self) -> list[str]: ...

class Interpretation(metaclass=_pybind11_type):
    """
    An app's number interpretation variables: how texts read as numbers and dates, and
    how numbers and dates are written.
    """
    def __init__(self, variables: dict[str, str]) -> None: ...
    @property
    def thousand(self) -> str: ...
    @property
    def decimal(self) -> str: ...
    @property
    def money_thousand(self) -> str: ...
    @property
    def money_decimal(self) -> str: ...
    @property
    def money_format(self) -> str: ...
    @property
    def currency(self) -> str: ...
    @property
    def date_format(self) -> str: ...
    @property
    def time_format(self) -> str: ...
    @property
    def timestamp_format(self) -> str: ...
    @property
    def first_week_day(self) -> int: ...
    @property
    def broken_weeks(self) -> bool: ...
    @property
    def reference_day(self) -> int: ...
    @property
    def first_month_of_year(self) -> int: ...
    @property
    def month_names(self) -> list[str]: ...
    @property
    def long_month_names(self) -> list[str]: ...
    @property
    def day_names(self) -> list[str]: ...
    @property
    def long_day_names(self) -> list[str]: ...
    def read(self, text: str) -> float | None:
        """
        The number a text stands for (number, money, date, time), or None.
        """
    def read_date(self, text: str, format: str) -> float | None:
        """
        A date/time text in a format as a day number, or None.
        """
    def format_number(
        self, value: typing.SupportsFloat, format: str = "", decimal: str = "", thousand: str = ""
    ) -> str:
        """
        A number in a #,##0.00-style format (its plain text without one).
        """
    def format_date(self, serial: typing.SupportsFloat, format: str = "") -> str:
        """
        A day number in a date/time format (DateFormat without one).
        """

def text_order(
    texts: list[str], ties: list[str] | None = None
) -> numpy.typing.NDArray[numpy.int64]:
    """
    The positions of `texts` in their order (code point by code point, a shorter text before
    the longer ones it begins); equal texts by the texts of `ties` at their positions, then
    by position.
    """

def distinct_codes(
    codes: numpy.typing.ArrayLike, size: typing.SupportsInt | typing.SupportsIndex
) -> int:
    """
    How many distinct codes `codes` holds, the negative ones (NULL, Others) counting as one;
    `size`, the number of values they index, sizes the bitmap.
    """

def number_facts(
    values: numpy.typing.ArrayLike, first: typing.SupportsInt | typing.SupportsIndex
) -> tuple[int, float, float, int]:
    """
    Of the values that are not NaN: how many, the least and the greatest (NaN when none), and
    the longest text (as lists show numbers) among the first `first` of them.
    """

def page_rows_json(
    index: numpy.typing.ArrayLike,
    columns: list[typing.Any],
    null_prefix: str,
    state_names: collections.abc.Sequence[str],
    null_state: typing.SupportsInt | typing.SupportsIndex,
) -> list[str]:
    """
    The JSON text of each row `index` names (a data page's qMatrix rows): per column, a
    dimension's cell (codes, states, prefixes: as cells_json writes it, `null_state` for NULL)
    or a measure's (its values: as measure_cells_json writes it).
    """

def read_plain(text: str, decimal: str = ".", thousand: str = "") -> float | None:
    """
    A number written with a decimal separator and optional thousand groups, or None.
    """

def scalar_functions() -> list[tuple[str, int, int]]:
    """
    Every scalar function of the engine: (name, fewest arguments, most arguments; 255: any).
    """

def call_function(
    name: str,
    args: list[typing.Any],
    n: typing.SupportsInt | typing.SupportsIndex,
    interpretation: Interpretation,
) -> tuple[numpy.typing.NDArray[numpy.float64], list[str | None] | None]:
    """
    Calls a scalar function over n rows: each argument a (numbers, texts or None) pair
    of n values or of one; answers (numbers, texts or None).
    """

def apply_operator(
    op: str,
    args: list[typing.Any],
    n: typing.SupportsInt | typing.SupportsIndex,
    interpretation: Interpretation,
) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.object_] | None]:
    """
    Applies an operator (+ - * / & = <> < <= > >= like precedes follows and or xor; - and
    not of one operand) over n rows, as charts apply it: each operand a (numbers, texts or
    None) pair of n values or of one; answers (numbers, texts as an object array, or None).
    """

def cache_info() -> dict[str, typing.Any]:
    """
    Entries, bytes and byte limit of the engine's result cache.
    """

def cells_json(
    prefixes: list[str],
    null_prefix: str,
    codes: numpy.typing.ArrayLike,
    states: numpy.typing.ArrayLike,
    state_names: collections.abc.Sequence[str],
    wrap: bool,
) -> list[str]:
    """
    Each cell's JSON: the prefix of its code (negative: `null_prefix`), the name of its state
    (an index into `state_names`) and the closing quote and brace; `wrap`: each in a row.
    """

def clear_cache() -> None:
    """
    Empties the engine's result cache.
    """

def engine_counters() -> dict[str, typing.Any]:
    """
    The engine's own counters: selections, cache, sessions and users.
    """

def name_this_thread(name: str) -> None:
    """
    Names the calling thread for the system (Linux: 15 bytes at most), as top -H shows it.
    """

def logical_cores() -> int:
    """
    Logical cores of this machine.
    """

def measure_cells_json(
    values: numpy.typing.ArrayLike,
) -> list[str]:
    """
    Each value's measure cell (NxCell in state L) as compact JSON, as a QIX data page holds it.
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

class ArrowExport(metaclass=_pybind11_type):
    """
    Columns that Arrow consumers read through the PyCapsule interface
    (pyarrow.table(x), polars.DataFrame(x), DuckDB).
    """
    def __arrow_c_schema__(self) -> typing.Any:
        """
        The schema (a struct of the columns) as an arrow_schema capsule.
        """
    def __arrow_c_stream__(self, requested_schema: typing.Any = None) -> typing.Any:
        """
        The rows as an arrow_array_stream capsule (one batch).
        """
    @property
    def column_names(self) -> list[str]: ...
    @property
    def num_rows(self) -> int: ...

class JsonDelta(metaclass=_pybind11_type):
    """
    Snapshots and JSON-Patch operations of delta answers (assoc.server.qix.delta).
    """
    def __init__(self, raw_type: type) -> None: ...
    def snapshot(self, value: typing.Any) -> tuple[typing.Any, int]:
        """
        (snapshot, approximate JSON size) of a value: its dicts, lists and tuples copied.
        """
    def diff(
        self, old: typing.Any, new: typing.Any
    ) -> tuple[list[typing.Any], typing.Any, int] | None:
        """
        (operations, snapshot, size) turning snapshot `old` into `new`; None when the whole
        value cannot be set over what the client keeps.
        """
    def kind(self, value: typing.Any) -> str:
        """
        The kind enigma.js keeps: 'object', 'object_' (members `_…`/`$$…` it keeps), 'array'
        or 'value'.
        """
    def root_fits(self, held: str | None, new: typing.Any) -> bool:
        """
        Whether enigma.js can set a whole value to `new` over one of kind `held` (None: nothing
        kept).
        """
