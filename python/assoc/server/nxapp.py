"""NxApp bodies as each interface version shapes them."""

from __future__ import annotations

from typing import Any

from assoc.attributes import NX_ATTRIBUTES

# What the real engine grants an app's owner.
OWNER_PRIVILEGES = [
    "read",
    "create",
    "update",
    "delete",
    "reload",
    "import",
    "export",
    "exportdata",
    "publish",
    "duplicate",
    "approve",
]
CREATABLE_RESOURCES = [
    "sheet",
    "story",
    "bookmark",
    "snapshot",
    "dimension",
    "measure",
    "masterobject",
]
# The attributes each interface version's NxApp carries, all from the one NxAttributes schema.
ATTRIBUTES_12_207 = tuple(a.name for a in NX_ATTRIBUTES if a.name != "tags")
ATTRIBUTES_12_171 = ("name", "description", "thumbnail", "tags", "lastReloadTime", "createdDate")
ATTRIBUTES = {"12.207.0": ATTRIBUTES_12_207, "12.171.0": ATTRIBUTES_12_171}


def nx_app(attributes: dict[str, Any], api_version: str) -> dict[str, Any]:
    """The NxApp for an app's stored attributes, in the shape of `api_version`."""
    if api_version == "12.171.0":
        return {
            "appId": attributes["id"],
            "attributes": {key: attributes[key] for key in ATTRIBUTES_12_171},
            "meta": {},
        }
    return {
        "attributes": {key: attributes[key] for key in ATTRIBUTES_12_207},
        "privileges": list(OWNER_PRIVILEGES),
        "create": [{"resource": r, "canCreate": True} for r in CREATABLE_RESOURCES],
    }
