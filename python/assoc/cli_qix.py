"""A small QIX client for `assoc query APPID`: JSON-RPC 2.0 over one WebSocket — OpenDoc,
Field.SelectValues, CreateSessionObject with a qHyperCubeDef, GetLayout and GetHyperCubeData."""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

from assoc.cli_console import CommandFailed

PAGE_CELLS = 10_000  # the engine's limit of cells per data call


class QixConnection:
    """One QIX session over a WebSocket; `call` sends a request and waits for its answer."""

    def __init__(self, url: str, token: str = "") -> None:
        from websockets.exceptions import InvalidStatus, WebSocketException
        from websockets.sync.client import connect

        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._stack = contextlib.ExitStack()
        try:
            self._socket = self._stack.enter_context(
                connect(url, additional_headers=headers, max_size=None)
            )
        except InvalidStatus as exc:
            raise CommandFailed(f"{url}: the service refused the WebSocket ({exc})") from None
        except (OSError, WebSocketException) as exc:
            raise CommandFailed(f"cannot reach {url}: {exc}") from None
        self._next_id = 1

    def close(self) -> None:
        """Closes the socket (the session's selections end with it)."""
        self._stack.close()

    def __enter__(self) -> QixConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, handle: int, method: str, *params: Any) -> dict[str, Any]:
        """The result of `method` on `handle`; CommandFailed with the engine's error."""
        request_id = self._next_id
        self._next_id += 1
        self._socket.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "handle": handle,
                    "method": method,
                    "params": list(params),
                }
            )
        )
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") != request_id:
                continue  # notices such as OnConnected and change lists
            if "error" in message:
                error = message["error"]
                raise CommandFailed(
                    f"{method}: {error.get('message', '')} {error.get('parameter', '')} "
                    f"(QIX error {error.get('code')})"
                )
            result: dict[str, Any] = message["result"]
            return result


def field_values(text: str) -> list[dict[str, Any]]:
    """qFieldValues for a value typed on the command line: its text, and its number when it
    reads as one (so `5.50` finds 5.5, as the embedded engine's matching does)."""
    values: list[dict[str, Any]] = [{"qText": text, "qIsNumeric": False}]
    try:
        number = float(text)
    except ValueError:
        return values
    if math.isfinite(number):
        values.append({"qText": text, "qIsNumeric": True, "qNumber": number})
    return values


def select(qix: QixConnection, doc: int, field: str, texts: list[str]) -> None:
    """Selects values of a field; CommandFailed when some of them are not the field's."""
    handle = qix.call(doc, "GetField", field)["qReturn"]["qHandle"]
    qix.call(handle, "SelectValues", [v for t in texts for v in field_values(t)], False)
    # SelectValues ignores unknown values: a list object tells how many were selected.
    listbox = {
        "qInfo": {"qType": "assoc-query-check"},
        "qListObjectDef": {"qDef": {"qFieldDefs": [field]}, "qInitialDataFetch": []},
    }
    check = qix.call(doc, "CreateSessionObject", listbox)["qReturn"]
    counts = qix.call(check["qHandle"], "GetLayout")["qLayout"]["qListObject"]
    selected = counts["qDimensionInfo"]["qStateCounts"]
    found = selected["qSelected"] + selected.get("qSelectedExcluded", 0)
    qix.call(doc, "DestroySessionObject", check["qGenericId"])
    if found < len(set(texts)):
        given = ", ".join(repr(t) for t in texts)
        raise CommandFailed(f"field {field!r} lacks some of the values {given}")


def cell_value(cell: dict[str, Any], is_measure: bool) -> Any:
    """A dimension cell's text, or a measure cell's number; None for NULL."""
    if cell.get("qIsNull") or cell.get("qElemNumber") == -2:
        return None
    if not is_measure:
        return cell.get("qText")
    number = cell.get("qNum")
    if not isinstance(number, int | float) or isinstance(number, bool):
        return None  # "NaN": a NULL measure
    return int(number) if float(number).is_integer() else number


def hypercube_over_qix(
    url: str,
    token: str,
    app_id: str,
    selections: list[tuple[str, list[str]]],
    dimensions: list[str],
    measures: list[str],
) -> tuple[list[str], list[tuple[Any, ...]], list[Any]]:
    """(columns, rows, totals) of a hypercube an app on a service computes under selections."""
    with QixConnection(url, token) as qix:
        doc = qix.call(-1, "OpenDoc", app_id)["qReturn"]["qHandle"]
        for field, values in selections:
            select(qix, doc, field, values)
        definition = {
            "qInfo": {"qType": "assoc-query"},
            "qHyperCubeDef": {
                "qDimensions": [{"qDef": {"qFieldDefs": [d]}} for d in dimensions],
                "qMeasures": [{"qDef": {"qDef": m}} for m in measures],
                "qInitialDataFetch": [],
            },
        }
        cube = qix.call(doc, "CreateSessionObject", definition)["qReturn"]["qHandle"]
        layout = qix.call(cube, "GetLayout")["qLayout"]["qHyperCube"]
        if layout.get("qError"):
            raise CommandFailed(f"the hypercube cannot be made: {layout['qError']}")
        width = len(dimensions) + len(measures)
        height = layout["qSize"]["qcy"]
        rows: list[tuple[Any, ...]] = []
        step = max(1, PAGE_CELLS // max(width, 1))
        for top in range(0, height, step):
            page = {"qTop": top, "qLeft": 0, "qWidth": width, "qHeight": min(step, height - top)}
            pages = qix.call(cube, "GetHyperCubeData", "/qHyperCubeDef", [page])["qDataPages"]
            for row in pages[0]["qMatrix"]:
                rows.append(tuple(cell_value(c, i >= len(dimensions)) for i, c in enumerate(row)))
        totals = [cell_value(c, True) for c in layout.get("qGrandTotalRow", [])]
    return dimensions + measures, rows, totals
