"""The TUI's view model: a scenario, the core's ranking for it, and row positions for sorting.

Every figure comes from the core (`advise`, `row_cells`, `sort_value`); this module only
groups them by build id and remembers recent rankings so a toggle back is instant.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from threading import Lock

from rich.cells import cell_len

from sparkadvisor.core.advisor import advise, evaluate_build
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.plan import Cluster, Plan
from sparkadvisor.core.ranking import Ranked, with_min_capability
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import row_cells, sort_value
from sparkadvisor.core.workload import WORKLOADS, Settings, Workload

RANK_COLUMN = "rank"
"""The column whose order is the advisor's ranking."""
REASON = "reason"
"""A cell beyond `row_cells`: why the build is ranked where it is."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """What the user asked about: hardware, node count, workload with its assumptions, settings."""

    hardware_id: str
    nodes: int
    workload: Workload
    settings: Settings = Settings()
    min_capability: float | None = None
    """Hide builds below this capability (share of the frontier reference) or of unknown capability."""

    def cluster(self, index: CatalogIndex) -> Cluster:
        """The cluster on this catalog's hardware."""
        return Cluster(index.hardware[self.hardware_id], self.nodes)

    def toggled(self, overrides: dict[str, Workload]) -> Scenario:
        """The other workload (agentic <-> chat), with the assumptions last set for it."""
        kind = "chat" if self.workload.kind == "agentic" else "agentic"
        return replace(self, workload=overrides.get(kind, WORKLOADS[kind]))


@dataclass(frozen=True, slots=True)
class Ranking:
    """The core's ranking for one scenario, keyed by build id."""

    scenario: Scenario
    cluster: Cluster
    ranked: tuple[Ranked, ...]
    by_id: dict[str, Ranked]
    """In ranking order."""
    cells: dict[str, dict[str, str]]
    """Table cells from `core.table.row_cells` (and the reason), by build id."""
    widest: dict[str, int]
    """Per column: the length of its longest cell."""
    model_of: dict[str, str]
    """Build id -> model id."""

    def ordered(self, column: str = RANK_COLUMN, reverse: bool = False) -> list[str]:
        """Build ids by the core's ranking, or by a column's `sort_value`.
        Excluded builds stay below the others in either direction, and below them those with no value."""
        if column == RANK_COLUMN and not reverse:
            return list(self.by_id)  # made in ranking order: 5,000 ids without reading 5,000 plans
        keys = {id(r): sort_value(r, column) for r in self.ranked}
        ordered = sorted(self.ranked, key=lambda r: keys[id(r)][1], reverse=reverse)
        ordered.sort(key=lambda r: (r.excluded, keys[id(r)][0]))  # stable: the column's order within each group
        return [r.plan.build.id for r in ordered]

    def positions(self, column: str = RANK_COLUMN, reverse: bool = False) -> dict[str, int]:
        """Row position of every build in `ordered(column, reverse)`."""
        return {build_id: i for i, build_id in enumerate(self.ordered(column, reverse))}


def compute_ranking(index: CatalogIndex, scenario: Scenario) -> Ranking:
    """Rank every build for the scenario and render its cells."""
    cluster = scenario.cluster(index)
    ranked = with_min_capability(advise(index, cluster, scenario.workload, scenario.settings), scenario.min_capability)
    by_id = {r.plan.build.id: r for r in ranked}
    cells = {build_id: row_cells(r) | {REASON: safe_text(r.reason)} for build_id, r in by_id.items()}
    model_of = {build_id: r.plan.model.id for build_id, r in by_id.items()}
    return Ranking(scenario, cluster, ranked, by_id, cells, _widest(cells), model_of)


def _widest(cells: dict[str, dict[str, str]]) -> dict[str, int]:
    """Each column's widest cell in terminal cells (a CJK character takes two)."""
    widest: dict[str, int] = {}
    for row in cells.values():
        for column, text in row.items():
            width = len(text) if text.isascii() else cell_len(text)  # isascii is O(1) on a str
            if width > widest.get(column, 0):
                widest[column] = width
    return widest


def sweep(index: CatalogIndex, build_id: str, scenario: Scenario,
          rankings: RankingCache | None = None) -> tuple[Ranked, ...]:
    """The build on 1..max_nodes (at most 4) nodes of the scenario's hardware, same workload;
    a plan already in one of `rankings` is taken from it (the same evaluation)."""
    hardware = index.hardware[scenario.hardware_id]
    build = index.builds[build_id]
    plans = []
    for nodes in range(1, min(hardware.max_nodes, 4) + 1):
        ranking = rankings.ready(replace(scenario, nodes=nodes)) if rankings is not None else None
        item = ranking.by_id.get(build_id) if ranking is not None else None
        plans.append(item.plan if item is not None else
                     evaluate_build(index, build, Cluster(hardware, nodes), scenario.workload, scenario.settings))
    return tuple(Ranked(plan, None, "", None) for plan in plans)


def matches(plan: Plan, text: str) -> bool:
    """Does the build's model name, build id or repo contain `text` (any case)?"""
    needle = text.strip().lower()
    return not needle or any(needle in hay.lower() for hay in (plan.model.name, plan.build.id, plan.build.repo))


@dataclass
class RankingCache:
    """Recent rankings for one catalog, so a toggle back (or a precomputed toggle) is instant."""

    index: CatalogIndex
    size: int = 8
    _items: OrderedDict[Scenario, Ranking] = field(default_factory=OrderedDict)
    _lock: Lock = field(default_factory=Lock)

    def get(self, scenario: Scenario) -> Ranking:
        """The ranking for `scenario`, computed now if it is not cached."""
        with self._lock:
            cached = self._items.get(scenario)
        if cached is not None:
            return cached
        ranking = compute_ranking(self.index, scenario)
        with self._lock:
            self._items[scenario] = ranking
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return ranking

    def ready(self, scenario: Scenario) -> Ranking | None:
        """The ranking for `scenario` if it is cached (never computed here)."""
        with self._lock:
            return self._items.get(scenario)

    def has(self, scenario: Scenario) -> bool:
        """Is this scenario's ranking ready?"""
        with self._lock:
            return scenario in self._items
