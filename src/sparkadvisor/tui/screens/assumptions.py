"""Edit the workload's assumptions and the cluster-wide settings; every keystroke re-ranks.

The panel sits at the right so the table stays visible behind it. A value that does not
parse is marked inline with one sentence and keeps its last value until it is fixed; the others apply.
"""

from __future__ import annotations

import re
from argparse import ArgumentTypeError
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, Static

from sparkadvisor.core.formats import KV_DTYPE_BYTES
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.workload import ENGINES, Settings, Workload, batch_room
from sparkadvisor.inputs import fraction, share, stream_count, token_count
from sparkadvisor.tui.screens.early_keys import EarlyKeys
from sparkadvisor.tui.widgets.footer import KeyFooter


def kv_dtype(text: str) -> str:
    """A vLLM --kv-cache-dtype the core knows."""
    if text not in KV_DTYPE_BYTES:
        raise ArgumentTypeError(f"{text!r} is not a KV dtype; use one of {', '.join(KV_DTYPE_BYTES)}")
    return text


MODES = {"eager": True, "graphs": False}
"""Execution modes by name: eager is vLLM's --enforce-eager, graphs its CUDA graphs."""


def engine_name(text: str) -> str:
    """An engine the speed constants know."""
    if text not in ENGINES:
        raise ArgumentTypeError(f"{text!r} is not an engine; use one of {', '.join(ENGINES)}")
    return text


def mode_name(text: str) -> bool:
    """--enforce-eager as a word: eager (True) or graphs (False)."""
    if text not in MODES:
        raise ArgumentTypeError(f"{text!r} is not a mode; use eager or graphs")
    return MODES[text]


def speculation_name(text: str) -> bool:
    """Speculative decoding off for every recipe ("off"); blank keeps each recipe's drafter."""
    if text != "off":
        raise ArgumentTypeError(f"{text!r} is not a speculation setting; use off, or leave it blank for each "
                                "recipe's own")
    return False


@dataclass(frozen=True, slots=True)
class Field:
    """One editable assumption."""

    key: str
    label: str
    parse: Callable[[str], object]
    hint: str = ""
    """What the field takes, or what blank means; shown while it is blank."""
    optional: bool = False
    """Blank means "each recipe's own value"."""


FIELDS = (
    Field("context_tokens", "Prompt tokens/turn", token_count, "e.g. 100000 or 100k"),
    Field("prefix_reuse", "Prefix reuse", share, "0-1 or 95%"),
    Field("output_tokens", "Output tokens/turn", token_count, "e.g. 200"),
    Field("streams", "Streams at once", stream_count, "1 or more"),
    Field("gpu_memory_utilization", "Memory utilization", fraction, "per recipe (0-1)", optional=True),
    Field("max_model_len", "Max model length", token_count, "per recipe (e.g. 64k)", optional=True),
    Field("batched_tokens", "Batched tokens", token_count, "per recipe (8192)", optional=True),
    Field("kv_cache_dtype", "KV cache dtype", kv_dtype, "per recipe", optional=True),
    Field("engine", "Engine, no recipe", engine_name, "the build's own", optional=True),
    Field("enforce_eager", "Mode", mode_name, "per recipe: eager, graphs", optional=True),
    Field("speculation", "Speculation", speculation_name, "per recipe (off)", optional=True),
    Field("min_capability", "Min capability", share, "all (e.g. 80%)", optional=True),
)
"""The fields in order, one line each. Memory utilization is vLLM's --gpu-memory-utilization, the max model
length its --max-model-len (a ceiling: each build serves the smaller of it and its own longest), batched
tokens its --max-num-batched-tokens (the prefill chunk, and what a sliding window keeps beside it; llama.cpp's
--ubatch-size), the mode
its --enforce-eager (eager) or CUDA graphs, the engine the one a build without a recipe is costed on,
speculation "off" every recipe without its drafter.
`min_capability` is a share of the frontier reference score; it hides builds below it and those of
unknown capability. A label and its hint fit the panel at 80 columns."""

WORKLOAD_KEYS = ("context_tokens", "prefix_reuse", "output_tokens", "streams")
"""The fields that are the workload's; `SETTINGS_KEYS` are the cluster-wide settings'."""
SETTINGS_KEYS = ("gpu_memory_utilization", "kv_cache_dtype", "max_model_len", "batched_tokens", "engine",
                 "enforce_eager", "speculation")

