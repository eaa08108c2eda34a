"""Mutated catalogs: never a traceback, `check` ok implies `rank` and `show` work, JSON always valid.

Bounded for CI (a dozen examples, a few seconds); `python scripts/fuzz_catalog.py --runs 10000`
runs the same property for as long as you like, over this seed or the bundled catalog.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkadvisor.cli import main

from .mutate import KINDS, Mutation, mutate

SEED = Path(__file__).resolve().parents[1] / "data" / "catalogs" / "fuzz_seed.toml"
RAW_CONTROLS = ("\x1b", "\x07", "\x9b")

mutations = st.lists(st.builds(Mutation, st.sampled_from(KINDS), st.integers(0, 10_000), st.integers(0, 100)),
                     min_size=1, max_size=3)


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse
        code = int(exit_info.code or 0)
    out, err = capsys.readouterr()
    for raw in RAW_CONTROLS:
        assert raw not in out + err, f"{raw!r} reached the terminal from {argv}"
    return code, out, err


def strict_json(text: str) -> object:
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in JSON output"))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(chosen=mutations)
def test_check_ok_means_rank_and_show_work(chosen, tmp_path_factory, capsys):
    path = tmp_path_factory.mktemp("fuzz") / "mutated.toml"
    path.write_text(mutate(SEED.read_text(encoding="utf-8"), chosen), encoding="utf-8")
    code, _, err = run(capsys, ["check", str(path)])
    assert code in (0, 1), err
    if code == 1:
        assert all(line.startswith("  ") and str(path) in line for line in err.splitlines()[1:]), err
        return
    code, out, err = run(capsys, ["rank", "--json", "--catalog", str(path)])
    assert code == 0, err
    strict_json(out)
    for argv in (["show", "b", "--json"], ["show", "b"]):
        code, out, err = run(capsys, [*argv, "--catalog", str(path)])
        assert code == 0 or code == 2 and "unknown build 'b'" in err, err
        if code == 0 and "--json" in argv:
            strict_json(out)
