"""Every command of the main screen, declared once: its key, footer text, tooltip and
command-palette entry ("category: Action") all come from the same line."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher
from textual.markup import escape

if TYPE_CHECKING:
    from textual.screen import Screen


@dataclass(frozen=True, slots=True)
class Command:
    """A user command: one key, one action, one palette entry."""

    key: str
    action: str
    footer: str
    """Short footer text."""
    tooltip: str
    """What it does, in a sentence."""
    category: str
    """Palette category, e.g. "workload"."""
    title: str
    """Palette action, e.g. "Toggle agentic / chat"."""
    show: bool = True
    """Shown in the footer."""
    in_help: bool = True
    """Listed in the help (2-8 are listed as the 1-8 row)."""
    key_display: str | None = None
    footer_rank: int = 5
    """Which footer keys a narrow screen keeps: lower first (help and quit are 0). At 80 columns the ranks up
    to 2 fit: the keys that change the answer (workload, nodes, assumptions) and the filter; Enter is also
    named on the detail pane's border, and a column header sorts when clicked."""

    @property
    def palette_text(self) -> str:
        """"workload: Toggle agentic / chat"."""
        return f"{self.category}: {self.title}"

    def binding(self) -> Binding:
        """The Textual binding, with an id and a tooltip."""
        binding_id = f"{self.category}-{self.action}".replace("app.", "")
        binding_id = binding_id.replace("(", "-").replace(")", "").replace("_", "-")
        return Binding(self.key, self.action, self.footer, show=self.show, tooltip=self.tooltip,
                       id=binding_id, key_display=self.key_display, priority=True)


MAX_NODE_KEY = 8
"""The node keys are 1 to 8."""
COMMANDS: tuple[Command, ...] = (
    Command("w", "toggle_workload", "Workload", "Switch between the agentic (Claude Code) and chat workloads "
            "and re-rank every build at once.", "workload", "Toggle agentic / chat", footer_rank=1),
    Command("1", "nodes(1)", "Nodes", "Set the cluster size: 1 to 8 nodes, as many as the hardware's catalog "
            "entry sweeps (DGX Spark: 4).", "cluster", "1 node", key_display="1-8", footer_rank=1),
    *(Command(str(n), f"nodes({n})", f"{n} nodes", f"A cluster of {n} nodes.", "cluster", f"{n} nodes", show=False,
              in_help=False) for n in range(2, MAX_NODE_KEY + 1)),
    Command("enter", "open_build", "Open", "The highlighted build full-screen: the arithmetic, the 1-4 node "
            "sweep, caveats with sources, export (Esc returns).", "build", "Open highlighted build",
            key_display="⏎", footer_rank=3),
    Command("slash", "filter", "Filter", "Show only builds whose model, id or repo contains the text (Esc clears).",
            "view", "Filter by name", key_display="/", footer_rank=2),
    Command("s", "pick_sort", "Sort", "Sort the table by a column (clicking a header does the same; again reverses).",
            "view", "Sort by column", footer_rank=3),
    Command("h", "pick_hardware", "Hardware", "Choose the node type from the catalog's hardware.",
            "cluster", "Pick hardware", footer_rank=3),
    Command("a", "edit_assumptions", "Assumptions", "Edit context, prefix reuse, output tokens, streams, "
            "gpu-memory-utilization, max model length, batched tokens, KV dtype, engine, mode, speculation and "
            "minimum capability; every number is recomputed as you type.",
            "workload", "Edit assumptions", footer_rank=2),
    Command("m", "toggle_group", "Group", "One row per model (its best build for the workload); right arrow "
            "expands a model to its builds, left folds it.", "view", "Group by model", footer_rank=4),
    Command("v", "toggle_wide", "Wide", "Every column at full width, scrolling sideways with the arrows "
            "(rank, model and build stay put); again for the columns that fit.", "view", "Wide view", footer_rank=4),
    Command("space", "mark", "Mark", "Mark or unmark the highlighted build for comparison (up to three).",
            "build", "Mark for compare", key_display="␣", footer_rank=5),
    Command("c", "compare", "Compare", "The marked builds (or the highlighted one and the marked one) side by "
            "side: engine and split, fit, KV pool, speed, first token cached and cold, caveats.", "build",
            "Compare marked builds", footer_rank=5),
    Command("e", "export", "Export", "Export the highlighted build as a launch recipe: vLLM or llama.cpp "
            "scripts, vLLM config, compose, Claude Code settings, report, JSON.", "build", "Export highlighted build",
            footer_rank=4),
    Command("i", "hub_import", "Import", "Import a build from the Hugging Face hub into your catalog.",
            "catalog", "Import from the hub", footer_rank=6),
    Command("b", "bench", "Bench", "Measure the served build on your cluster (cold and warm first token, decode) "
            "beside the plan; Record adds the run to your catalog.", "service", "Bench the served build",
            show=False),
    Command("t", "cycle_theme", "Theme", "Switch to the next theme (bundled and your own).", "app", "Next theme",
            footer_rank=6),
    Command("question_mark", "help", "Help", "Keys, the legend of glyphs and marks, what each figure's basis "
            "means, and where files live.", "app", "Help", key_display="?", footer_rank=0),
    Command("q", "quit", "Quit", "Leave sparkadvisor; your theme, workload, hardware and nodes are kept.",
            "app", "Quit", footer_rank=0),
)
FOOTER_RANK = {c.action: c.footer_rank for c in COMMANDS}


def bindings() -> list[Binding]:
    """The main screen's bindings, in footer order."""
    return [c.binding() for c in COMMANDS]


class SparkCommands(Provider):
    """The main screen's commands in the palette, as "category: Action"."""

    def _commands(self) -> list[tuple[str, str, str]]:
        return screen_commands(self.screen)

    def _runner(self, action: str) -> partial[Any]:
        return partial(self.screen.run_action, action)

    async def discover(self) -> Hits:
        """Every command, before anything is typed."""
        for text, action, help_text in self._commands():
            yield DiscoveryHit(Content(text), self._runner(action), text=text, help=escape(help_text))

    async def search(self, query: str) -> Hits:
        """Commands matching the typed text."""
        matcher = self.matcher(query)
        for text, action, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, highlight(matcher, text), self._runner(action), text=text, help=escape(help_text))


def highlight(matcher: Matcher, text: str) -> Content:
    """`text` with the matched characters marked, as text: `Matcher.highlight` reads it as markup, and a
    user's theme named "Bob's [/]" would raise (the palette's help is escaped for the same reason)."""
    content = Content(text)
    _, offsets = matcher.fuzzy_search.match(matcher.query, text)
    for offset in offsets:
        if not text[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


def screen_commands(screen: Screen[object]) -> list[tuple[str, str, str]]:
    """(palette text, action, help) for every command on `screen`, with its own extras
    (its `palette_extras()`, e.g. "sort: By 1st token")."""
    extra: list[tuple[str, str, str]] = getattr(screen, "palette_extras", lambda: [])()
    return [(c.palette_text, c.action, c.tooltip) for c in COMMANDS] + list(extra)
