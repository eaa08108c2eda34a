"""Edit the workload's assumptions and the cluster-wide settings; every keystroke re-ranks.

The panel sits at the right so the table stays visible behind it. A value that does not
parse is marked inline with one sentence and changes nothing until it is fixed.
"""

from __future__ import annotations

from argparse import ArgumentTypeError
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, Static

from sparkadvisor.core.formats import KV_DTYPE_BYTES
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.workload import Settings, Workload
from sparkadvisor.inputs import fraction, share, token_count
from sparkadvisor.tui.screens.early_keys import EarlyKeys
from sparkadvisor.tui.widgets.footer import KeyFooter


def kv_dtype(text: str) -> str:
    """A vLLM --kv-cache-dtype the core knows."""
    if text not in KV_DTYPE_BYTES:
        raise ArgumentTypeError(f"{text!r} is not a KV dtype; use one of {', '.join(KV_DTYPE_BYTES)}")
    return text


@dataclass(frozen=True, slots=True)
class Field:
    """One editable assumption."""

    key: str
    label: str
    parse: Callable[[str], object]
    optional: bool = False
    """Blank means "each recipe's own value"."""


FIELDS = (
    Field("context_tokens", "Context (prompt tokens per turn)", token_count),
    Field("prefix_reuse", "Prefix reuse (0-1 or 95%)", share),
    Field("output_tokens", "Output tokens per turn", token_count),
    Field("gpu_memory_utilization", "gpu-memory-utilization (blank: per recipe)", fraction, optional=True),
    Field("kv_cache_dtype", "KV cache dtype (blank: per recipe)", kv_dtype, optional=True),
    Field("min_capability", "Minimum capability (e.g. 80%; blank: all)", share, optional=True),
)
"""The fields in order. `min_capability` is a share of the frontier reference score; it hides builds
below it and those of unknown capability. Labels fit the panel at 80 columns."""

OnChange = Callable[[Workload, Settings, float | None], None]
"""Called with the new workload, settings and minimum capability after each valid change."""


def initial_text(workload: Workload, settings: Settings, min_capability: float | None, key: str) -> str:
    """The field's current value as text."""
    if key == "min_capability":
        return "" if min_capability is None else f"{min_capability:.0%}"
    value = getattr(workload if hasattr(workload, key) else settings, key)
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


def parse_fields(texts: dict[str, str]) -> tuple[dict[str, object], dict[str, str]]:
    """(values, errors) for the typed texts; a blank optional field is None."""
    values: dict[str, object] = {}
    errors: dict[str, str] = {}
    for field in FIELDS:
        text = texts[field.key].strip()
        if not text and field.optional:
            values[field.key] = None
            continue
        try:
            values[field.key] = field.parse(text)
        except (ArgumentTypeError, ValueError) as error:
            errors[field.key] = str(error) if text else "required"
    return values, errors


class AssumptionsScreen(EarlyKeys, ModalScreen[None]):
    """The workload's assumptions, applied as you type."""

    CSS_PATH = "assumptions.tcss"
    FIRST_FIELD = "#context_tokens"
    BINDINGS = [Binding("escape", "dismiss", "Close", id="assumptions.close", tooltip="Close; the valid values stay"),
                Binding("tab", "app.focus_next", "Next field", id="assumptions.next", tooltip="The next field")]

    def __init__(self, workload: Workload, settings: Settings, min_capability: float | None, on_change: OnChange,
                 summary: Callable[[], str] | None = None):
        super().__init__()
        self.keep_early_keys()
        self.workload = workload
        self.settings = settings
        self.min_capability = min_capability
        self.on_change = on_change
        self.summary = summary
        """The highlighted build's figures now: at 80 columns this panel covers the table's."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="assumptions", can_focus=False):
            yield Static(f"{self.workload.label}: assumptions", id="assumptions-title")
            yield Static("", id="assumptions-effect", markup=False)
            for field in FIELDS:
                yield Label(field.label, markup=False)
                suggester = SuggestFromList(list(KV_DTYPE_BYTES)) if field.key == "kv_cache_dtype" else None
                yield Input(initial_text(self.workload, self.settings, self.min_capability, field.key), id=field.key,
                            suggester=suggester, compact=True)
                error = Label("", id=f"{field.key}-error", classes="error", markup=False)  # it quotes what was typed
                error.display = False
                yield error
            yield Static("Esc or Enter closes. Every valid change re-ranks at once.", id="assumptions-help")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._show_effect()
        self.ready()

    def _show_effect(self) -> None:
        effect = self.query_one("#assumptions-effect", Static)
        effect.display = self.summary is not None
        if self.summary is not None:
            effect.update(safe_text(self.summary()))

    def on_input_changed(self, event: Input.Changed) -> None:
        texts = {f.key: self.query_one(f"#{f.key}", Input).value for f in FIELDS}
        values, errors = parse_fields(texts)
        for field in FIELDS:
            self.query_one(f"#{field.key}", Input).set_class(field.key in errors, "-invalid")
            error = self.query_one(f"#{field.key}-error", Label)
            error.update(safe_text(errors.get(field.key, "")))
            error.display = field.key in errors  # an empty one would take a line that 80x24 needs
        if errors:
            return
        changes = {k: values[k] for k in ("context_tokens", "prefix_reuse", "output_tokens")}
        workload = self.workload.changed(**changes)  # type: ignore[arg-type]
        settings = replace(self.settings, gpu_memory_utilization=cast("float | None", values["gpu_memory_utilization"]),
                           kv_cache_dtype=cast("str | None", values["kv_cache_dtype"]))
        minimum = cast("float | None", values["min_capability"])
        if (workload, settings, minimum) != (self.workload, self.settings, self.min_capability):
            self.workload, self.settings, self.min_capability = workload, settings, minimum
            self.on_change(workload, settings, minimum)
            self._show_effect()

    def on_input_submitted(self) -> None:
        self.dismiss()
