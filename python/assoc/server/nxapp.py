"""NxApp bodies as each interface version shapes them."""

from __future__ import annotations

from typing import Any

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
ATTRIBUTES_12_207 = (
    "id",
    "name",
    "description",
    "thumbnail",
    "lastReloadTime",
    "createdDate",
    "modifiedDate",
    "owner",
    "dynamicColor",
    "published",
    "publishTime",
    "custom",
)
ATTRIBUTES_12_171 = ("name", "description", "thumbnail", "tags", "lastReloadTime", "createdDate")


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
