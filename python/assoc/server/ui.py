"""`GET /ui`: the app explorer page, static files that talk QIX to this same service."""

from __future__ import annotations

from pathlib import Path

from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

UI_PATH = "/ui"
UI_FILES = Path(__file__).parent / "static" / "ui"


def ui_routes() -> list[Mount]:
    """The /ui mount: index.html, the page's script modules and its style sheet."""
    return [Mount(UI_PATH, StaticFiles(directory=UI_FILES, html=True), name="ui")]
