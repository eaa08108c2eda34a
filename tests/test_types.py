"""The type checker agrees with the code: mypy is clean on src/ (it finds wrong shapes the tests miss)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_mypy_finds_nothing_in_src(tmp_path):
    pytest.importorskip("mypy")
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "src"],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:]
