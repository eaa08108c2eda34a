"""The one atomic writer: all of the new text or none of it, and no temporary file left behind."""

from __future__ import annotations

import os

import pytest

from sparkadvisor.atomic import write_atomic


def test_it_replaces_the_file_creates_the_folder_and_sets_the_mode(tmp_path):
    path = tmp_path / "a" / "b" / "x.sh"
    write_atomic(path, "one\n")
    write_atomic(path, "two\n", mode=0o755, durable=True)
    assert path.read_bytes() == b"two\n"
    assert os.stat(path).st_mode & 0o777 == 0o755
    assert [p.name for p in path.parent.iterdir()] == ["x.sh"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "catalog.toml"
    path.write_text("what the user wrote\n")

    def refuse(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        write_atomic(path, "half of something new")
    assert path.read_text() == "what the user wrote\n"
    assert [p.name for p in tmp_path.iterdir()] == ["catalog.toml"]
