"""core.records: a record made by its `__init__` is its own class, frozen, and equal to the same record rebuilt."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, field, replace

import pytest

from sparkadvisor.core.records import from_plain, record, to_plain


@record
class Sample:
    """A record with a required field, a default, a default factory and a cross-field check."""

    name: str
    count: int = 1
    tags: tuple[str, ...] = field(default_factory=tuple)
    seen_as: str = ""

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError("count must be >= 0")
        object.__setattr__(self, "seen_as", type(self).__name__)


def test_a_record_is_its_own_class_once_made_and_in_its_post_init():
    made = Sample(name="a", tags=("x",))
    assert type(made) is Sample
    assert made.seen_as == "Sample"
    assert (made.name, made.count, made.tags) == ("a", 1, ("x",))
    assert Sample(name="b").tags == ()


def test_a_made_record_is_frozen():
    made = Sample(name="a")
    with pytest.raises(FrozenInstanceError):
        made.name = "b"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del made.count
    assert made.name == "a"


def test_made_replaced_and_rebuilt_records_are_equal():
    made = Sample(name="a", count=2)
    assert replace(made, count=3) == Sample(name="a", count=3)
    assert from_plain(Sample, to_plain(made)) == made
    assert hash(from_plain(Sample, to_plain(made))) == hash(made)


def test_a_failed_check_raises_and_keywords_are_required():
    with pytest.raises(ValueError, match="count must be >= 0"):
        Sample(name="a", count=-1)
    with pytest.raises(TypeError):
        Sample("a")  # type: ignore[misc]
