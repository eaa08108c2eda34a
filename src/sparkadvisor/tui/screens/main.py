"""The main screen: header, ranked candidates, detail pane, service status and keys.

State (scenario, sort, filter, grouping) lives here; every figure comes from the core
through `tui.model`. A change of scenario swaps the ranking and the row order in the
table, which repaints only the rows on screen.

The command keys are priority bindings, handled in the order they were typed before any
widget sees them: `/` focuses the filter and `a` opens the assumptions at once, so keys
typed right after them land in the text field. While a text field has focus, a command
key is typed into it instead (`typing_guard`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input

from sparkadvisor.core.catalog import CatalogError
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import COLUMNS
from sparkadvisor.core.units import plural
from sparkadvisor.core.workload import WORKLOADS, Settings, Workload
from sparkadvisor.tui import commands
from sparkadvisor.tui.model import RANK_COLUMN, Ranking, RankingCache, Scenario, matches, sweep
from sparkadvisor.tui.widgets.candidates import CandidatesTable
from sparkadvisor.tui.widgets.cluster_header import ClusterHeader
from sparkadvisor.tui.widgets.detail import DetailPane
from sparkadvisor.tui.widgets.footer import KeyFooter
from sparkadvisor.tui.widgets.probe_status import ProbeStatus

if TYPE_CHECKING:
    from sparkadvisor.core.checkup import Replan, Reutilize, ServedModel
    from sparkadvisor.core.metrics import ServedConfig
    from sparkadvisor.core.plan import Plan
    from sparkadvisor.core.ranking import Ranked
    from sparkadvisor.tui.app import SparkAdvisorApp

LABELS = {c.key: c.label for c in COLUMNS}
PRECOMPUTE_DELAY_S = 0.3
"""Ranking the scenarios a key would ask for waits until the first frame is painted."""
F = TypeVar("F", bound=Callable[..., Any])
TABLE_MOVES = (("up,k", "cursor(-1)"), ("down,j", "cursor(1)"), ("pageup,ctrl+b", "page(-1)"),
               ("pagedown,ctrl+f", "page(1)"), ("home,g", "first"), ("end,G", "last"), ("left", "left"),
               ("right", "right"))
"""The table's moves, handled in typing order with the command keys (a move typed before `c`
or `e` happens before it)."""


def typing_guard(action: F) -> F:
    """A command key typed into a text field is text, not a command."""
    @wraps(action)
    def guarded(self: MainScreen, *args: Any) -> Any:
        if isinstance(self.focused, Input):
            raise SkipAction()
        return action(self, *args)
    return guarded  # type: ignore[return-value]


class FilterBox(Input):
    """The filter field, whose footer says what Enter and Esc do there."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "submit", "Keep filter", key_display="⏎"),
        Binding("escape", "screen.close_filter", "Clear filter"),
    ]


GUARDED = frozenset(c.action.split("(")[0] for c in commands.COMMANDS)
"""The command keys' actions: while a text field has focus their keys are text (and off the footer)."""


