"""The runtime index of a catalog: lookups by id, and what is known once per catalog.

Built once from a `Catalog` and never changed afterwards, so the TUI's worker thread and
its UI thread can share it. It holds the per-build facts (a build's weights, the recipes its
plans follow on each hardware, its own caveats) and the speed constants calibrated for each
hardware; the per-cluster stages in `core.stages` start from these.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING

from sparkadvisor.core.bulk import collector_paused
from sparkadvisor.core.memory import SizeCheck, Weights, build_weights, size_checks
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Build, Catalog, Caveat, Hardware, Model, Recipe
from sparkadvisor.core.speed.constants import SpeedConstants

if TYPE_CHECKING:
    from sparkadvisor.core.calibration import Calibration

ENGINE = "vllm"
"""The serving engine a plan is costed on wherever it serves the build."""


def engine_label(engine: str) -> str:
    """An engine's name in a sentence: vLLM as people write it, the others as the catalog does."""
    return "vLLM" if engine == ENGINE else engine


def default_engine(build: Build, hardware: Hardware | None = None) -> str:
    """vLLM if it serves the build (and runs on `hardware`), else the build's first engine that runs
    there, else vLLM or the build's first engine (and the plan says no engine serves it there)."""
    engines = build.engines or (ENGINE,)
    here = [e for e in engines if hardware is None or runs_on(hardware, e)]
    ordered = here or list(engines)
    return ENGINE if ENGINE in ordered else ordered[0]


def followed_engine(build: Build, hardware: Hardware | None, engine: str) -> bool:
    """A plan of `build` on `hardware` follows recipes of `engine`: vLLM's (a vLLM recipe shows vLLM serves the
    build, whatever its engine list says), and those of the engine it is costed on there by default, such as a
    GGUF build's llama.cpp ones. Other engines' recipes describe another server; they count in the fit only."""
    return engine == ENGINE or engine == default_engine(build, hardware)


def runs_on(hardware: Hardware, engine: str) -> bool:
    """`engine` is known to serve models on `hardware`: any engine on an NVIDIA GPU, else the ones
    the hardware's `serving` names."""
    if hardware.serving is None:
        return hardware.cuda
    return engine in hardware.serving.engines


@record
class BuildFacts:
    """What a build is, whatever the cluster: computed once per catalog."""

    build: Build
    model: Model
    weights: Weights
    """Bytes it holds, stated or derived (core.memory)."""
    recipes: dict[str, tuple[Recipe, ...]]
    """The recipes a plan of it follows, by hardware id (`followed_engine`: vLLM's, and a GGUF build's llama.cpp
    ones)."""
    caveats: tuple[Caveat, ...]
    """The caveats the build carries on every recipe."""
    own_recipes: frozenset[str] = frozenset()
    """Ids of its recipes a `sparkadvisor bench --record` run wrote (their source is kind "bench")."""

    def recipes_on(self, hardware: Hardware) -> tuple[Recipe, ...]:
        """The recipes a plan of it follows on this hardware."""
        return self.recipes.get(hardware.id, ())


