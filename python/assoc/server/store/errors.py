"""What can go wrong in the store, one class per kind of failure (the service maps each to a
status)."""

from __future__ import annotations

from assoc import Error


class AppNotFound(Error):
    """No app has the id asked for."""


class MediaNotFound(Error):
    """No media file or folder has the path asked for."""


class BadMediaPath(Error):
    """A media path that is not a plain relative path (absolute, '..', backslashes)."""


class InvalidAppFile(Error):
    """An import body that is a package, QVD or CSV file but not a valid one."""


class ImportTooLarge(Error):
    """An import whose tables would unpack to more memory than the store may give one import."""


class AppIdRequired(Error):
    """An AUTOREPLACE import whose body does not name the app it replaces."""


class AppExists(Error):
    """A new app's id is taken already."""


class StoredAppUnreadable(Error):
    """A committed app whose files no longer load (damaged on disk)."""


class DataDirInUse(Error):
    """Another store holds the data dir."""


class StoreUnavailable(Error):
    """The app store (an object store) did not answer, or answered with a failure."""


class VersionConflict(Error):
    """A commit lost the race for an app's pointer to another commit (nothing changed)."""
