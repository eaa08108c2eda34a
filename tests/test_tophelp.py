"""`sparkadvisor --help` laid out without argparse is argparse's own help, byte for byte."""

from __future__ import annotations

import gettext
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkadvisor import tophelp
from sparkadvisor.cliparser import build_parser

SUPPORTED = tophelp.VERSIONS[0] <= sys.version_info[:2] <= tophelp.VERSIONS[1]


def argparse_help(monkeypatch: pytest.MonkeyPatch, width: int) -> str:
    monkeypatch.setenv("COLUMNS", str(width + 2))
    return build_parser(only="").format_help()


def test_the_top_help_is_argparse_s_at_every_width(monkeypatch):
    """Every width up to where each help fits on one line (and a few wider): the narrow ones wrap
    the usage line, put a name's help on the next line and cut words at hyphens."""
    widths = [*range(-1, 141), 160, 200, 301]
    expected = [argparse_help(monkeypatch, width) for width in widths]
    ours = [tophelp.help_text(width) for width in widths]
    if not SUPPORTED:
        assert ours == [None] * len(ours)
        return
    assert [width for width, mine, theirs in zip(widths, ours, expected, strict=True) if mine != theirs] == []
    assert "\n    rank  " in ours[81] and "\n    coverage  " in ours[81]


def run(argv: list[str], columns: str | None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    result = subprocess.run([sys.executable, "-c", "import sys; from sparkadvisor.cli import main; main(sys.argv[1:])",
                             *argv], env=env, capture_output=True, stdin=subprocess.DEVNULL)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


@pytest.mark.parametrize("columns", [None, "40", "200"])
def test_help_and_h_print_what_argparse_prints(columns):
    """Piped (80 columns when COLUMNS is unset) and at two widths: same text, no error, exit 0.
    `--help` followed by anything, or spelt `--he`, is left to argparse."""
    code, out, err = run(["--help", "--version"], columns)
    assert (code, err) == (0, "") and out.startswith("usage: sparkadvisor [-h]")
    assert run(["--help"], columns) == run(["-h"], columns) == (code, out, err)


def test_help_imports_no_argument_parser():
    probe = ("import sys\nfrom sparkadvisor.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print(' '.join(sys.modules), file=sys.stderr)")
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stderr.split())
    assert "sparkadvisor.tophelp" in loaded
    if SUPPORTED:
        assert not loaded & {"argparse", "textwrap", "sparkadvisor.cliparser", "sparkadvisor.commands.common"}
        if not os.path.isdir(tophelp.LOCALEDIR):
            assert not loaded & {"gettext", "locale"}


def write_mo(path: Path, messages: dict[str, str]) -> None:
    """A GNU .mo catalog (the format gettext reads) holding `messages`, UTF-8."""
    entries = sorted({"": "Content-Type: text/plain; charset=UTF-8\n", **messages}.items())
    ids = b"".join(k.encode() + b"\0" for k, _ in entries)
    strs = b"".join(v.encode() + b"\0" for _, v in entries)
    start = 7 * 4 + 16 * len(entries)
    table_ids, table_strs, at_id, at_str = [], [], start, start + len(ids)
    for key, value in entries:
        table_ids += [len(key.encode()), at_id]
        table_strs += [len(value.encode()), at_str]
        at_id += len(key.encode()) + 1
        at_str += len(value.encode()) + 1
    header = struct.pack("<7I", 0x950412DE, 0, len(entries), 28, 28 + 8 * len(entries), 0, 0)
    path.parent.mkdir(parents=True)
    path.write_bytes(header + struct.pack(f"<{4 * len(entries)}I", *table_ids, *table_strs) + ids + strs)


@pytest.mark.parametrize("help_help", ["diese Hilfe zeigen und beenden", "diese Hilfe zeigen und beenden (\u00e4)"])
def test_argparse_s_words_are_translated_as_argparse_translates_them(monkeypatch, tmp_path, help_help):
    """With a `messages` catalog for the reader's language, argparse's words are translated;
    a translation outside printable ASCII is left to argparse."""
    assert tophelp.LOCALEDIR == gettext._default_localedir  # type: ignore[attr-defined]
    write_mo(tmp_path / "de" / "LC_MESSAGES" / "messages.mo",
             {"usage: ": "Aufruf: ", "options": "Optionen", "positional arguments": "Positionsargumente",
              "show this help message and exit": help_help, "%(heading)s:": "%(heading)s -"})
    monkeypatch.setattr(tophelp, "LOCALEDIR", str(tmp_path))
    monkeypatch.setattr(gettext, "_default_localedir", str(tmp_path))
    monkeypatch.setattr(gettext, "_translations", {})
    monkeypatch.setenv("LANGUAGE", "de")
    expected = argparse_help(monkeypatch, 78)
    assert "Aufruf: sparkadvisor" in expected and "diese Hilfe" in expected
    mine = tophelp.help_text(78)
    assert mine == (expected if SUPPORTED and help_help.isascii() else None)


TEXT = st.text(alphabet=st.sampled_from(list("aZ_0-- -.,!'\"?&()/;:x")), max_size=60)


@settings(max_examples=200, deadline=None)
@given(TEXT, st.integers(min_value=1, max_value=30))
def test_words_are_cut_and_wrapped_as_textwrap_does(text, width):
    assert tophelp.chunks_of(text) == textwrap.TextWrapper()._split(text)
    if text.strip():
        assert tophelp.wrap(text, width) == textwrap.wrap(" ".join(text.split()), width)
