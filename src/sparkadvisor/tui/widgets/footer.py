"""`KeyFooter`: the footer that keeps `? help` and `q quit` however narrow the screen is.

Textual's footer shows every key in order and cuts off the rest at the right edge. This
one drops the least important keys first (`tui.commands.FOOTER_RANK`) and keeps the
declared order for the ones it shows; a dialog's own keys all show.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from sparkadvisor.tui.commands import FOOTER_RANK

PALETTE_CELLS = 13
"""What the "^p palette" key on the right takes."""
KEY_PADDING = 3
"""Spaces around and between a key and its description."""


class KeyFooter(Footer):
    """The screen's keys, the most important ones when they do not all fit."""

    def __init__(self) -> None:
        super().__init__()
        self._fitted_width = 0

    def _shown(self) -> list[tuple[Binding, bool, str]]:
        bindings = [(b, enabled, tooltip) for (_, b, enabled, tooltip) in self.screen.active_bindings.values()
                    if b.show]
        unique = list({b.action: (b, e, t) for b, e, t in reversed(bindings)}.values())[::-1]
        room = (self.size.width or self.app.size.width) - PALETTE_CELLS
        keep: set[str] = set()
        for binding, _, _ in sorted(unique, key=lambda item: FOOTER_RANK.get(item[0].action, 5)):
            cells = len(self.app.get_key_display(binding)) + len(binding.description) + KEY_PADDING
            if cells > room:
                break
            keep.add(binding.action)
            room -= cells
        return [item for item in unique if item[0].action in keep]

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        self._fitted_width = self.size.width
        for binding, enabled, tooltip in self._shown():
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description,
                            binding.action, disabled=not enabled,
                            tooltip=tooltip or binding.description).data_bind(compact=Footer.compact)
        active = self.screen.active_bindings
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and \
                self.app.COMMAND_PALETTE_BINDING in active:
            _, binding, enabled, _ = active[self.app.COMMAND_PALETTE_BINDING]
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                            classes="-command-palette", disabled=not enabled,
                            tooltip=binding.tooltip or binding.description)

    def on_resize(self) -> None:
        if self.size.width != self._fitted_width and self._bindings_ready:
            self.call_after_refresh(self.recompose)
