"""Text searches of list objects over a field's joined, folded texts (the search index): every
word and wildcard search gives the values a value-by-value match gives, for texts that change
length in lower case, texts holding the index's separator, empty texts, and searches asked
again after others (their masks are kept)."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from assoc.server.qix.facts import FieldValues
from assoc.server.qix.listsearch import ListSearch, whole_values
from assoc.server.qix.wildcard import fold

PARTS = ["a", "b", "c", "A", "B", "ß", "1", "2", "-", " ", ".", "ab", "x y", "Σ", "ﬁ", "Ä"]


def expected(texts: list[str], text: str) -> list[bool]:
    """Qlik's rules, value by value: a wildcard matches the whole value (`*` any run, `?` one
    character), any case; otherwise every word starts a word of the value."""
    if "*" in text or "?" in text:
        pattern = "".join(
            ".*" if c == "*" else "." if c == "?" else re.escape(c) for c in fold(text)
        )
        whole = re.compile(pattern, re.DOTALL)
        return [whole.fullmatch(fold(t)) is not None for t in texts]
    words = [re.compile(r"(?<!\w)" + re.escape(w)) for w in fold(text).split()]
    return [all(w.search(fold(t)) for w in words) for t in texts]


def random_text(rng: random.Random, extra: list[str]) -> str:
    return "".join(rng.choice(PARTS + extra) for _ in range(rng.randint(0, 6)))


@pytest.mark.parametrize(
    "extra",
    [[], ["İ"], ["\x00"]],
    ids=["plain", "a letter longer in lower case", "the separator in a text"],
)
def test_searches_match_value_by_value(extra: list[str]) -> None:
    rng = random.Random(len(extra[0]) if extra else 0)
    for _ in range(40):
        texts = list(dict.fromkeys(random_text(rng, extra) for _ in range(rng.randint(1, 50))))
        values = FieldValues(texts)
        asked = []
        for _ in range(12):
            if rng.random() < 0.5:
                text = "".join(
                    rng.choice([*PARTS, "*", "*", "?"]) for _ in range(rng.randint(1, 4))
                )
            else:
                text = " ".join(random_text(rng, extra) for _ in range(rng.randint(1, 2)))
            text = text.strip()
            if text and text[0] not in "<>=":
                asked.append(text)
        for text in [*asked, *reversed(asked)]:  # again: past the masks a field keeps
            mask = ListSearch.parse(text).mask(values, lambda e: pytest.fail(e))
            assert mask.tolist() == expected(texts, text), (texts, text)
            assert not mask.flags.writeable


def test_a_star_alone_and_an_empty_search_match_every_value() -> None:
    values = FieldValues(["", "a", "B"])
    for text in ("*", "**", ""):
        assert ListSearch.parse(text).mask(values, lambda e: pytest.fail(e)).all()
    assert np.array_equal(ListSearch.parse("?").mask(values, lambda e: pytest.fail(e)), [0, 1, 1])


@pytest.mark.parametrize("extra", [[], ["İ"], ["\x00"]])
def test_whole_value_matches_as_field_select(extra: list[str]) -> None:
    """Field.Select's matches: the whole value, any case, with or without wildcards (an empty
    text matches the empty value alone)."""
    rng = random.Random(3 + len(extra))
    for _ in range(40):
        texts = list(dict.fromkeys(random_text(rng, extra) for _ in range(rng.randint(1, 50))))
        values = FieldValues(texts)
        for _ in range(12):
            chosen = rng.choice(texts)
            text = rng.choice(
                [
                    chosen,
                    chosen.upper(),
                    "".join(rng.choice([*PARTS, "*", "?"]) for _ in range(rng.randint(0, 4))),
                    "",
                ]
            )
            pattern = "".join(
                ".*" if c == "*" else "." if c == "?" else re.escape(c) for c in fold(text)
            )
            want = [re.fullmatch(pattern, fold(t), re.DOTALL) is not None for t in texts]
            assert whole_values(values, text).tolist() == want, (texts, text)
