"""The export's YAML emitter: whatever it is given, PyYAML's safe loader reads back the same data."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkadvisor.export.yamlout import dump, quoted

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SCALARS = st.one_of(TEXT, st.booleans(), st.integers(-10**6, 10**6), st.none())
DATA = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(TEXT, inner, max_size=4)), max_leaves=20)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(TEXT, DATA, max_size=5))
def test_any_document_reads_back_as_written(data):
    assert yaml.safe_load(dump(data)) == (data or {})


@pytest.mark.parametrize("text", ["yes", "no", "on", "null", "~", "0x10", "1e3", "0o7", "2026-12-01", ".inf",
                                  "- item", "key: value", "#", "&a", "*a", "!!str", "|", ">", "'", '"', "%YAML"])
def test_words_yaml_would_retype_stay_strings(text):
    assert yaml.safe_load(f"k: {quoted(text)}") == {"k": text}


def test_floats_are_refused_rather_than_rounded():
    with pytest.raises(TypeError, match="not float"):
        dump({"gpu-memory-utilization": 0.85})
