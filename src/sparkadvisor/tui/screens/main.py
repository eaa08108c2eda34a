"""The main screen: header, ranked candidates, detail pane and cluster sweep.

State (scenario, sort, filter) lives here; every figure comes from the core through
`tui.model`. A change of scenario re-ranks by updating cells and sorting rows, never by
rebuilding the table.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input

from sparkadvisor.core.catalog import CatalogError
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import COLUMNS
from sparkadvisor.core.workload import WORKLOADS, Settings, Workload
from sparkadvisor.tui import commands
from sparkadvisor.tui.model import RANK_COLUMN, Ranking, RankingCache, Scenario, matches, sweep
from sparkadvisor.tui.widgets.candidates import CandidatesTable
from sparkadvisor.tui.widgets.cluster_header import ClusterHeader
from sparkadvisor.tui.widgets.detail import DetailPane

if TYPE_CHECKING:
    from sparkadvisor.tui.app import SparkAdvisorApp

LABELS = {c.key: c.label for c in COLUMNS}


def optional_module(name: str) -> ModuleType | None:
    """`sparkadvisor.<name>` if this install has it (other parts of the app add these)."""
    try:
        return importlib.import_module(f"sparkadvisor.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"sparkadvisor.{name}":
            raise
        return None


PRECOMPUTE_DELAY_S = 0.3
"""Ranking the other workload waits until the first frame is painted."""


class MainScreen(Screen[None]):
    """Browse the catalog ranked for a cluster and workload."""

    # main.tcss is read by the app (SparkAdvisorApp.CSS_PATH): the default screen's CSS_PATH is not.
    BINDINGS: ClassVar[list[BindingType]] = [*commands.bindings(), ("escape", "close_filter", "")]
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

    @property
    def spark(self) -> SparkAdvisorApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        header = ClusterHeader(id="cluster-header")
        header.show(self.ranking.cluster, self.scenario.workload, self.scenario.settings)
        yield header
        yield CandidatesTable(self.ranking, id="candidates")
        yield DetailPane(id="detail")
        probe = optional_module("tui.widgets.probe_status")
        if probe is not None:
            yield probe.ProbeStatus()
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(CandidatesTable)
        table.add_builds(r.plan.build.id for r in self.ranking.ranked)
        self._refresh_views()
        table.focus()
        # After the first frame: a ranking thread would compete with it for the interpreter.
        self.set_timer(PRECOMPUTE_DELAY_S, lambda: self.precompute(self.scenario.toggled(self.overrides)))

    @property
    def table(self) -> CandidatesTable:
        """The candidates table."""
        return self.query_one(CandidatesTable)

    # --- applying a scenario --------------------------------------------------------

    def apply(self, scenario: Scenario) -> None:
        """Re-rank for `scenario`: update changed cells, sort rows by the core's positions."""
        keep = self.table.highlighted_build
        self.scenario = scenario
        self.overrides[scenario.workload.kind] = scenario.workload
        self.ranking = self.cache.get(scenario)
        self.table.show_ranking(self.ranking)
        self.table.order_by(self.ranking.positions(self.sort_column, self.sort_reverse), keep)
        self._refresh_views()
        self.spark.remember(workload=scenario.workload.kind, hardware=scenario.hardware_id, nodes=scenario.nodes)
        self.precompute(scenario.toggled(self.overrides))

    @work(thread=True, exclusive=True, group="precompute")
    def precompute(self, scenario: Scenario) -> None:
        """Rank the scenario a toggle would ask for, so the toggle is instant (pure; no widgets)."""
        self.cache.get(scenario)

    def _refresh_views(self) -> None:
        ranking = self.ranking
        self.query_one(ClusterHeader).show(ranking.cluster, self.scenario.workload, self.scenario.settings)
        for status in self.query("ProbeStatus"):
            status.workload = self.scenario.workload  # type: ignore[attr-defined]  # its findings' workload
        table = self.table
        shown = len(table.shown)
        title = f"Candidates ({shown} of {len(ranking.ranked)})" if self.filter_text else f"Candidates ({shown})"
        order = "ranked" if self.sort_column == RANK_COLUMN and not self.sort_reverse else \
            f"sorted by {LABELS[self.sort_column]} {'▼' if self.sort_reverse else '▲'}"
        table.border_title = f"{title} · {order}" + (f" · filter: {self.filter_text}" if self.filter_text else "")
        self._show_detail(table.highlighted_build)

    def _show_detail(self, build_id: str | None) -> None:
        item = self.ranking.by_id.get(build_id) if build_id else None
        empty = f"No build matches {self.filter_text!r}." if self.filter_text else "The catalog has no builds."
        plans = sweep(self.index, item.plan.build.id, self.scenario) if item else ()
        self.query_one(DetailPane).show(item, plans, self.index, empty)

    @on(DataTable.RowHighlighted, "#candidates")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.row_key.value)

    @on(DataTable.HeaderSelected, "#candidates")
    def _header_clicked(self, event: DataTable.HeaderSelected) -> None:
        self.sort_by(str(event.column_key.value))

    # --- actions --------------------------------------------------------------------

    def action_toggle_workload(self) -> None:
        """agentic <-> chat."""
        self.apply(self.scenario.toggled(self.overrides))

    def action_nodes(self, nodes: int) -> None:
        """Set the node count."""
        limit = self.index.hardware[self.scenario.hardware_id].max_nodes
        if nodes > limit:
            self.notify(safe_text(f"The catalog sweeps {self.ranking.cluster.hardware.name} up to {limit} nodes."),
                        severity="warning", markup=False)
            return
        self.apply(Scenario(self.scenario.hardware_id, nodes, self.scenario.workload, self.scenario.settings))

    def set_hardware(self, hardware_id: str | None) -> None:
        """Switch the node type (None: keep it)."""
        if hardware_id is None or hardware_id not in self.index.hardware:
            return
        nodes = min(self.scenario.nodes, self.index.hardware[hardware_id].max_nodes)
        self.apply(Scenario(hardware_id, nodes, self.scenario.workload, self.scenario.settings))

    def set_assumptions(self, workload: Workload, settings: Settings) -> None:
        """New assumptions from the editor; recomputed at once."""
        self.apply(Scenario(self.scenario.hardware_id, self.scenario.nodes, workload, settings))

    def sort_by(self, column: str | None) -> None:
        """Sort by a column; the same column again reverses the order."""
        if column is None:
            return
        self.sort_reverse = not self.sort_reverse if column == self.sort_column else False
        self.sort_column = column
        self.table.order_by(self.ranking.positions(column, self.sort_reverse), self.table.highlighted_build)
        self._refresh_views()

    def action_sort_by(self, column: str) -> None:
        """Sort by `column` (from the palette)."""
        self.sort_by(column)

    def action_pick_hardware(self) -> None:
        """Choose the hardware."""
        from sparkadvisor.tui.screens.choice import ChoiceScreen

        options = [(h.id, safe_text(f"{h.name}: {h.usable_memory_gib:g} GiB usable, {h.memory_bandwidth_gb_s:g} GB/s, "
                    + (f"up to {h.max_nodes} nodes" if h.max_nodes > 1 else "one node")))
                   for h in self.index.catalog.hardware]
        self.app.push_screen(ChoiceScreen("Hardware", options, self.scenario.hardware_id), self.set_hardware)

    def action_pick_sort(self) -> None:
        """Choose the sort column."""
        from sparkadvisor.tui.screens.choice import ChoiceScreen

        options = [(c.key, c.label + (" (the advisor's ranking)" if c.key == RANK_COLUMN else ""))
                   for c in COLUMNS]
        self.app.push_screen(ChoiceScreen("Sort by", options, self.sort_column), self.sort_by)

    def action_edit_assumptions(self) -> None:
        """Open the assumptions editor beside the table."""
        from sparkadvisor.tui.screens.assumptions import AssumptionsScreen

        self.app.push_screen(AssumptionsScreen(self.scenario.workload, self.scenario.settings, self.set_assumptions))

    async def action_filter(self) -> None:
        """Show the filter box (made on first use: one widget less to start)."""
        boxes = self.query("#filter").results(Input)
        box = next(boxes, None)
        if box is None:
            box = Input(placeholder="filter by model, build id or repo (Esc clears)", id="filter")
            await self.mount(box, before=self.table)
        box.display = True
        box.focus()

    def action_close_filter(self) -> None:
        """Clear and hide the filter box."""
        box = next(self.query("#filter").results(Input), None)
        if box is not None and box.display:
            box.value = ""
            box.display = False
            self.table.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.apply_filter(event.value)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.table.focus()

    def apply_filter(self, text: str) -> None:
        """Show only builds matching `text`."""
        self.filter_text = text.strip()
        wanted = {r.plan.build.id for r in self.ranking.ranked if matches(r.plan, self.filter_text)}
        table, keep = self.table, self.table.highlighted_build
        shown = table.shown
        table.remove_builds(shown - wanted)
        table.add_builds(r.plan.build.id for r in self.ranking.ranked if r.plan.build.id in wanted - shown)
        table.order_by(self.ranking.positions(self.sort_column, self.sort_reverse), keep)
        self._refresh_views()

    def action_export(self) -> None:
        """Export the highlighted build, or show its plan as text."""
        item = self.ranking.by_id.get(self.table.highlighted_build or "")
        if item is None:
            return
        module = optional_module("tui.screens.export")
        if module is not None:
            self.app.push_screen(module.ExportScreen(self.index, item.plan))
            return
        from sparkadvisor.tui.screens.text import TextScreen, plan_text

        self.app.push_screen(TextScreen(f"Plan: {item.plan.build.id}", plan_text(item, self.ranking)))

    def action_hub_import(self) -> None:
        """Import a build from the hub, then reload the catalog."""
        module = optional_module("tui.screens.hub_import")
        if module is None:
            self.notify("Hub import is not part of this install.", severity="warning")
            return
        self.app.push_screen(module.HubImportScreen(), self.reload_catalog)

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
        self.table.clear_builds(self.ranking)
        self.table.add_builds(r.plan.build.id for r in self.ranking.ranked)
        self.table.order_by(self.ranking.positions(self.sort_column, self.sort_reverse), build_id)
        self.apply_filter(self.filter_text)

    def action_cycle_theme(self) -> None:
        """Next theme."""
        self.spark.cycle_theme()

    def action_help(self) -> None:
        """Keys and legend."""
        from sparkadvisor.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())

    def palette_extras(self) -> list[tuple[str, str, str]]:
        """Palette entries beyond the keys: sort by each column, each workload, each theme."""
        extras = [(f"sort: By {c.label}", f"sort_by('{c.key}')", f"Sort the table by {c.label}.") for c in COLUMNS]
        extras += [(f"workload: {w.label}", f"set_workload('{k}')", f"Rank for the {k} workload.")
                   for k, w in WORKLOADS.items()]
        extras += [(f"theme: {name}", f"set_theme('{name}')", f"Switch to the {name} theme.")
                   for name in self.spark.theme_names]
        return extras

    def action_set_workload(self, kind: str) -> None:
        """Rank for a named workload."""
        if kind != self.scenario.workload.kind:
            self.action_toggle_workload()

    def action_set_theme(self, name: str) -> None:
        """Switch to a named theme."""
        self.spark.use_theme(name)
