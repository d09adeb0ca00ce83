"""List objects (qListObjectDef): one field's values with their states, sorted and paged."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import assoc
from assoc.field_order import (
    ALTERNATIVE,
    EXCLUDED,
    OPTION,
    SELECTED,
    SELECTED_EXCLUDED,
    display_order,
    state_counts,
    value_states,
)
from assoc.server.qix.facts import AppFacts, FieldValues
from assoc.server.qix.listsearch import ListSearch
from assoc.server.qix.members import flag, member_object, member_objects, string_list
from assoc.server.qix.pages import Page, data_page, page_area, parse_pages
from assoc.server.qix.rpc import (
    CALC_INVALID_DEF,
    GENERIC_NOT_FOUND,
    INVALID_PARAMETERS,
    RpcError,
    json_number,
)
from assoc.server.qix.states import InState, state_name

SORT_KEYS = (
    "qSortByState",
    "qSortByFrequency",
    "qSortByNumeric",
    "qSortByAscii",
    "qSortByLoadOrder",
)
DEFAULT_SORT = {"qSortByAscii": 1}


def sort_criteria(raw: Any) -> dict[str, int]:
    """An NxSortCriteria's directions (1 ascending, -1 descending, 0 off); ascii by default."""
    if raw is None:
        return dict(DEFAULT_SORT)
    if not isinstance(raw, dict):
        raise RpcError(INVALID_PARAMETERS, "qSortCriterias", "must be a list of objects")
    out = {}
    for key in SORT_KEYS:
        value = raw.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value not in (-1, 0, 1):
            raise RpcError(INVALID_PARAMETERS, key, "must be -1, 0 or 1")
        out[key] = value
    return out


def field_of(definition: dict[str, Any], path: str) -> str:
    """The one field a dimension definition names (qDef.qFieldDefs[0])."""
    qdef = definition.get("qDef", {})
    fields = qdef.get("qFieldDefs") if isinstance(qdef, dict) else None
    if not isinstance(fields, list) or not fields or not isinstance(fields[0], str):
        raise RpcError(INVALID_PARAMETERS, path, "qDef.qFieldDefs must name one field")
    return fields[0]


def sort_order(values: FieldValues, states: np.ndarray, criteria: dict[str, int]) -> np.ndarray:
    """Symbol indexes in display order under an NxSortCriteria's directions."""
    return display_order(
        values,
        states,
        criteria.get("qSortByState", 0),
        criteria.get("qSortByNumeric", 0),
        criteria.get("qSortByAscii", 0),
        criteria.get("qSortByLoadOrder", 0),
    )


def cube_by(session: InState, field: str) -> Callable[[str], assoc.Hypercube]:
    """Makes the cube of an expression search in `field` under the session's state."""
    return lambda expression: session.hypercube([field], [expression])


def unknown_state(state: str) -> dict[str, Any]:
    """The qError of a list object or cube whose state the session does not have."""
    return {
        "qErrorCode": GENERIC_NOT_FOUND,
        "qContext": state,
        "qExtendedMessage": f"no alternate state {state!r}",
    }


@dataclass(frozen=True)
class ListObjectDef:
    """A checked qListObjectDef."""

    field: str
    label: str
    criteria: dict[str, int]
    show_alternatives: bool
    initial_pages: list[Page]
    state_name: str = ""  # qStateName ("" = the object's state)

    @classmethod
    def parse(cls, raw: Any) -> ListObjectDef:
        """Checks a qListObjectDef (errors 8 / 7009 for what does not fit)."""
        if not isinstance(raw, dict):
            raise RpcError(INVALID_PARAMETERS, "qListObjectDef", "must be an object")
        qdef = member_object(raw.get("qDef"), "qDef")
        field = field_of(raw, "qListObjectDef")
        labels = string_list(qdef.get("qFieldLabels"), "qFieldLabels")
        sorts = member_objects(qdef.get("qSortCriterias"), "qSortCriterias")
        criteria = sort_criteria(sorts[0] if sorts else None)
        show = flag(raw, "qShowAlternatives")
        pages = parse_pages(raw.get("qInitialDataFetch"), min_width=1)
        state = state_name(raw.get("qStateName"))
        return cls(field, labels[0] if labels else field, criteria, show, pages, state)


