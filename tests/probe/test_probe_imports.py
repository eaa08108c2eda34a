"""The probe keeps the architecture: a pure core, and a parser that costs no network library."""

from __future__ import annotations

import subprocess
import sys


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_metrics_and_checkup_core_is_pure() -> None:
    loaded = _loaded_after("import sparkadvisor.core.metrics, sparkadvisor.core.checkup")
    assert not loaded & {"httpx", "textual", "rich", "huggingface_hub"}


def test_building_the_parser_does_not_import_httpx() -> None:
    loaded = _loaded_after("from sparkadvisor.cliparser import build_parser; build_parser()")
    assert "httpx" not in loaded and "sparkadvisor.sources.probe" not in loaded


def test_the_status_widget_imports_httpx_only_when_it_polls() -> None:
    loaded = _loaded_after("from sparkadvisor.tui.widgets.probe_status import ProbeStatus; ProbeStatus()")
    assert "httpx" not in loaded
