"""Layouts of the list kinds of generic objects: current selections (qSelectionObjectDef) and
the lists of master items, bookmarks, variables and app objects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import assoc
from assoc.server.qix.facts import AppFacts
from assoc.server.qix.listobject import unknown_state
from assoc.server.qix.states import InState

# The most selected values a selection names one by one (qSelected "a, b"; beyond: "7 of 20").
SELECTION_THRESHOLD = 6


def state_counts(session: assoc.Session | InState, field: str) -> dict[str, int]:
    """NxStateCounts of a field: its values by state, locked ones counted as locked."""
    counts = session.counts(field)
    selected_excluded = len(session.indices(field, "selected_excluded"))
    selected = int(counts["selected"]) - selected_excluded
    locked = session.is_locked(field)
    return {
        "qLocked": selected if locked else 0,
        "qSelected": 0 if locked else selected,
        "qOption": int(counts["possible"]),
        "qDeselected": 0,
        "qAlternative": int(counts["alternative"]),
        "qExcluded": int(counts["excluded"]),
        "qSelectedExcluded": 0 if locked else selected_excluded,
        "qLockedExcluded": selected_excluded if locked else 0,
    }


def selection_object(facts: AppFacts, session: InState) -> dict[str, Any]:
    """qSelectionObject of one state: one entry per field with a selection, Back/Forward
    counts (an unknown state has no selections and a qError)."""
    selections: list[dict[str, Any]] = []
    if session.state not in session.session.states:
        return {
            "qStateName": session.state,
            "qBackCount": 0,
            "qForwardCount": 0,
            "qSelections": [],
            "qError": unknown_state(session.state),
        }
    for field in session.selections():
        if field not in facts.fields:
            continue
        texts = facts.values(field).texts
        codes = session.indices(field, "selected").tolist()
        total = int(facts.fields[field]["cardinal"])
        shown = [texts[c] for c in codes[:SELECTION_THRESHOLD]]
        if len(codes) <= SELECTION_THRESHOLD:
            summary = ", ".join(shown)
        else:
            summary = f"{len(codes)} of {total}"
        locked = session.is_locked(field)
        mode = "LOCKED" if locked else "NORMAL"
        selections.append(
            {
                "qField": field,
                "qReadableName": field,
                "qTotal": total,
                "qIsNum": False,
                "qSelected": summary,
                "qSelectedCount": len(codes),
                "qSortIndex": len(selections),
                "qLocked": locked,
                "qOneAndOnlyOne": False,
                "qIsHidden": bool(facts.fields[field]["is_hidden"]),
                "qTextSearch": session.search_text(field) or "",
                "qRangeInfo": [],
                "qDimensionReferences": [],
                "qSelectionThreshold": SELECTION_THRESHOLD,
                "qStateCounts": state_counts(session, field),
                "qSelectedFieldSelectionInfo": [
                    {"qName": text, "qFieldSelectionMode": mode} for text in shown
                ],
                "qNotSelectedFieldSelectionInfo": [],
            }
        )
    return {
        "qStateName": session.state,
        "qBackCount": session.back_count,
        "qForwardCount": session.forward_count,
        "qSelections": selections,
    }


def item_data(spec: Any, properties: dict[str, Any]) -> dict[str, Any]:
    """qData of a list item: each member of the list's qData that is a JSON Pointer (`/title`)
    read from the item's properties (None where there is no such member); other values as
    given."""
    if not isinstance(spec, dict):
        return {}
    out: dict[str, Any] = {}
    for key, path in spec.items():
        if not isinstance(path, str) or not path.startswith("/"):
            out[key] = path
            continue
        value: Any = properties
        for part in path[1:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict):
                value = value.get(part)
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                value = None
        out[key] = value
    return out


# Definition key -> (layout key, the items of that kind the engine has: none yet but objects).
EMPTY_LISTS = {
    "qDimensionListDef": "qDimensionList",
    "qMeasureListDef": "qMeasureList",
    "qBookmarkListDef": "qBookmarkList",
    "qVariableListDef": "qVariableList",
}
APP_OBJECT_LIST_DEF = "qAppObjectListDef"
SELECTION_OBJECT_DEF = "qSelectionObjectDef"


def app_object_list(
    definition: dict[str, Any], objects: Callable[[], list[tuple[dict[str, Any], dict[str, Any]]]]
) -> dict[str, Any]:
    """qAppObjectList: the app's objects (qInfo, properties) of the definition's qType."""
    wanted = definition.get("qType")
    items = []
    for info, properties in objects():
        if wanted and info.get("qType") != wanted:
            continue
        meta = properties.get("qMetaDef")
        items.append(
            {
                "qInfo": dict(info),
                "qMeta": dict(meta) if isinstance(meta, dict) else {},
                "qData": item_data(definition.get("qData"), properties),
            }
        )
    return {"qItems": items}
