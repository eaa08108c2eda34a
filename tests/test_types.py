"""The type checker agrees with the code: mypy is clean on src/ (it finds wrong shapes the tests miss)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_mypy_finds_nothing_in_src():
    pytest.importorskip("mypy")
    # mypy's own incremental cache (.mypy_cache in the checkout, as `mypy src` before a landing leaves it):
    # it re-checks every file whose source or dependencies changed, so the verdict is the same as a cold run.
    result = subprocess.run([sys.executable, "-m", "mypy", "src"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:]
