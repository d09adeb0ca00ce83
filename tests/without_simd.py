"""Runs chosen tests again in a new process with ASSOC_SIMD=0: the engine's portable kernels
in place of its vector ones, which must give the same answers; or with ASSOC_SIMD=avx2: its
AVX2 kernels where the CPU has AVX-512 too (as a CPU without AVX-512 runs them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def cpu_without_avx512() -> bool:
    """True when the CPU surely has no AVX-512 (Linux's list of its flags lacks avx512f):
    there every vector kernel is already the AVX2 one by default."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    flags = next((line for line in info.splitlines() if line.startswith("flags")), "")
    return bool(flags) and "avx512f" not in flags.split()


def assert_pass_with_avx2_kernels(test_file: str, selected: str) -> None:
    """assert_pass_without_simd with the kernels capped at AVX2; skipped on a CPU without
    AVX-512, whose own run of the same tests already took the AVX2 kernels."""
    if cpu_without_avx512():
        pytest.skip("no AVX-512 on this CPU: the tests' own run used the AVX2 kernels")
    assert_pass_without_simd(test_file, selected, simd="avx2")
