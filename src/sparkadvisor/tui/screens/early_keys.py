"""Keys typed before a screen is ready are kept, not lost.

A pushed screen composes its widgets a moment after the key that opened it, and until
then a key has no field to go to. `EarlyKeys` screens start with a buffer that the app
fills (`SparkAdvisorApp.on_event`); once mounted, the screen focuses its first field and
hands the buffered keys, in order, to whichever field has focus by then, before any later key
is handled. Tab and Shift+Tab move the focus as they are replayed, so "a, Tab, 50%" lands in
the second field: given to a field, they would reach the screen's focus binding only after
the field had taken the keys typed behind them.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget

FOCUS_MOVES = {"tab": "focus_next", "shift+tab": "focus_previous"}
"""Keys that move the focus between fields (Textual's own bindings), as the screen methods they call."""


class EarlyKeys:
    """Mixin for a `Screen`: focus the first field on mount and replay the keys typed before."""

    early_keys: list[events.Key] | None = None
    """Keys typed before the screen was ready; None once it is."""
    FIRST_FIELD = "*"
    """A selector for the widget that takes the first keys."""

    def keep_early_keys(self) -> None:
        """Start buffering (call from __init__)."""
        self.early_keys = []

    def first_field(self) -> Widget | None:
        """The widget that takes the first keys: FIRST_FIELD, or the first that can take focus."""
        for widget in self.query(self.FIRST_FIELD):  # type: ignore[attr-defined]
            if widget.can_focus and widget.display:
                return widget
        return None

    def ready(self) -> None:
        """Focus the first field and replay the keys typed so far, each to the field focused by then
        (call from on_mount)."""
        keys, self.early_keys = self.early_keys or [], None
        field = self.first_field()
        if field is None:
            return
        self.set_focus(field)  # type: ignore[attr-defined]
        for key in keys:
            if key.key in FOCUS_MOVES:
                getattr(self, FOCUS_MOVES[key.key])()
            elif (focused := self.focused) is not None:  # type: ignore[attr-defined]
                focused._forward_event(key)


def buffered(screen: object, event: events.Event) -> bool:
    """Keep `event` for `screen` if it is a key typed before the screen is ready."""
    keys = getattr(screen, "early_keys", None)
    if keys is None or not isinstance(event, events.Key) or event.is_forwarded:
        return False
    keys.append(event)
    return True
