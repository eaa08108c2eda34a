"""Caveat kinds: every kind has its own badge and meaning; there is no catch-all."""

from typing import get_args

import pytest
from pydantic import ValidationError

from sparkadvisor.core.caveats import KINDS, badge
from sparkadvisor.core.schema import Caveat, CaveatKind
from sparkadvisor.core.validation import validate


def test_every_kind_has_a_distinct_badge_and_meaning():
    kinds = get_args(CaveatKind)
    assert set(kinds) == set(KINDS)
    badges = [KINDS[k].badge for k in kinds]
    assert len(set(badges)) == len(badges)
    assert "other" not in kinds and "NOTE" not in badges
    assert all(KINDS[k].meaning for k in kinds)


def test_a_catch_all_kind_is_refused():
    with pytest.raises(ValidationError, match="kind"):
        validate(Caveat, {"id": "x", "kind": "other", "severity": "info", "explanation": "e", "source": "s"})


def test_the_disputed_glm_build_reads_as_disputed(index):
    caveat = index.caveats["glm-nvidia-build-note"]
    assert badge(caveat) == "TOOLCALLS-DISPUTED"
    assert caveat.severity == "warning"
    assert {"article", "tonyd2wild-glm-23"} <= set(caveat.source)