class ListObjectView:
    """A list object computed for a session's current selections."""

    def __init__(
        self,
        definition: ListObjectDef,
        facts: AppFacts,
        session: InState,
        search: ListSearch | None = None,
    ) -> None:
        self.definition = definition
        self.search = search
        self.state = session.state
        self.error: dict[str, Any] | None = None
        if session.state not in session.session.states:
            self.error = unknown_state(session.state)
            return
        if definition.field not in facts.fields or definition.field.startswith("="):
            self.error = {
                "qErrorCode": CALC_INVALID_DEF,
                "qContext": definition.field,
                "qExtendedMessage": f"unknown field {definition.field!r}",
            }
            return
        self.facts = facts
        self.values = facts.values(definition.field)
        self.states = value_states(session, definition.field, definition.show_alternatives)
        self.order = sort_order(self.values, self.states, definition.criteria)
        self.order = session.kept_codes(definition.field, self.order)  # section access
        if search is not None:  # while searching, the values it matches
            matched = search.mask(self.values, cube_by(session, definition.field))
            self.order = self.order[matched[self.order]]

    def page(self, page: Page) -> dict[str, Any]:
        """NxDataPage of one page (one column; a width of 0 still reads it)."""
        if self.error is not None:
            return data_page([], range(0), range(0))
        rows, cols = page_area(
            Page(page.top, page.left, max(page.width, 1), page.height), len(self.order), 1
        )
        if not cols:
            return data_page([], rows, cols)
        codes = self.order[rows.start : rows.stop]
        cells = self.values.cells_json(codes, self.states[codes], wrap=True)
        return data_page(cells, rows, cols)

    def layout(self) -> dict[str, Any]:
        """qListObject: size, dimension info and the initial pages."""
        d = self.definition
        info: dict[str, Any] = {
            "qFallbackTitle": d.label,
            "qGroupFallbackTitles": [d.label],
            "qGroupPos": 0,
            "qGroupFieldDefs": [d.field],
            "qGrouping": "N",
            "qAttrExprInfo": [],
            "qAttrDimInfo": [],
            "qNumFormat": {"qType": "U", "qnDec": 0, "qUseThou": 0},
            "qIsAutoFormat": True,
        }
        if self.error is not None:
            info["qError"] = self.error
            size = 0
        else:
            f = self.facts.fields[d.field]
            counts = state_counts(self.states)
            size = len(self.order)
            direction = d.criteria.get("qSortByAscii") or d.criteria.get("qSortByNumeric") or 0
            info.update(
                qApprMaxGlyphCount=self.values.max_glyphs,
                qCardinal=f["cardinal"],
                qSortIndicator="A" if direction >= 0 else "D",
                qStateCounts={
                    "qLocked": 0,
                    "qSelected": int(counts[SELECTED]),
                    "qOption": int(counts[OPTION]),
                    "qDeselected": 0,
                    "qAlternative": int(counts[ALTERNATIVE]),
                    "qExcluded": int(counts[EXCLUDED]),
                    "qSelectedExcluded": int(counts[SELECTED_EXCLUDED]),
                    "qLockedExcluded": 0,
                },
                qTags=list(f["tags"]),
                qDimensionType="N" if f["is_numeric"] else "D",
                qMin=json_number(self.values.minimum),
                qMax=json_number(self.values.maximum),
                qCardinalities={
                    "qCardinal": f["cardinal"],
                    "qHypercubeCardinal": len(self.values),
                    "qAllValuesCardinal": -1,
                },
            )
        return {
            "qStateName": self.state,
            "qSize": {"qcx": 1, "qcy": size},
            "qDimensionInfo": info,
            "qExpressions": [],
            "qDataPages": [self.page(p) for p in d.initial_pages],
        }