SUGGESTIONS = {"kv_cache_dtype": list(KV_DTYPE_BYTES), "engine": list(ENGINES), "enforce_eager": list(MODES),
               "speculation": ["off"]}
"""What a field completes to as it is typed."""

OnChange = Callable[[Workload, Settings, float | None], None]
"""Called with the new workload, settings and minimum capability after each valid change."""


def initial_text(workload: Workload, settings: Settings, min_capability: float | None, key: str) -> str:
    """The field's current value as text."""
    if key == "min_capability":
        return "" if min_capability is None else f"{min_capability:.0%}"
    value = getattr(workload if hasattr(workload, key) else settings, key)
    if value is None:
        return ""
    if key == "enforce_eager":
        return "eager" if value else "graphs"
    if key == "speculation":
        return "off"  # False: None (each recipe's own) returned "" above
    return f"{value:g}" if isinstance(value, float) else str(value)


def parse_fields(texts: dict[str, str], streams_in_force: int = 1) -> tuple[dict[str, object], dict[str, str]]:
    """(values, errors) for the typed texts; a blank optional field is None. The batched tokens must hold the
    streams (the typed ones, else `streams_in_force`); where they cannot, both fields say so and neither applies."""
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
    streams = values.get("streams", streams_in_force)
    if isinstance(streams, int) and "batched_tokens" not in errors \
            and (why := batch_room(cast("int | None", values.get("batched_tokens")), streams)):
        errors["batched_tokens"] = why
        errors.setdefault("streams", why)
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
                suggester = SuggestFromList(SUGGESTIONS[field.key]) if field.key in SUGGESTIONS else None
                with Horizontal(classes="field"):
                    yield Label(field.label, markup=False)
                    yield Input(initial_text(self.workload, self.settings, self.min_capability, field.key),
                                placeholder=field.hint, id=field.key, suggester=suggester, compact=True)
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
        values, errors = self._parsed()
        for field in FIELDS:
            self.query_one(f"#{field.key}", Input).set_class(field.key in errors, "-invalid")
            error = self.query_one(f"#{field.key}-error", Label)
            error.update(safe_text(errors.get(field.key, "")))
            error.display = field.key in errors  # an empty one would take a line that 80x24 needs
        # Each valid field applies on its own; one that does not parse keeps its last value until it does.
        valid = {k: v for k, v in values.items() if k not in errors}
        workload = self.workload.changed(**{k: valid[k] for k in WORKLOAD_KEYS if k in valid})  # type: ignore[arg-type]
        settings = replace(self.settings, **{k: valid[k] for k in SETTINGS_KEYS if k in valid})  # type: ignore[arg-type]
        minimum = cast("float | None", valid.get("min_capability", self.min_capability))
        if (workload, settings, minimum) != (self.workload, self.settings, self.min_capability):
            self.workload, self.settings, self.min_capability = workload, settings, minimum
            self.on_change(workload, settings, minimum)
            self._show_effect()

    async def on_input_submitted(self) -> None:
        await self.action_dismiss()

    async def action_dismiss(self, result: None = None) -> None:
        """Close; a field left invalid says that its last valid value stays."""
        _, errors = self._parsed()
        kept = [f"{f.label} stays {self._current(f.key)} ({errors[f.key]})" for f in FIELDS if f.key in errors]
        if kept:
            self.app.notify(safe_text("; ".join(kept)), title="Not applied", severity="warning")
        await super().action_dismiss(result)

    def _parsed(self) -> tuple[dict[str, object], dict[str, str]]:
        """`parse_fields` of what the fields hold now, against the streams in force."""
        texts = {f.key: self.query_one(f"#{f.key}", Input).value for f in FIELDS}
        return parse_fields(texts, self.workload.streams)

    def _current(self, key: str) -> str:
        """A field's value in force, in words: the text it opened with now, or what blank means ("per recipe")."""
        return initial_text(self.workload, self.settings, self.min_capability, key) or re.split(
            r" \(|:", next(f.hint for f in FIELDS if f.key == key))[0]
