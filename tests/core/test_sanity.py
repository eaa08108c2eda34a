"""Catalog sanity: the quick yes-or-no pass finds what the full walk finds."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from sparkadvisor.core import sanity
from sparkadvisor.core.sanity import MAX_NESTING, sanity_findings

NUMBERS = st.one_of(st.integers(-10**18, 10**18), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, 0.0, 1e-10, 1e-9, 1e15, 1e16, -1e16, math.nan, math.inf]))
LEAVES = st.one_of(NUMBERS, st.text(max_size=3), st.booleans(), st.none())
TREES = st.recursive(LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.text(max_size=2), inner, max_size=3)),
                     max_leaves=30)


def nested(depth: int, leaf: object) -> object:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


@given(st.dictionaries(st.text(max_size=2), TREES, max_size=4))
def test_the_quick_pass_says_sane_exactly_when_the_walk_finds_nothing(data):
    walked: list[sanity.Finding] = []
    leaf_findings = [v for v in sanity._values(data, walked)
                     if isinstance(v[1], int | float) and not isinstance(v[1], bool)
                     and (not math.isfinite(v[1]) or v[1] != 0 and not 1e-9 <= abs(v[1]) <= 1e15)]
    assert sanity._plainly_sane(data, 0) == (not walked and not leaf_findings)


def test_nesting_at_the_limit_is_found_by_either_pass():
    assert sanity_findings({"a": nested(MAX_NESTING - 1, 1)}) == []
    assert sanity_findings({"a": nested(MAX_NESTING, [])}), "an empty table too deep is still too deep"
    assert sanity_findings({"a": nested(MAX_NESTING - 1, 1e300)})
