"""Tags and comments a load script gives its fields and tables (TAG, UNTAG, COMMENT): shown in
an app's metadata and kept in its package's app.json ("annotations")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assoc._core import Error

_KEYS = ("fieldTags", "fieldComments", "tableComments", "fieldUntags")
# The tags UNTAG cannot take off (Qlik: they "cannot be manipulated in the script").
FIXED_TAGS = frozenset({"$system", "$key", "$keypart", "$syn"})


@dataclass
class Annotations:
    """Tags and comments a script gave its fields and tables (TAG, UNTAG, COMMENT), by name."""

    field_tags: dict[str, list[str]] = field(default_factory=dict)
    field_comments: dict[str, str] = field(default_factory=dict)
    table_comments: dict[str, str] = field(default_factory=dict)
    # Tags UNTAG took off what the data carries (a QVD header's tags, $numeric, …), by field.
    field_untags: dict[str, list[str]] = field(default_factory=dict)

    def apply(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """DataModelMetadata with the tags (after the engine's own) and comments added."""
        for f in metadata.get("fields", []):
            untags = self.field_untags.get(f["name"], ())
            extra = [t for t in self.field_tags.get(f["name"], []) if t not in f["tags"]]
            f["tags"] = [t for t in f["tags"] if t not in untags] + extra
            if f["name"] in self.field_comments:
                f["comment"] = self.field_comments[f["name"]]
        for t in metadata.get("tables", []):
            if t["name"] in self.table_comments:
                t["comment"] = self.table_comments[t["name"]]
        return metadata

    def __bool__(self) -> bool:
        return bool(
            self.field_tags or self.field_comments or self.table_comments or self.field_untags
        )

    def only(self, fields: set[str], tables: set[str]) -> Annotations:
        """These annotations of the fields and tables named (the others dropped)."""
        return Annotations(
            {k: list(v) for k, v in self.field_tags.items() if k in fields and v},
            {k: v for k, v in self.field_comments.items() if k in fields},
            {k: v for k, v in self.table_comments.items() if k in tables},
            {k: list(v) for k, v in self.field_untags.items() if k in fields and v},
        )

    def to_json(self) -> dict[str, Any]:
        """The app.json form: {"fieldTags": {field: [tag]}, "fieldComments": {field: text},
        "tableComments": {table: text}}, members left out when empty."""
        doc: dict[str, Any] = {
            "fieldTags": {k: list(v) for k, v in self.field_tags.items() if v},
            "fieldComments": dict(self.field_comments),
            "tableComments": dict(self.table_comments),
            "fieldUntags": {k: list(v) for k, v in self.field_untags.items() if v},
        }
        return {k: v for k, v in doc.items() if v}

    @classmethod
    def from_json(cls, raw: Any, where: str = "annotations") -> Annotations:
        """Checked annotations from their app.json form; assoc.Error names what is wrong."""
        if not isinstance(raw, dict):
            raise Error(f"{where} must be an object")
        unknown = sorted(set(raw) - set(_KEYS))
        if unknown:
            raise Error(f"{where}: unknown member {unknown[0]!r} (expected {', '.join(_KEYS)})")
        out = cls()
        for key in _KEYS:
            members = raw.get(key, {})
            if not isinstance(members, dict):
                raise Error(f"{where}.{key} must be an object")
            for name, value in members.items():
                if not name:
                    raise Error(f"{where}.{key}: names must not be empty")
                if key in ("fieldTags", "fieldUntags"):
                    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                        raise Error(f"{where}.{key}[{name!r}] must be an array of strings")
                    target = out.field_tags if key == "fieldTags" else out.field_untags
                    target[name] = list(dict.fromkeys(value))
                elif not isinstance(value, str):
                    raise Error(f"{where}.{key}[{name!r}] must be a string")
                elif key == "fieldComments":
                    out.field_comments[name] = value
                else:
                    out.table_comments[name] = value
        return out


__all__ = ["FIXED_TAGS", "Annotations"]
