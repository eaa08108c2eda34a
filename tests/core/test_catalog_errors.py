"""A broken catalog gets one sentence per problem naming file, line and field; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkadvisor.cli import main
from sparkadvisor.core.catalog import CatalogError, parse_catalog

DATA = Path(__file__).resolve().parents[1] / "data" / "catalogs"
BUNDLED = Path(__file__).resolve().parents[2] / "catalog.toml"


def check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["check", str(path)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, captured.err


@pytest.mark.parametrize(("name", "words"), [
    ("not_toml.toml", ["not_toml.toml:5:", "not valid TOML"]),
    ("unknown_key.toml", ["unknown_key.toml:10:", 'models[0] "m" > colour', "unknown key 'colour'",
                          "valid keys here are", "family"]),
    ("wrong_type.toml", ["wrong_type.toml:12:", "params.total_b", "should be a valid number", "seven billion"]),
    ("build_without_model.toml", ["build_without_model.toml:7:", 'builds[0] "orphan" > model', "no-such-model",
                                  "not in the catalog"]),
    ("negative_size.toml", ["negative_size.toml:23:", "size.value", "greater than 0", "-5"]),
])
def test_check_names_file_line_field_and_what_is_valid(name, words, capsys):
    code, err = check(DATA / name, capsys)
    assert code == 1
    for word in words:
        assert word in err


def test_check_passes_on_the_bundled_catalog(capsys):
    assert main(["check", str(BUNDLED)]) == 0
    assert "ok (" in capsys.readouterr().out


def test_a_missing_file_is_one_sentence(capsys, tmp_path):
    code, err = check(tmp_path / "nope.toml", capsys)
    assert code == 1 and "no such file" in err


def test_rank_with_a_broken_user_catalog_exits_1_with_the_problem(capsys):
    assert main(["rank", "--catalog", str(DATA / "wrong_type.toml")]) == 1
    assert "total_b" in capsys.readouterr().err


TEXT = BUNDLED.read_text()
LINES = TEXT.splitlines()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=st.integers(0, len(LINES) - 1), replacement=st.sampled_from(
    ["", "x = 1", "value = -1", 'source = "nowhere"', "[[builds]]", 'format = "fp3"', "= =", "layers = 0",
     "tp = 3", "[models.params]", 'model = "ghost"', "total_b = true"]))
def test_mutated_catalogs_give_problems_not_tracebacks(line, replacement):
    mutated = "\n".join(LINES[:line] + [replacement] + LINES[line + 1:])
    try:
        parse_catalog(mutated, "mutated.toml")
    except CatalogError as error:
        assert error.problems
        assert all(str(p).startswith("mutated.toml") for p in error.problems)


@pytest.mark.parametrize(("text", "words"), [
    # A month 13 passed `check` and `catalog update` would compare it as a date.
    ('catalog_date = "2026-13-45"\n', 'cat.toml:1: catalog_date: should be a date written YYYY-MM-DD, in quotes '
                                      "(got '2026-13-45')"),
    # The pattern itself was the message: "String should match pattern '^\\d{4}-\\d{2}-\\d{2}$'".
    ('catalog_date = "Dec 1 2026"\n',
     "catalog_date: should be a date written YYYY-MM-DD, in quotes (got 'Dec 1 2026')"),
    # TOML's own date type came out as Python: "(got datetime.date(2026, 12, 1))".
    ("catalog_date = 2026-12-01\n", 'catalog_date: should be text in quotes (got the TOML date 2026-12-01; '
                                    'write "2026-12-01")'),
])
def test_a_bad_date_says_what_a_date_looks_like(text, words, tmp_path, capsys):
    path = tmp_path / "cat.toml"
    path.write_text(text)
    code, err = check(path, capsys)
    assert code == 1 and words in err and "pattern" not in err and "datetime" not in err


def test_a_catalog_saved_with_a_byte_order_mark_reads(tmp_path, capsys):
    """Windows editors (Notepad) start UTF-8 files with a BOM; tomllib called that 'invalid statement' at line 1."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + (DATA / "user_addition.toml").read_bytes())
    assert main(["check", str(path)]) == 0
    assert "bom.toml: ok (" in capsys.readouterr().out


@pytest.mark.parametrize(("written", "said"), [
    ("my repo", "'my repo' is not a Hugging Face repo id; give it as OWNER/NAME (letters, digits and '_', with "
                "single '-' or '.' between them), e.g. openai/gpt-oss-120b"),
    ("gpt-oss-120b", "'gpt-oss-120b' is not a Hugging Face repo id"),
    ("openai--x/gpt", "'openai--x/gpt' is not a Hugging Face repo id"),
    ("https://huggingface.co/openai/gpt-oss-120b",
     "'https://huggingface.co/openai/gpt-oss-120b' is a hub address, not a repo id; give the id alone, "
     "openai/gpt-oss-120b"),
])
def test_a_repo_that_is_not_owner_slash_name_is_named_with_its_line(written, said, capsys, tmp_path):
    first = next(i for i, line in enumerate(LINES) if line.startswith("repo = "))
    path = tmp_path / "catalog.toml"
    path.write_text("\n".join(LINES[:first] + [f"repo = {written!r}".replace("'", '"')] + LINES[first + 1:]))
    code, err = check(path, capsys)
    assert code == 1 and f"catalog.toml:{first + 1}:" in err and said in err and "pattern" not in err


def test_an_empty_text_says_so_in_the_houses_words(tmp_path, capsys):
    # pydantic's own "String should have at least 1 character" reached the reader.
    path = tmp_path / "cat.toml"
    path.write_text('[sources.a]\ntitle = ""\n')
    code, err = check(path, capsys)
    assert code == 1 and "cat.toml:2: sources.a.title: should not be empty (got '')" in err
    assert "String" not in err


def test_problems_come_in_the_order_of_the_file(tmp_path, capsys):
    # The arithmetic's limits were listed last line first.
    path = tmp_path / "cat.toml"
    path.write_text('[[hardware]]\nid = "x"\nname = "X"\nmemory_gb = nan\nusable_memory_gib = inf\n'
                    'memory_bandwidth_gb_s = 1e400\nsource = "article"\n')
    code, err = check(path, capsys)
    assert code == 1 and [line.split(":")[1] for line in err.splitlines()[1:]] == ["4", "5", "6"]
