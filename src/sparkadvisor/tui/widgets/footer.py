"""`KeyFooter`: the footer that keeps `? help` and `q quit` however narrow the screen is.

Textual's footer shows every key in order and cuts off the rest at the right edge. This
one drops the least important keys first (`tui.commands.FOOTER_RANK`) and keeps the
declared order for the ones it shows; a dialog's own keys all show. A screen may show a key
differently from its binding (`footer_key_display`: the node keys' range follows the hardware).

It is one line-drawn widget: a change of screen or of bindings repaints one line instead of
mounting a widget per key (Textual's footer recomposes ~16 widgets after every screen switch).
A click on a key presses it; hovering a key shows its tooltip.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

from sparkadvisor.tui.commands import FOOTER_RANK

PALETTE_CELLS = 13
"""What the "^p palette" key on the right takes."""
KEY_PADDING = 3
"""Spaces around and between a key and its description."""
DIMMED, PLAIN = Style(dim=True), Style()


class FooterItem(NamedTuple):
    """One key as the footer shows it: where it is and what it says."""

    key: str
    display: str
    description: str
    tooltip: str
    enabled: bool
    x: int
    """First cell, from the footer's left edge."""
    width: int

    @property
    def right(self) -> int:
        return self.x + self.width


class KeyFooter(Widget, can_focus=False):
    """The screen's keys, the most important ones when they do not all fit."""

    ALLOW_SELECT = False
    DEFAULT_CSS = """
    KeyFooter { dock: bottom; height: 1; color: $footer-foreground; background: $footer-background; }
    KeyFooter > .key-footer--key { color: $footer-key-foreground; background: $footer-key-background;
                                   text-style: bold; }
    KeyFooter > .key-footer--description { color: $footer-description-foreground;
                                           background: $footer-description-background; }
    KeyFooter > .key-footer--separator { color: $foreground 20%; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"key-footer--key", "key-footer--description", "key-footer--separator"}

    def __init__(self) -> None:
        super().__init__()
        self._items: list[FooterItem] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen: Screen[object]) -> None:
        self.refresh()

    def _shown(self, width: int) -> list[tuple[Binding, bool, str]]:
        bindings = [(b, enabled, tooltip) for (_, b, enabled, tooltip) in self.screen.active_bindings.values()
                    if b.show]
        unique = list({b.action: (b, e, t) for b, e, t in reversed(bindings)}.values())[::-1]
        room = width - PALETTE_CELLS
        keep: set[str] = set()
        for binding, _, _ in sorted(unique, key=lambda item: FOOTER_RANK.get(item[0].action, 5)):
            cells = len(self._key_display(binding)) + len(binding.description) + KEY_PADDING
            if cells > room:
                break
            keep.add(binding.action)
            room -= cells
        return [item for item in unique if item[0].action in keep]

    def _key_display(self, binding: Binding) -> str:
        """The key as the screen shows it (its `footer_key_display`), else as the app does."""
        shown: str | None = getattr(self.screen, "footer_key_display", lambda _b: None)(binding)
        return shown if shown is not None else self.app.get_key_display(binding)

    def items(self) -> list[FooterItem]:
        """The keys on the line, left to right, the command palette's last (as last drawn)."""
        return list(self._items)

    def render(self) -> Text:
        width = self.size.width or self.app.size.width
        key_style = self.get_component_rich_style("key-footer--key")
        description_style = self.get_component_rich_style("key-footer--description")
        dim = self.get_component_rich_style("key-footer--separator")
        text = Text(no_wrap=True, overflow="crop", end="")
        items: list[FooterItem] = []
        for binding, enabled, tooltip in self._shown(width):
            display = self._key_display(binding)
            start = text.cell_len
            text.append(f" {display} ", key_style + (DIMMED if not enabled else PLAIN))
            text.append(f"{binding.description} ", description_style + (DIMMED if not enabled else PLAIN))
            items.append(FooterItem(binding.key, display, binding.description, tooltip or binding.description,
                                    enabled, start, text.cell_len - start))
        active = self.screen.active_bindings
        if self.app.ENABLE_COMMAND_PALETTE and self.app.COMMAND_PALETTE_BINDING in active:
            _, binding, enabled, _ = active[self.app.COMMAND_PALETTE_BINDING]
            display = self.app.get_key_display(binding)
            label = f"{display} {binding.description} "
            start = max(text.cell_len, width - len(label) - 1)
            text.pad_right(start - text.cell_len)
            text.append("▏", dim)
            text.append(display, key_style)
            text.append(f" {binding.description} ", description_style)
            items.append(FooterItem(binding.key, display, binding.description,
                                    binding.tooltip or binding.description, enabled, start, len(label) + 1))
        self._items = items
        return text

    def _item_at(self, x: int) -> FooterItem | None:
        return next((item for item in self._items if item.x <= x < item.right), None)

    def on_click(self, event: events.Click) -> None:
        item = self._item_at(event.x)
        if item is None:
            return
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        item = self._item_at(event.x)
        self.tooltip = item.tooltip if item else None

    def on_resize(self) -> None:
        self.refresh()

