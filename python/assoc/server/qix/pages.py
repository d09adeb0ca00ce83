"""Data pages (NxPage): reading them from requests, checking their size, cutting them to data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from assoc.server.qix.rpc import INVALID_PARAMETERS, PAGES_TOO_LARGE, RawJson, RpcError

MAX_CELLS = 10_000
MAX_PAGES = 1_000


@dataclass(frozen=True)
class Page:
    """A rectangle of cells: first row and column, width and height."""

    top: int
    left: int
    width: int
    height: int


def parse_page(raw: Any) -> Page:
    """An NxPage; missing members are 0, negative or non-integer ones are errors (8)."""
    if not isinstance(raw, dict):
        raise RpcError(INVALID_PARAMETERS, "qPages", "a page must be an object")
    values = []
    for name in ("qTop", "qLeft", "qWidth", "qHeight"):
        value = raw.get(name, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise RpcError(INVALID_PARAMETERS, name, "must be a whole number, at least 0")
        values.append(value)
    return Page(*values)


def parse_pages(raw: Any, min_width: int = 0) -> list[Page]:
    """Pages of a request or qInitialDataFetch, checked against the 10,000-cell and the
    1,000-page limits (7009). Cells are counted as asked (width x height); what a page reads is
    cut to the data first (page_area), so the work is bounded by both limits."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RpcError(INVALID_PARAMETERS, "qPages", "must be a list of pages")
    if len(raw) > MAX_PAGES:
        raise RpcError(PAGES_TOO_LARGE, "qPages", f"{len(raw)} pages asked, at most {MAX_PAGES}")
    pages = [parse_page(p) for p in raw]
    cells = sum(max(p.width, min_width) * p.height for p in pages)
    if cells > MAX_CELLS:
        raise RpcError(PAGES_TOO_LARGE, "qPages", f"{cells} cells asked, at most {MAX_CELLS}")
    return pages


def page_area(page: Page, rows: int, columns: int) -> tuple[range, range]:
    """The row and column ranges of `page` that exist in a `rows` x `columns` table."""
    top = min(page.top, rows)
    left = min(page.left, columns)
    return range(top, min(rows, top + page.height)), range(left, min(columns, left + page.width))


def data_page(rows_json: list[str], rows: range, cols: range) -> dict[str, Any]:
    """NxDataPage of rows (each the JSON text of its cells) already cut to `rows` x `cols`."""
    return {
        "qMatrix": RawJson("[" + ",".join(rows_json) + "]", rows_json),
        "qTails": [{"qUp": 0, "qDown": 0}],
        "qArea": {
            "qLeft": cols.start,
            "qTop": rows.start,
            "qWidth": len(cols) if rows else 0,
            "qHeight": len(rows),
        },
    }


def rows_keyed(codes: list[np.ndarray], keys: set[tuple[int, ...]]) -> np.ndarray | None:
    """The rows of a cube (its dimensions' `codes`, one array each) whose codes could form
    one of `keys` (a page's: the cube may hold millions of rows, a page a few thousand), found
    with np.isin per dimension; None for a small cube, whose every row is read as cheaply."""
    if not codes or len(codes[0]) <= 4 * len(keys) + 1024:
        return None
    keep = np.ones(len(codes[0]), dtype=bool)
    for i, column in enumerate(codes):
        keep &= np.isin(column, np.fromiter({key[i] for key in keys}, dtype=np.int64))
    return np.flatnonzero(keep)
