"""ApplyPatches: NxPatch lists (add / replace / remove at JSON-Pointer paths) on properties."""

from __future__ import annotations

import copy
import json
from typing import Any

from assoc.server.qix.rpc import INVALID_PARAMS, MAX_PROPERTY_DEPTH, RpcError, check_tree

OPS = ("add", "replace", "remove")


def _bad(path: str, message: str) -> RpcError:
    return RpcError(INVALID_PARAMS, path, f"Invalid Params: {message}")


def pointer(path: Any) -> list[str]:
    """The member names of a JSON Pointer (`/a/b~1c/0` → a, b/c, 0); -32602 when it is not
    one, or names the whole tree (properties are replaced with SetProperties)."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise _bad(str(path), "qPath must be a JSON Pointer starting with /")
    if path == "/":
        raise _bad(path, "qPath must name a member, not the whole properties")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], key: str, path: str, appending: bool) -> int:
    if appending and key == "-":
        return len(container)
    if not key.isdigit() or (len(key) > 1 and key.startswith("0")):
        raise _bad(path, f"{key!r} is not an array index")
    index = int(key)
    if index > len(container) or (index == len(container) and not appending):
        raise _bad(path, f"array index {index} is out of range")
    return index


def _value(patch: dict[str, Any], path: str) -> Any:
    raw = patch.get("qValue")
    if not isinstance(raw, str):
        raise _bad(path, "qValue must be a JSON text")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise _bad(path, "qValue is not JSON") from None
    check_tree(value, f"qValue{path}", MAX_PROPERTY_DEPTH)
    return value


def apply_patch(tree: dict[str, Any], patch: Any) -> None:
    """Applies one NxPatch in place. `add` sets a member or inserts into an array (`-`
    appends); `replace` sets an existing array item or a member (a missing member of an
    existing object is added, as the engine does); `remove` deletes one that exists. The op
    is matched in any case. -32602 for an unknown op, a path whose parent does not exist or
    is not a container, an index out of range, or a qValue that is not JSON."""
    if not isinstance(patch, dict):
        raise _bad("qPatches", "each patch must be an object")
    op = patch.get("qOp")
    keys = pointer(patch.get("qPath"))
    path: str = patch["qPath"]
    if not isinstance(op, str) or op.lower() not in OPS:
        raise _bad(str(path), f"qOp must be one of {', '.join(OPS)} (any case)")
    op = op.lower()
    value = None if op == "remove" else _value(patch, path)
    parent: Any = tree
    for key in keys[:-1]:
        if isinstance(parent, dict) and key in parent:
            parent = parent[key]
        elif isinstance(parent, list):
            parent = parent[_index(parent, key, path, appending=False)]
        else:
            raise _bad(path, f"no member {key!r} on the way")
    last = keys[-1]
    if isinstance(parent, dict):
        if op == "remove":
            if last not in parent:
                raise _bad(path, f"no member {last!r} to remove")
            del parent[last]
        else:
            parent[last] = value
    elif isinstance(parent, list):
        index = _index(parent, last, path, appending=op == "add")
        if op == "add":
            parent.insert(index, value)
        elif op == "replace":
            parent[index] = value
        else:
            del parent[index]
    else:
        raise _bad(path, "the parent is not an object or an array")


def tree_copy(value: Any) -> Any:
    """A copy of a JSON tree (dicts, lists and scalars): what copy.deepcopy makes of one, in a
    fraction of its time (it keeps no memo of shared parts: a JSON tree has none)."""
    kind = type(value)
    if kind is dict:
        return {key: tree_copy(item) for key, item in value.items()}
    if kind is list:
        return [tree_copy(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def patched(tree: dict[str, Any], patches: list[Any]) -> dict[str, Any]:
    """A copy of `tree` with every patch applied in order (all or none: -32602 on the first
    that does not fit); its callers take the result as properties, which checks them (depth,
    finite numbers)."""
    out: dict[str, Any] = tree_copy(tree)
    for patch in patches:
        apply_patch(out, patch)
    return out
