"""benchmarks/ab_qix.py still works: two servers, each importing the package it is given, take
the page step in turn, and the pairs' ratio and sign test are printed."""

from __future__ import annotations

import math
import re

from benchscripts import package_path, script_output


def two_sided_sign_test(wins: int, n: int) -> float:
    k = min(wins, n - wins)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def test_a_short_run_pairs_the_page_steps_of_two_servers() -> None:
    package = package_path()
    output = script_output(
        "ab_qix.py", package, package, "--step", "page", "--rows", "20000", "--steps", "4"
    )
    assert "20,000 rows, page step, 4 pairs" in output
    assert re.search(r"before \d+\.\d\d ms, after \d+\.\d\d ms \(medians\)", output), output
    found = re.search(r"after faster in (\d)/4 pairs, sign test p = (\d\.\d+)", output)
    assert found, output
    expected = two_sided_sign_test(int(found.group(1)), 4)
    assert math.isclose(float(found.group(2)), expected, abs_tol=1e-3)
