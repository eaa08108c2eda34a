"""The schema refuses what the core cannot compute, so `check` ok means `rank` and `show` work."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sparkadvisor.cli import main

SEED = Path(__file__).resolve().parents[1] / "data" / "catalogs" / "fuzz_seed.toml"


def edited(tmp_path: Path, old: str, new: str) -> Path:
    text = SEED.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "mine.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize(("old", "new", "words"), [
    ("mtp = 1.5", "mtp = 20", ["size", "mtp + tables = 20 GB but value = 16 GB", "must add up to less"]),
    ("value = 16", "value = 1e-308", ["size.value", "1e-308 is outside any sane range"]),
    ("kv_cache_gib = 20", "kv_cache_gib = 1e300", ["kv_cache_gib", "1e+300 is outside any sane range"]),
    ("total_b = 8\n", "total_b = 5e-324\n", ["params.total_b", "outside any sane range"]),
    ("value = 16", "value = true", ["size.value", "should be a valid number (got True)"]),
    ("heads = 32", "heads = 1e9", ["attention.heads", "should be a valid integer"]),
    ("kv_heads = 8", "kv_heads = 64", ["kv_heads 64 is more than heads 32"]),
    ("active_b = 8", "active_b = 80", ["active_b 80 is more than total_b 8"]),
    ("spread = 3", "low = 50\nhigh = 60", ["value 40 lies outside low-high"]),
    ("spread = 3", "kv_pinned_gib = 4", ["kv_pinned_gib is for a kv_pool_tokens measurement"]),
    ('title = "r"\n', 'title = "r"\nimage = "vllm/vllm-openai:latest; touch /tmp/x"\n',
     ["image: should be a container image reference, [REGISTRY/]NAME[:TAG], e.g. vllm/vllm-openai:v0.28.0 (got "
      "'vllm/vllm-openai:latest; touch /tmp/x')"]),
])
def test_check_refuses_what_the_core_cannot_compute(tmp_path, capsys, old, new, words):
    path = edited(tmp_path, old, new)
    code, _, err = run(capsys, "check", str(path))
    assert code == 1
    assert re.search(r"mine\.toml:\d+: ", err), err
    for word in words:
        assert word in err
    for argv in (["rank", "--json"], ["show", "b"]):
        code, out, err_again = run(capsys, *argv, "--catalog", str(path))
        assert code == 1 and out == "" and words[-1] in err_again


@pytest.mark.parametrize("depth", [40, 5000])
def test_deep_nesting_is_one_sentence(tmp_path, capsys, depth):
    path = edited(tmp_path, "[[builds]]", f"nested = {'[' * depth}{']' * depth}\n\n[[builds]]")
    code, _, err = run(capsys, "check", str(path))
    assert code == 1 and "nested" in err and "mine.toml:" in err
    assert err.count("\n") == 2


def test_an_id_twice_in_one_file_is_refused(tmp_path, capsys):
    text = SEED.read_text(encoding="utf-8")
    build = text[text.index("[[builds]]"):text.index("[builds.size]")]
    path = tmp_path / "mine.toml"
    path.write_text(text + "\n" + build, encoding="utf-8")
    code, _, err = run(capsys, "check", str(path))
    assert code == 1
    assert "builds[1] \"b\" > id: id 'b' is used twice in this file (first at builds[0])" in err
    line = int(re.search(r"mine\.toml:(\d+): ", err).group(1))
    assert path.read_text().splitlines()[line - 1] == 'id = "b"'


def test_check_dev_zero_ends_with_one_sentence(capsys):
    code, _, err = run(capsys, "check", "/dev/zero")
    assert code == 1 and "is larger than 8 MiB" in err


def test_the_seed_passes_and_its_json_is_strict(tmp_path, capsys):
    code, _, _ = run(capsys, "check", str(SEED))
    assert code == 0
    code, out, _ = run(capsys, "rank", "--json", "--catalog", str(SEED))
    assert code == 0
    json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))


@pytest.mark.cold_cache  # the one cache entry is the one this test writes
def test_a_hand_edited_cache_with_absurd_numbers_is_rebuilt(tmp_path, capsys):
    """Whoever can write the cache folder cannot feed the arithmetic what `check` would refuse."""
    from sparkadvisor import paths
    from sparkadvisor.catalogs import load_index

    cold = load_index([SEED], include_user=False)
    [entry] = [p for p in paths.cache_dir().glob("catalog-*.json")]
    data = json.loads(entry.read_text())
    data["catalog"]["recipes"][-1]["kv_cache_gib"] = 1e300
    entry.write_text(json.dumps(data))
    assert load_index([SEED], include_user=False).catalog == cold.catalog
    code, out, _ = run(capsys, "rank", "--json", "--catalog", str(SEED))
    assert code == 0 and "1e+300" not in out
