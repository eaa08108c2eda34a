"""Rows of the table: every build, or one per model with its best build, unfolded on demand."""

from __future__ import annotations

from sparkadvisor.tui.rows import Row, table_rows

ORDER = ["glm-a", "qwen-a", "glm-b", "glm-c", "mini-a"]
MODEL_OF = {"glm-a": "glm", "glm-b": "glm", "glm-c": "glm", "qwen-a": "qwen", "mini-a": "mini"}


def test_ungrouped_is_one_row_per_build_in_order() -> None:
    assert [r.build_id for r in table_rows(ORDER, MODEL_OF)] == ORDER


def test_grouped_is_one_row_per_model_with_its_best_build() -> None:
    rows = table_rows(ORDER, MODEL_OF, grouped=True)
    assert rows == [Row("glm-a", "model", 3), Row("qwen-a", "model", 1), Row("mini-a", "model", 1)]


def test_an_unfolded_model_lists_its_other_builds_under_it() -> None:
    rows = table_rows(ORDER, MODEL_OF, grouped=True, expanded={"glm", "qwen"})
    assert [(r.build_id, r.kind, r.last) for r in rows] == [
        ("glm-a", "model", False), ("glm-b", "member", False), ("glm-c", "member", True),
        ("qwen-a", "model", False), ("mini-a", "model", False)]
    assert rows[0].expanded and not rows[3].expanded, "a model with one build has nothing to unfold"


def test_rows_made_before_are_reused_and_the_same() -> None:
    made: dict[str, Row] = {}
    first = table_rows(ORDER, MODEL_OF, made=made)
    again = table_rows(list(reversed(ORDER)), MODEL_OF, made=made)
    assert first == table_rows(ORDER, MODEL_OF) and again == list(reversed(first))
    assert all(a is b for a, b in zip(again, reversed(first), strict=True)), "a build's row is made once"
