"""HTTP query parameters parsed into the store's terms."""

from __future__ import annotations

from assoc.server.store import ImportMode, ListForm


def import_mode(text: str | None) -> ImportMode:
    """NEW or AUTOREPLACE, any case; None means NEW; anything else raises ValueError."""
    if text is None:
        return ImportMode.NEW
    return ImportMode(text.upper())


def list_form(show: str | None) -> ListForm:
    """r/recursive, a/all, anything else the flat form."""
    if show in ("r", "recursive"):
        return ListForm.RECURSIVE
    if show in ("a", "all"):
        return ListForm.ALL
    return ListForm.FLAT
