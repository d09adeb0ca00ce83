"""Coverage-guided fuzzing of the app package reader (atheris): any bytes either give an app or
raise assoc.Error; any other exception is a finding.

Usage: PYTHONPATH=python python fuzz/package_fuzzer.py -runs=100000 build/fuzz/corpus-package
(seed the corpus folder with fuzz/seeds/package/*.zip; fuzz/run.py does it). The native readers
under it are fuzzed with AddressSanitizer by qvd_fuzzer and csv_fuzzer.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    import json  # noqa: F401  (instrumented: the manifest parser)
    import zipfile  # noqa: F401  (instrumented: the archive reader)

    import assoc
    import assoc.package


def test_one_input(data: bytes) -> None:
    """One input: a package is read whole (tables built) or refused with assoc.Error."""
    try:
        app = assoc.App.from_package(data)
    except assoc.Error:
        return
    app.metadata()


def main() -> None:
    """libFuzzer's command line (runs, corpus folders, …)."""
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