@dataclass(frozen=True, eq=False)
class CatalogIndex:
    """A catalog with lookups by id, built once and shared by every view."""

    catalog: Catalog
    hardware: dict[str, Hardware] = field(init=False)
    models: dict[str, Model] = field(init=False)
    builds: dict[str, Build] = field(init=False)
    caveats: dict[str, Caveat] = field(init=False)
    recipes_by_build: dict[str, tuple[Recipe, ...]] = field(init=False)
    """Every recipe of each build, any engine or hardware."""
    size_checks: dict[str, SizeCheck] = field(init=False)
    """By format: the derived-size rule against the catalog's builds of it whose size a source states."""
    facts: dict[str, BuildFacts] = field(init=False)
    """Per-build facts, for every build whose model is in the catalog."""
    calibrations: dict[str, Calibration] = field(init=False)
    """Speed constants for each hardware id and engine, calibrated to the catalog's measurements."""
    constants: dict[tuple[str, str], SpeedConstants] = field(init=False)
    """Each catalog hardware's constants for every engine its calibration knows, by (hardware id,
    engine): `Calibration.for_engine` builds a new record, and a ranking asks once per build."""
    calibrated: InitVar[dict[str, Calibration] | None] = None
    """The calibrations of this very catalog, computed before (the catalog cache keeps them):
    calibrating every hardware costs more than the rest of the index."""

    def __post_init__(self, calibrated: dict[str, Calibration] | None) -> None:
        set_ = object.__setattr__
        set_(self, "hardware", {h.id: h for h in self.catalog.hardware})
        set_(self, "models", {m.id: m for m in self.catalog.models})
        set_(self, "builds", {b.id: b for b in self.catalog.builds})
        set_(self, "caveats", {c.id: c for c in self.catalog.caveats})
        recipes: dict[str, list[Recipe]] = {}
        for recipe in self.catalog.recipes:
            recipes.setdefault(recipe.build, []).append(recipe)
        set_(self, "recipes_by_build", {build: tuple(rs) for build, rs in recipes.items()})
        set_(self, "size_checks", size_checks(self.catalog.builds, self.models))
        with collector_paused():
            set_(self, "facts", {b.id: self._facts(b) for b in self.catalog.builds if b.model in self.models})
        known = calibrated or {}
        if any(h.id not in known for h in self.catalog.hardware):
            from sparkadvisor.core.calibration import calibrate_all

            known = {h.id: known.get(h.id) or calibrate_all(self, h) for h in self.catalog.hardware}
        set_(self, "calibrations", known)
        set_(self, "constants", {(hw, engine): c.for_engine(engine) for hw, c in known.items()
                                 for engine in {ENGINE, *c.engines, *c.prefill}})

    def speed_constants(self, hardware: Hardware, engine: str = ENGINE) -> SpeedConstants:
        """The calibrated constants for `engine` on `hardware` (calibrated on demand for hand-built hardware)."""
        known = self.constants.get((hardware.id, engine))
        if known is not None:
            return known
        calibration = self.calibrations.get(hardware.id)
        if calibration is None:
            from sparkadvisor.core.calibration import calibrate_all

            calibration = calibrate_all(self, hardware)
        return calibration.for_engine(engine)

    def _facts(self, build: Build) -> BuildFacts:
        model = self.models[build.model]
        by_hardware: dict[str, list[Recipe]] = {}
        for recipe in self.recipes_by_build.get(build.id, ()):
            if followed_engine(build, self.hardware.get(recipe.hardware), recipe.engine):
                by_hardware.setdefault(recipe.hardware, []).append(recipe)
        own = frozenset(r.id for rs in by_hardware.values() for r in rs if self._measured_here(r))
        return BuildFacts(build=build, model=model, weights=build_weights(build, model, self.size_checks),
                          recipes={hw: tuple(rs) for hw, rs in by_hardware.items()},
                          caveats=tuple(self.caveats[c] for c in dict.fromkeys(build.caveats) if c in self.caveats),
                          own_recipes=own)

    def caveats_of(self, facts: BuildFacts, recipe: Recipe | None,
                   dropped: frozenset[str] = frozenset()) -> tuple[Caveat, ...]:
        """The caveats a build runs under with `recipe`: the build's, then the recipe's own, less the kinds
        `dropped` (what a drafter brings, for a recipe run without it)."""
        if recipe is None or not recipe.caveats:
            return facts.caveats
        extra = [self.caveats[c] for c in dict.fromkeys(recipe.caveats) if c in self.caveats]
        return facts.caveats + tuple(c for c in extra if c not in facts.caveats and c.kind not in dropped)

    def _measured_here(self, recipe: Recipe) -> bool:
        """The recipe records a `sparkadvisor bench` run on the user's own cluster."""
        ids = (recipe.source,) if isinstance(recipe.source, str) else recipe.source
        return any((s := self.catalog.sources.get(i)) is not None and s.kind == "bench" for i in ids)

    def recipes_on(self, hardware_id: str, engine: str = ENGINE) -> list[Recipe]:
        """Every recipe run on this hardware with this engine, for a build the catalog has."""
        return [r for r in self.catalog.recipes if r.hardware == hardware_id and r.engine == engine
                and r.build in self.builds]
