"""Runs chosen tests again in a new process with ASSOC_SIMD=0: the engine's portable kernels
in place of its vector ones, which must give the same answers; or with ASSOC_SIMD=avx2: its
AVX2 kernels where the CPU has AVX-512 too (as a CPU without AVX-512 runs them)."""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def assert_pass_without_simd(test_file: str, selected: str, simd: str = "0") -> None:
    """The tests of `test_file` (in this folder) that `-k selected` picks all pass with the
    vector kernels off (`simd` "0") or capped at AVX2 ("avx2")."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            os.path.join(HERE, test_file),
            "-k",
            selected,
        ],
        env={**os.environ, "ASSOC_SIMD": simd},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout
    assert "failed" not in done.stdout