class MainScreen(Screen[None]):
    """Browse the catalog ranked for a cluster and workload."""

    # main.tcss is read by the app (SparkAdvisorApp.CSS_PATH): the default screen's CSS_PATH is not.
    BINDINGS: ClassVar[list[BindingType]] = [
        *commands.bindings(), Binding("escape", "close_filter", "Clear filter", show=False),
        *(Binding(keys, f"move('{move}')", move, show=False, priority=True) for keys, move in TABLE_MOVES)]
    COMMANDS = Screen.COMMANDS | {commands.SparkCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]

    def __init__(self, index: CatalogIndex, scenario: Scenario, catalog_paths: list[Path]):
        super().__init__()
        self.index = index
        self.catalog_paths = catalog_paths
        self.cache = RankingCache(index)
        self.scenario = scenario
        self.overrides: dict[str, Workload] = {scenario.workload.kind: scenario.workload}
        self.ranking: Ranking = self.cache.get(scenario)
        self.sort_column, self.sort_reverse = RANK_COLUMN, False
        self.filter_text = ""
        self._detail_for: tuple[int, str] | None = None
        self._precompute_timer: Timer | None = None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While a text field has focus the command keys are typed into it, so the footer leaves them out."""
        return not (action in GUARDED and isinstance(self.focused, Input))

    def footer_key_display(self, binding: Binding) -> str | None:
        """The node keys as the range the hardware sweeps ("1-4" on a DGX Spark, "1-8" on an H100)."""
        if binding.action != "nodes(1)":
            return None
        limit = min(self.index.hardware[self.scenario.hardware_id].max_nodes, commands.MAX_NODE_KEY)
        return "1" if limit == 1 else f"1-{limit}"

    @property
    def spark(self) -> SparkAdvisorApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    @property
    def table(self) -> CandidatesTable:
        """The candidates table."""
        return self.query_one(CandidatesTable)

    def compose(self) -> ComposeResult:
        header = ClusterHeader(id="cluster-header")
        header.show(self.ranking.cluster, self.scenario.workload, self.scenario.settings)
        yield header
        box = FilterBox(placeholder="filter by model, build id or repo (Enter keeps it, Esc clears)", id="filter",
                        compact=True)
        box.display = False
        yield box
        yield CandidatesTable(self.ranking, id="candidates")
        yield DetailPane(id="detail")
        yield ProbeStatus(id="status")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#detail").border_title = "⏎ full screen · Tab here to scroll"
        self._refresh_views()
        self.set_focus(self.table)
        # After the first frame: a ranking thread would compete with it for the interpreter.
        self._schedule_precompute()

    # --- applying a scenario --------------------------------------------------------

    def apply(self, scenario: Scenario, top: bool = False) -> None:
        """Re-rank for `scenario`. The cursor stays on its build (scrolled into view) while the build is
        still a candidate; when the change rules it out (`1` on a build that needs two nodes: it no
        longer fits, or a caveat now excludes it), the cursor and the view go to the top-ranked build,
        where what does fit is. A build already ruled out before the change keeps the cursor."""
        before, build = self.ranking, self.table.highlighted_build
        self.scenario = scenario
        self.overrides[scenario.workload.kind] = scenario.workload
        self.ranking = self.cache.get(scenario)
        was, now = before.by_id.get(build) if build else None, self.ranking.by_id.get(build) if build else None
        ruled_out = was is not None and now is not None and not was.excluded and now.excluded
        self._show_rows(top or ruled_out)
        self.spark.remember(workload=scenario.workload.kind, hardware=scenario.hardware_id, nodes=scenario.nodes)
        self.refresh_bindings()  # the footer's node range follows the hardware
        self._schedule_precompute()

    def _schedule_precompute(self) -> None:
        """Rank what the next key may ask for once the keys stop (typing in the assumptions re-ranks per key)."""
        if self._precompute_timer is not None:
            self._precompute_timer.stop()
        self._precompute_timer = self.set_timer(PRECOMPUTE_DELAY_S, lambda: self.precompute(self._likely_next()))

    def _show_rows(self, top: bool = False) -> None:
        ordered = self.ranking.ordered(self.sort_column, self.sort_reverse)
        if self.filter_text:
            by_id = self.ranking.by_id
            ordered = [b for b in ordered if matches(by_id[b].plan, self.filter_text)]
        table = self.table
        table.set_sort(self.sort_column, self.sort_reverse)
        table.show(self.ranking, ordered, keep=table.highlighted_build, top=top)
        self._refresh_views()

    def _likely_next(self) -> list[Scenario]:
        """What a key would ask for next: the other workload, then the other cluster sizes."""
        s = self.scenario
        sizes = range(1, min(self.index.hardware[s.hardware_id].max_nodes, 4) + 1)
        return [s.toggled(self.overrides)] + [replace(s, nodes=n) for n in sizes if n != s.nodes]

    @work(thread=True, exclusive=True, group="precompute")
    def precompute(self, scenarios: list[Scenario]) -> None:
        """Rank the scenarios keys would ask for, so those keys are instant (pure; no widgets)."""
        for scenario in scenarios:
            self.cache.get(scenario)

    def _refresh_views(self) -> None:
        ranking, table = self.ranking, self.table
        self.query_one(ClusterHeader).show(ranking.cluster, self.scenario.workload, self.scenario.settings)
        for status in self.query(ProbeStatus):
            status.workload = self.scenario.workload  # its findings' workload
            status.planner = self.served_plans
        total, shown, minimum = len(self.index.catalog.builds), len(table.order), self.scenario.min_capability
        title = f"Candidates ({shown} of {total})" if self.filter_text or minimum is not None \
            else f"Candidates ({total})"
        order = "ranked" if self.sort_column == RANK_COLUMN and not self.sort_reverse else \
            f"sorted by {LABELS[self.sort_column]} {'▼' if self.sort_reverse else '▲'}"
        views = [title, order] + (["by model"] if table.grouped else []) + (["wide"] if table.wide else []) \
            + ([f"capability >= {minimum:.0%}"] if minimum is not None else [])
        # Content, not a str: a str title is parsed as markup, and a filter of "[/" would raise.
        table.border_title = Content(" · ".join(views) + (f" · filter: {safe_text(self.filter_text)}"
                                                         if self.filter_text else ""))
        self._show_detail(table.highlighted_build)

    def served_plans(self, served: ServedModel, config: ServedConfig) -> tuple[list[Plan], Replan, Reutilize | None]:
        """The plans for the builds vLLM may be serving (narrowed by how it was started), on this screen's
        cluster and workload; the same plan at another prefix reuse (the status line's first-token cost at
        the measured hit rate) and at vLLM's gpu-memory-utilization (None when the screen sets one)."""
        from sparkadvisor.core.advisor import evaluate_build
        from sparkadvisor.core.checkup import match_build, narrow_match, replanner, reutilizer, served_settings

        index, ranking, scenario = self.index, self.ranking, self.scenario
        settings = served_settings(scenario.settings, config)  # without drafters when vLLM runs none
        match = match_build(index, [served])
        plans = [ranking.by_id[b.id].plan if b.id in ranking.by_id and settings is scenario.settings else
                 evaluate_build(index, b, ranking.cluster, scenario.workload, settings)
                 for b in match.builds]
        _, plans = narrow_match(match, plans, config)
        return (plans, replanner(index, ranking.cluster, scenario.workload, settings),
                reutilizer(index, ranking.cluster, scenario.workload, settings))

    def _show_detail(self, build_id: str | None) -> None:
        key = (id(self.ranking), build_id or f"no build for {self.filter_text!r}")
        if key == self._detail_for:
            return
        self._detail_for = key
        item = self.ranking.by_id.get(build_id) if build_id else None
        empty = f"No build matches {self.filter_text!r}." if self.filter_text else "The catalog has no builds."
        plans = sweep(self.index, item.plan.build.id, self.scenario, self.cache) if item else ()
        self.query_one(DetailPane).show_build(item, plans, self.index, empty)

    @on(CandidatesTable.Highlighted)
    def _highlighted(self, event: CandidatesTable.Highlighted) -> None:
        self._show_detail(event.build_id)

    @on(CandidatesTable.HeaderClicked)
    def _header_clicked(self, event: CandidatesTable.HeaderClicked) -> None:
        self.sort_by(event.column)

    @on(CandidatesTable.Opened)
    def _opened(self, event: CandidatesTable.Opened) -> None:
        self.open_build(event.build_id)

    async def action_move(self, move: str) -> None:
        """Move in the table when it has focus; elsewhere the key is the focused widget's."""
        if self.focused is not self.table:
            raise SkipAction()
        await self.table.run_action(move)
        # The detail pane follows in the same frame; the table's `Highlighted` message, handled after
        # the table's frame was drawn, would cost a second frame (it then finds the pane up to date).
        self._show_detail(self.table.highlighted_build)

    # --- cluster and workload -------------------------------------------------------

    @typing_guard
    def action_toggle_workload(self) -> None:
        """agentic <-> chat."""
        self.apply(self.scenario.toggled(self.overrides))

    @typing_guard
    def action_nodes(self, nodes: int) -> None:
        """Set the node count."""
        limit = self.index.hardware[self.scenario.hardware_id].max_nodes
        if nodes > limit:
            self.notify(safe_text(f"The catalog sweeps {self.ranking.cluster.hardware.name} up to "
                                  f"{plural(limit, 'node')}."), severity="warning", markup=False)
            return
        self.apply(self._on_cluster(hardware_id=self.scenario.hardware_id, nodes=nodes))

    def set_hardware(self, hardware_id: str | None) -> None:
        """Switch the node type (None: keep it); the view goes to the top."""
        if hardware_id is None or hardware_id not in self.index.hardware:
            return
        nodes = min(self.scenario.nodes, self.index.hardware[hardware_id].max_nodes)
        self.apply(self._on_cluster(hardware_id=hardware_id, nodes=nodes), top=True)

    def _on_cluster(self, hardware_id: str, nodes: int) -> Scenario:
        """The scenario on another cluster; a recipe followed with `r` stays followed only where it runs (its
        hardware and node count), as --recipe sets the cluster, so the header never names one that does not apply."""
        scenario = replace(self.scenario, hardware_id=hardware_id, nodes=nodes)
        named = scenario.settings.recipe
        recipe = next((r for r in self.index.catalog.recipes if r.id == named), None) if named else None
        if recipe is None or (recipe.hardware, recipe.nodes) == (hardware_id, nodes):
            return scenario
        return replace(scenario, settings=replace(scenario.settings, recipe=None))

    def set_assumptions(self, workload: Workload, settings: Settings, min_capability: float | None) -> None:
        """New assumptions from the editor; recomputed at once."""
        self.apply(replace(self.scenario, workload=workload, settings=settings, min_capability=min_capability))

    @typing_guard
    def action_pick_hardware(self) -> None:
        """Choose the hardware."""
        from sparkadvisor.tui.screens.choice import ChoiceScreen

        options = [(h.id, safe_text(f"{h.name}: {h.usable_memory_gib:g} GiB usable, {h.memory_bandwidth_gb_s:g} GB/s, "
                                    + (f"up to {plural(h.max_nodes, 'node')}" if h.max_nodes > 1 else "one node")
                                    + (f"; {', '.join(h.serving.engines)} only" if h.serving else "")))
                   for h in self.index.catalog.hardware]
        self.app.push_screen(ChoiceScreen("Hardware", options, self.scenario.hardware_id), self.set_hardware)

    @typing_guard
    def action_edit_assumptions(self) -> None:
        """Open the assumptions editor beside the table, its first field ready for typing."""
        from sparkadvisor.tui.screens.assumptions import AssumptionsScreen

        self.app.push_screen(AssumptionsScreen(self.scenario.workload, self.scenario.settings,
                                                 self.scenario.min_capability, self.set_assumptions,
                                                 self.highlighted_summary))

    def highlighted_summary(self) -> str:
        """The highlighted build's decision in one line, for the assumptions panel that covers the table."""
        build = self.table.highlighted_build
        if build is None or build not in self.ranking.cells:
            return "No build is highlighted."
        c = self.ranking.cells[build]
        place = f"rank {c['rank']}" if c["rank"] != "-" else "excluded"
        return (f"{c['model']} {c['build']}: {place} · {c['fit']} · {c['expected']} tok/s · "
                f"first token {c['ttft']} · turn {c['turn']}")

    # --- the view -------------------------------------------------------------------

    def sort_by(self, column: str | None) -> None:
        """Sort by a column (the same column again reverses); the view goes to the top."""
        if column is None:
            return
        self.sort_reverse = not self.sort_reverse if column == self.sort_column else False
        self.sort_column = column
        self._show_rows(top=True)

    @typing_guard
    def action_sort_by(self, column: str) -> None:
        """Sort by `column` (from the palette)."""
        self.sort_by(column)

    @typing_guard
    def action_pick_sort(self) -> None:
        """Choose the sort column."""
        from sparkadvisor.tui.screens.choice import ChoiceScreen

        options = [(c.key, c.label + (f": {c.help}" if c.help else "")) for c in COLUMNS]
        self.app.push_screen(ChoiceScreen("Sort by", options, self.sort_column), self.sort_by)

    @typing_guard
    def action_toggle_group(self) -> None:
        """One row per model, or every build."""
        self.table.set_grouped(not self.table.grouped)
        self._refresh_views()

    @typing_guard
    def action_toggle_wide(self) -> None:
        """Every column (scrolling sideways), or the columns that fit."""
        self.table.set_wide(not self.table.wide)
        self._refresh_views()

    @typing_guard
    def action_filter(self) -> None:
        """Show the filter box and type into it at once."""
        box = self.query_one("#filter", Input)
        box.display = True
        self.set_focus(box)

    def action_close_filter(self) -> None:
        """Clear and hide the filter box."""
        box = self.query_one("#filter", Input)
        if box.display:
            box.value = ""
            box.display = False
            self.apply_filter("")
            self.set_focus(self.table)

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.apply_filter(event.value)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.set_focus(self.table)

    def apply_filter(self, text: str) -> None:
        """Show only builds matching `text`."""
        if text.strip() != self.filter_text:
            self.filter_text = text.strip()
            self._show_rows(top=True)

    # --- one build, several builds --------------------------------------------------

    @typing_guard
    def action_open_build(self) -> None:
        """The highlighted build full-screen."""
        if self.table.highlighted_build:
            self.open_build(self.table.highlighted_build)

    def open_build(self, build_id: str) -> None:
        """Push the full-screen view of `build_id`."""
        from sparkadvisor.tui.screens.build import BuildScreen

        item = self.ranking.by_id[build_id]
        self.app.push_screen(BuildScreen(self.index, item, sweep(self.index, build_id, self.scenario, self.cache),
                                         self.ranking, self.follow_recipe))

    def follow_recipe(self, build_id: str, recipe_id: str | None) -> tuple[Ranked, tuple[Ranked, ...], Ranking]:
        """Re-rank with `recipe_id` followed for its build (one named recipe at a time, as `--recipe`; the
        advisor's own pick names none, so the header drops it); the build's entry, sweep and the new ranking,
        for the full-screen view that asked."""
        from sparkadvisor.core.stages.recipe import pick_recipe

        cluster = self.ranking.cluster
        own = pick_recipe(self.index.facts[build_id], cluster.hardware, cluster.nodes)
        named = None if recipe_id is None or (own is not None and own.id == recipe_id) else recipe_id
        self.apply(replace(self.scenario, settings=replace(self.scenario.settings, recipe=named)))
        return self.ranking.by_id[build_id], sweep(self.index, build_id, self.scenario, self.cache), self.ranking

    @typing_guard
    def action_mark(self) -> None:
        """Mark the highlighted build for comparison."""
        self.table.action_mark()

    @typing_guard
    def action_compare(self) -> None:
        """The marked builds side by side (with the highlighted one when only one is marked)."""
        from sparkadvisor.tui.screens.compare import CompareScreen

        builds = list(self.table.marked)
        highlighted = self.table.highlighted_build
        if len(builds) < 2 and highlighted and highlighted not in builds:
            builds.append(highlighted)
        if len(builds) < 2:
            self.notify("Mark two or three builds with space, then press c.", severity="warning")
            return
        self.app.push_screen(CompareScreen([self.ranking.by_id[b] for b in builds], self.index))

    @typing_guard
    def action_export(self) -> None:
        """Export the highlighted build, ranked among the others."""
        from sparkadvisor.tui.screens.export import ExportScreen

        item = self.ranking.by_id.get(self.table.highlighted_build or "")
        if item is not None:
            self.app.push_screen(ExportScreen(self.index, item.plan, self.ranking.ranked))

    @typing_guard
    def action_hub_import(self) -> None:
        """Import a build from the hub, then reload the catalog."""
        from sparkadvisor.tui.screens.hub_import import HubImportScreen

        self.app.push_screen(HubImportScreen(), self.reload_catalog)

    @typing_guard
    def action_bench(self) -> None:
        """Bench the served build on the cluster and workload on screen; a recorded run reloads."""
        from sparkadvisor.benchsession import BenchOptions
        from sparkadvisor.core.bench import BenchSpec
        from sparkadvisor.sources import default_vllm_url
        from sparkadvisor.sources.bench import BenchConfig
        from sparkadvisor.tui.screens.bench import BenchScreen
        from sparkadvisor.urls import UrlError

        try:
            url = default_vllm_url()
        except UrlError as error:
            self.notify(safe_text(str(error)), severity="error", markup=False)
            return
        w = self.scenario.workload
        options = BenchOptions(BenchConfig(url), BenchSpec(w.context_tokens, w.prefix_reuse, w.output_tokens),
                               self.ranking.cluster, w, self.scenario.settings)
        self.app.push_screen(BenchScreen(self.index, options), self.reload_catalog)

    def reload_catalog(self, build_id: str | None) -> None:
        """Read the catalogs again after an import and show the new build."""
        if not build_id:
            return
        from sparkadvisor.catalogs import load_index

        try:
            index = load_index(self.catalog_paths)
        except CatalogError as error:
            self.notify(safe_text(f"The catalog could not be reloaded: {error.problems[0]}"), severity="error",
                        markup=False)
            return
        self.index, self.cache = index, RankingCache(index)
        self.ranking = self.cache.get(self.scenario)
        self._show_rows()
        row = self.table._row_of(build_id)
        if row is not None:
            self.table.move_to(row)

    # --- the app --------------------------------------------------------------------

    @typing_guard
    def action_cycle_theme(self) -> None:
        """Next theme."""
        self.spark.cycle_theme()

    @typing_guard
    def action_help(self) -> None:
        """Keys and legend."""
        from sparkadvisor.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())

    @typing_guard
    async def action_quit(self) -> None:
        """Leave the app."""
        await self.app.action_quit()

    def palette_extras(self) -> list[tuple[str, str, str]]:
        """Palette entries beyond the keys: sort by each column, each workload, each theme."""
        extras = [(f"sort: By {c.label}", f"sort_by('{c.key}')", f"Sort the table by {c.label}.") for c in COLUMNS]
        extras += [(f"workload: {w.label}", f"set_workload('{k}')", f"Rank for the {k} workload.")
                   for k, w in WORKLOADS.items()]
        # repr: a Python literal the action parser reads back, whatever quotes the name holds
        extras += [(f"theme: {name}", f"set_theme({name!r})", f"Switch to the {name} theme.")
                   for name in self.spark.theme_names]
        return extras

    def action_set_workload(self, kind: str) -> None:
        """Rank for a named workload."""
        if kind != self.scenario.workload.kind:
            self.apply(self.scenario.toggled(self.overrides))

    def action_set_theme(self, name: str) -> None:
        """Switch to a named theme."""
        self.spark.use_theme(name)
