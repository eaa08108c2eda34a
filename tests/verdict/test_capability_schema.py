"""Capability entries carry a date and a source; context extensions must be longer."""

import pytest
from pydantic import ValidationError

from sparkadvisor.core.schema import Capability, Context

ENTRY = dict(benchmark="SWE-bench Verified", score=69.4, reference_model="Claude Sonnet 4.5",
             reference_score=77.2, source="minimax-readme")


def test_a_score_without_a_date_is_refused():
    with pytest.raises(ValidationError, match="date"):
        Capability(**ENTRY)
    with pytest.raises(ValidationError, match="date"):
        Capability(**ENTRY, date="October 2025")
    assert Capability(**ENTRY, date="2025-10-27").reported_by == "developer"


def test_an_extension_shorter_than_the_native_context_is_refused():
    with pytest.raises(ValidationError, match="extended_tokens 32768 should be above native_tokens 131072"):
        Context(native_tokens=131072, extended_tokens=32768, source="s")
    assert Context(native_tokens=32768, extended_tokens=131072, extended_method="YaRN factor 4",
                   source="s").longest_tokens == 131072
