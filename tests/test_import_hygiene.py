"""The core and the CLI's text/JSON paths never load the TUI or the network stacks."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("textual", "httpx", "httpx2", "huggingface_hub")


def loaded_after(code: str) -> set[str]:
    script = f"{code}\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in result.stdout.split()}


def test_core_imports_without_tui_or_network():
    code = ("import importlib, pkgutil, sparkadvisor.core as core\n"
            "for m in pkgutil.walk_packages(core.__path__, 'sparkadvisor.core.'): importlib.import_module(m.name)")
    assert loaded_after(code) == set()


def test_every_core_module_is_checked():
    import pkgutil

    import sparkadvisor.core as core

    modules = {m.name for m in pkgutil.iter_modules(core.__path__)}
    assert {"schema", "plan", "derive", "metrics", "checkup", "fidelity"} <= modules


@pytest.mark.cold_cache  # the cold path (parse, validate, calibrate) stays light too
def test_rank_json_path_stays_light():
    code = "from sparkadvisor.cli import main\nimport io, contextlib\n" \
           "with contextlib.redirect_stdout(io.StringIO()): main(['rank', '--json'])"
    assert loaded_after(code) == set()


SRC = __import__("pathlib").Path(__file__).resolve().parents[1] / "src" / "sparkadvisor"
FORBIDDEN = {
    "core": ("sparkadvisor.tui", "sparkadvisor.commands", "sparkadvisor.cli", "sparkadvisor.render",
             "sparkadvisor.export", "sparkadvisor.sources", "textual", "rich", "httpx", "huggingface_hub"),
    "tui": ("sparkadvisor.commands", "sparkadvisor.cli", "sparkadvisor.render"),
}
"""What each layer may not import: the core is pure; the TUI and the CLI are two shells over it."""


def imported_names(path) -> set[str]:
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_layer_imports_what_its_path_says_it_may_not():
    found = []
    for layer, banned in FORBIDDEN.items():
        for path in sorted((SRC / layer).rglob("*.py")):
            found += [f"{path.relative_to(SRC)} imports {name}" for name in imported_names(path)
                      if name.startswith(banned)]
    assert found == []
