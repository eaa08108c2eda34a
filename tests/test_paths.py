"""The user's folders: the XDG rule sparkadvisor works out on Linux is the one platformdirs applies."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs
import pytest

from sparkadvisor import paths

FOLDERS = [(paths.config_dir, "user_config_dir", "XDG_CONFIG_HOME"), (paths.data_dir, "user_data_dir", "XDG_DATA_HOME"),
           (paths.state_dir, "user_state_dir", "XDG_STATE_HOME"), (paths.cache_dir, "user_cache_dir", "XDG_CACHE_HOME")]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG rule is worked out on Linux only")
@pytest.mark.parametrize(("ours", "theirs", "variable"), FOLDERS)
@pytest.mark.parametrize("xdg", ["unset", "absolute", "relative"])
def test_each_folder_is_where_platformdirs_puts_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   ours, theirs, variable, xdg: str) -> None:
    monkeypatch.delenv("SPARKADVISOR_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if xdg == "unset":
        monkeypatch.delenv(variable, raising=False)
    else:
        monkeypatch.setenv(variable, str(tmp_path / "xdg") if xdg == "absolute" else "relative/xdg")
    assert ours() == Path(getattr(platformdirs, theirs)("sparkadvisor"))


def test_sparkadvisor_home_puts_every_folder_under_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    assert [ours() for ours, _, _ in FOLDERS] == [tmp_path / k for k in ("config", "data", "state", "cache")]


def test_undoing_every_patch_still_keeps_the_tests_out_of_the_developers_folders(monkeypatch: pytest.MonkeyPatch):
    """A test that calls monkeypatch.undo() drops its own home too; what it writes next must still land in a
    temporary folder, not in the developer's catalog, cache or settings."""
    monkeypatch.undo()
    for folder in (paths.config_dir(), paths.data_dir(), paths.state_dir(), paths.cache_dir()):
        assert not folder.is_relative_to(Path.home()), folder
        assert folder.is_relative_to(Path(os.environ["SPARKADVISOR_HOME"]))
