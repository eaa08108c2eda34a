"""The catalog cache: plain JSON records, checked against the version and a digest, several sets kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkadvisor import catalogs, paths
from sparkadvisor.catalogs import CACHE_KEEP, load_index
from sparkadvisor.core.records import from_plain, to_plain
from sparkadvisor.core.schema import Catalog

DATA = Path(__file__).resolve().parents[1] / "data" / "catalogs"

pytestmark = pytest.mark.cold_cache  # these tests start from an empty cache and count its entries


def entries() -> list[Path]:
    return sorted(paths.cache_dir().glob("catalog-*"))


def overlay(tmp_path: Path, number: int) -> Path:
    path = tmp_path / f"overlay-{number}.toml"
    path.write_text(f'[sources.extra-{number}]\ntitle = "Overlay {number}"\n')
    return path


def test_a_warm_load_equals_a_cold_one_and_the_cache_is_json(index):
    cold = load_index(include_user=False)
    [entry] = entries()
    data = json.loads(entry.read_text())
    assert set(data) == {"format", "version", "digest", "catalog", "calibrations"}
    warm = load_index(include_user=False)
    assert warm.catalog == cold.catalog == index.catalog
    assert warm.calibrations == cold.calibrations == index.calibrations, "the cache keeps what calibrating gives"


def test_an_edit_to_the_core_is_a_new_entry(tmp_path, monkeypatch):
    """The cache keeps calibrations, so an edit to the speed model (any core file) must not reuse them."""
    import shutil

    copy = tmp_path / "core"
    shutil.copytree(Path(catalogs.core.__file__).parent, copy)
    monkeypatch.setattr(catalogs.core, "__file__", str(copy / "__init__.py"))
    bundled = [paths.bundled("catalog.toml")]
    before = catalogs._digest(bundled, [bundled[0].read_bytes()])
    assert catalogs._digest(bundled, [bundled[0].read_bytes()]) == before
    with (copy / "speed" / "decode.py").open("a") as speed:  # a sub-package's file counts too
        speed.write("\n# an edit\n")
    assert catalogs._digest(bundled, [bundled[0].read_bytes()]) != before


def test_the_plain_form_rebuilds_every_record(index):
    assert from_plain(Catalog, json.loads(json.dumps(to_plain(index.catalog, drop_defaults=True)))) == index.catalog


def test_an_entry_of_another_digest_or_version_is_not_trusted(index):
    load_index(include_user=False)
    [entry] = entries()
    data = json.loads(entry.read_text())
    data["catalog"]["models"] = []
    for key, value in (("digest", "0" * 24), ("version", "0.0.0")):
        entry.write_text(json.dumps({**data, key: value}))
        assert load_index(include_user=False).catalog == index.catalog


def test_a_corrupt_entry_is_rebuilt(index):
    load_index(include_user=False)
    [entry] = entries()
    entry.write_text('{"format": 1, "catalog": [')
    assert load_index(include_user=False).catalog == index.catalog
    assert json.loads(entry.read_text())["catalog"]["models"]


def test_several_catalog_sets_are_kept_and_the_oldest_dropped(tmp_path):
    load_index(include_user=False)
    for number in range(CACHE_KEEP + 1):
        load_index([overlay(tmp_path, number)], include_user=False)
        time.sleep(0.01)
    kept = entries()
    assert len(kept) == CACHE_KEEP
    bundled_only = catalogs._digest([paths.bundled("catalog.toml")], [paths.bundled("catalog.toml").read_bytes()])
    assert not any(bundled_only in p.name for p in kept), "the least recently used set goes first"


def test_a_hit_keeps_its_set_in_use(tmp_path):
    first = overlay(tmp_path, 0)
    load_index([first], include_user=False)
    for number in range(1, CACHE_KEEP + 2):
        load_index([first], include_user=False)
        load_index([overlay(tmp_path, number)], include_user=False)
        time.sleep(0.01)
    digest = catalogs._digest([paths.bundled("catalog.toml"), first],
                              [paths.bundled("catalog.toml").read_bytes(), first.read_bytes()])
    assert any(digest in p.name for p in entries())


def test_orphan_temporary_files_and_old_pickles_are_removed(tmp_path):
    folder = paths.cache_dir()
    folder.mkdir(parents=True)
    orphan, fresh = folder / ".catalog-x.json.abc.tmp", folder / ".catalog-y.json.def.tmp"
    pickle = folder / "catalog-0123.pickle"
    for path in (orphan, fresh, pickle):
        path.write_text("x")
    hour_ago = time.time() - 3600
    os.utime(orphan, (hour_ago, hour_ago))
    load_index([overlay(tmp_path, 9)], include_user=False)
    assert not orphan.exists() and not pickle.exists()
    assert fresh.exists(), "a temporary file being written by another process right now is left alone"


def test_warm_rank_show_export_and_help_never_import_pydantic(tmp_path):
    env = {**os.environ}
    script = ("import sys, io, contextlib\nfrom sparkadvisor.cli import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    try: main(sys.argv[1:])\n    except SystemExit: pass\n"
              "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'pydantic_core', 'tomllib'}))")
    commands = [["rank", "--json"], ["rank", "--json"], ["show", "glm-5.3-flash-nvfp4-redhat"],
                ["export", "glm-5.3-flash-nvfp4-redhat", "--format", "shell", "--out", str(tmp_path / "out")],
                ["--help"]]
    loaded = [subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, env=env,
                             check=True).stdout.strip() for argv in commands]
    assert loaded[0] == "['pydantic', 'pydantic_core', 'tomllib']", "the first run validates and fills the cache"
    assert loaded[1:] == ["[]"] * 4
