"""Problem lines: found in linear time, for TOML errors at the end of a file and for tables written wrongly."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core import tomllines
from sparkadvisor.core.tomllines import index_lines


def check(tmp_path: Path, text: str, capsys) -> tuple[int, str]:
    path = tmp_path / "mine.toml"
    path.write_text(text, encoding="utf-8")
    code = main(["check", str(path)])
    return code, capsys.readouterr().err


def test_a_64k_pathological_file_is_checked_quickly(tmp_path, capsys):
    spaces = " \t" * 16_000
    text = f'[[models]]\nid = "x"\nnotes = """\n[{spaces}x{spaces}\n"""\n'
    assert len(text) > 64_000
    start = time.monotonic()
    check(tmp_path, text, capsys)
    assert time.monotonic() - start < 10  # was minutes: a 4 KB file took 57 s


def test_each_character_is_read_a_bounded_number_of_times(monkeypatch):
    """Counting work instead of timing it: the scanner's steps grow with the text, not faster."""
    steps = {"n": 0}
    advance = tomllines._Scanner._advance

    def counted(self):
        steps["n"] += 1
        advance(self)

    monkeypatch.setattr(tomllines._Scanner, "_advance", counted)
    for size in (1_000, 10_000, 100_000):
        steps["n"] = 0
        index_lines('a = """\n[' + " " * size + '\n"""\n' + "[[t]]\nk = [1, 2]\n" * (size // 20))
        assert steps["n"] <= 3 * size


def test_a_line_inside_a_string_is_not_a_table():
    lines = index_lines('[[models]]\nid = "m"\nnotes = """\n[[builds]]\n"""\nname = "n"\n').lines
    assert ("builds",) not in lines and lines[("models", 0, "name")] == 6


@pytest.mark.parametrize(("text", "words"), [
    ('a = 1\nb = [1,\n 2,\n\n# note\n', ["mine.toml:2:", "an array '[' opened here is never closed"]),
    ('a = 1\n[x]\nnotes = """\nabc\n\n', ["mine.toml:3:", 'a multi-line string """ opened here is never closed']),
    ("a = 1\nb = { c = 1", ["mine.toml:2:", "an inline table '{' opened here is never closed"]),
    ("a = 1\n\nb =", ["mine.toml:3:", "at the end of the file"]),
])
def test_toml_errors_at_the_end_of_the_file_name_a_line(tmp_path, capsys, text, words):
    code, err = check(tmp_path, text, capsys)
    assert code == 1 and "end of document" not in err
    for word in words:
        assert word in err


def test_a_table_written_as_hardware_dot_x_is_located(tmp_path, capsys):
    code, err = check(tmp_path, '# mine\n\n[hardware.big]\nid = "big"\n', capsys)
    assert code == 1
    assert "mine.toml:3: hardware:" in err
