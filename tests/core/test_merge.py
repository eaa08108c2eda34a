"""--catalog FILE merges a user's catalog over the bundled one: add, or replace by id."""

from __future__ import annotations

import json
from pathlib import Path

from sparkadvisor.catalogs import load_index
from sparkadvisor.cli import main

USER = Path(__file__).resolve().parents[1] / "data" / "catalogs" / "user_addition.toml"


def test_user_catalog_adds_a_build_and_replaces_one_by_id():
    index = load_index([USER], include_user=False)
    assert "tiny-dense-fp8" in index.builds
    assert index.builds["gpt-oss-120b-mxfp4"].size.value == 70
    assert "deepseek-v4.1-flash" in index.builds


def test_rank_json_lists_the_added_build(capsys):
    assert main(["rank", "--nodes", "1", "--catalog", str(USER), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    builds = {c["build"]: c for c in data["candidates"]}
    assert builds["tiny-dense-fp8"]["fits"] is True
    assert builds["tiny-dense-fp8"]["kv_basis"] == "config"
