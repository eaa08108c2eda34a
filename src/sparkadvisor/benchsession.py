"""One bench run from start to record, for the CLI and the TUI alike: connect, find the build
and its plan, run the schedule with the predicted (then measured) time per step, and add
what was measured to the user's catalog on request."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sparkadvisor.core.bench import BenchSpec, Collected, Figure, Rates, Step, schedule
from sparkadvisor.sources.bench import BenchError

CEILING_SLACK = 1.1
"""How far above its bandwidth ceiling a single stream without speculation may decode before a run is refused as
another build's: the ceiling reads active parameters x stored bits at the rated bandwidth, which no catalog
measurement passes, and 10% leaves room for a build whose stored bits the catalog overstates."""

if TYPE_CHECKING:
    from sparkadvisor.core.benchplan import Prediction
    from sparkadvisor.core.catalog import CatalogIndex
    from sparkadvisor.core.checkup import BuildMatch, Finding
    from sparkadvisor.core.plan import Cluster, Plan
    from sparkadvisor.core.workload import Settings, Workload
    from sparkadvisor.sources.bench import BenchConfig, ServerInfo
    from sparkadvisor.usercatalog import Recorded


@dataclass(frozen=True, slots=True)
class BenchOptions:
    """What to bench, where, and within which limits."""

    config: BenchConfig
    spec: BenchSpec
    cluster: Cluster
    workload: Workload
    settings: Settings
    build_id: str | None = None
    """The catalog build being served; None matches it from what vLLM loaded."""
    max_seconds: float | None = None
    max_tokens: int | None = None


class PlanDoesNotFit(BenchError):
    """The served build does not fit the cluster by its plan: the cluster given is likely not the one it runs
    on, and its predictions and a recorded run would belong to a cluster that cannot load it."""

    def __init__(self, plan: Plan):
        from sparkadvisor.core.checkup import does_not_fit

        self.served = f"vLLM serves {plan.build.id}, {does_not_fit(plan)}"
        super().__init__(self.sentence("give the cluster it runs on with --nodes and --hardware"))

    def sentence(self, how: str) -> str:
        """The refusal with the shell's own way to choose the cluster."""
        return f"{self.served}: {how}"


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a run is, for a progress bar."""

    label: str
    done: int
    total: int
    step_s: float | None
    """How long the running step should take."""
    after_s: float | None
    """How long the steps after it should take."""


class BenchSession:
    """A run's state: the server, the plan it is held against, and what was measured."""

    def __init__(self, index: CatalogIndex, options: BenchOptions):
        self.index, self.options = index, options
        self.steps: tuple[Step, ...] = schedule(options.spec)
        self.collected = Collected(options.spec)
        self.info: ServerInfo | None = None
        self.match: BuildMatch | None = None
        self.plan: Plan | None = None
        self.predictions: dict[str, Prediction] = {}
        self.predicted = Rates()

    async def run(self, progress: Callable[[Step | None], None]) -> None:
        """Measure into `collected`; a BenchError (one sentence) when the server stops it, PlanDoesNotFit
        before any request when the served build does not fit the cluster by its plan."""
        from sparkadvisor.core.benchplan import predict, predicted_rates
        from sparkadvisor.sources.bench import Limits, check_fits, connect, run

        o = self.options
        self.info = await connect(o.config)
        check_fits(self.info, o.spec)
        self.match, self.plan = self._plan(self.info)
        if self.plan is not None and not self.plan.fits:
            raise PlanDoesNotFit(self.plan)
        self.predictions = predict(self.plan, o.spec, self._slow(self.plan, self.info)) if self.plan else {}
        self.predicted = predicted_rates(self.predictions, o.spec)
        self._check_budget()
        deadline = time.monotonic() + o.max_seconds if o.max_seconds else None
        await run(o.config, self.info, self.steps, self.collected, Limits(deadline, o.max_tokens, self.expected_s),
                  progress)

    def _plan(self, info: ServerInfo) -> tuple[BuildMatch, Plan | None]:
        """The build being served and its plan; several candidates are narrowed by how the engine
        was started (KV dtype, block size, speculation), as the probe does."""
        from sparkadvisor.core.advisor import evaluate_build
        from sparkadvisor.core.checkup import BuildMatch, match_build, narrow_match, served_settings

        o = self.options
        settings = served_settings(o.settings, info.config)  # without drafters when vLLM runs none
        if o.build_id is not None:
            match = BuildMatch((self.index.builds[o.build_id],), f"--build {o.build_id}", info.served)
        else:
            match = match_build(self.index, (info.served,))
        plans = [evaluate_build(self.index, b, o.cluster, o.workload, settings) for b in match.builds]
        match, plans = narrow_match(match, plans, info.config)
        return match, plans[0] if len(plans) == 1 else None

    def _slow(self, plan: Plan, info: ServerInfo) -> str:
        """The caveat reporting the engine that serves the run far slower than the build's reads, whatever engine
        the plan was costed on: its figures are then bounds (`caveats.slow_route`)."""
        from sparkadvisor.core.caveats import slow_route

        facts = self.index.facts.get(plan.build.id)
        return slow_route(self.index.caveats_of(facts, plan.recipe), info.served.engine) if facts else ""

    def _check_budget(self) -> None:
        from sparkadvisor.sources.bench import BenchError

        first, budget = self.steps[0], self.options.max_tokens
        if budget is not None and first.computed_tokens > budget:
            raise BenchError(f"the token budget of {budget:,} is less than the first cold request's "
                             f"{first.computed_tokens:,} tokens; raise --max-tokens or lower --context")

    def rates(self) -> Rates:
        """Measured speeds where known, predicted ones elsewhere."""
        from sparkadvisor.core.benchplan import measured_rates

        return measured_rates(self.collected, self.predicted)

    def expected_s(self, step: Step) -> float | None:
        """How long `step` should take."""
        return self.rates().seconds(step, self.options.spec)

    def progress(self, step: Step) -> Progress:
        """Where the run is while `step` runs."""
        from sparkadvisor.core.benchplan import time_left

        rates, spec, done = self.rates(), self.options.spec, len(self.collected.results)
        return Progress(step.label(spec), done, len(self.steps), rates.seconds(step, spec),
                        time_left(self.steps[done + 1:], spec, rates))

    def rows(self) -> list[tuple[Figure, Prediction | None]]:
        """Each measured figure with the prediction it is held against."""
        from sparkadvisor.core.bench import figures
        from sparkadvisor.core.benchplan import held_against

        context = self.options.spec.context_tokens
        return [(f, held_against(f, self.predictions, self.plan, context)) for f in figures(self.collected)]

    def kv_cache(self) -> list[Finding]:
        """The KV cache vLLM sized against the plan's, as `probe` holds it (at the gpu-memory-utilization
        vLLM reports, unless the options set one); none without a plan or a block count."""
        from sparkadvisor.core.checkup import at_utilization, pool_findings, reutilizer, served_settings

        if self.plan is None or self.info is None:
            return []
        o, config = self.options, self.info.config
        settings = served_settings(o.settings, config)
        plans = at_utilization([self.plan], config, reutilizer(self.index, o.cluster, o.workload, settings))
        return pool_findings(plans, config, self.info.served)

    def record(self) -> Recorded | None:
        """Add what was measured to the user's catalog (None when nothing was); a BenchError when
        no catalog build is known, a UserCatalogError when the file cannot be written."""
        from sparkadvisor.core.bench import figures
        from sparkadvisor.core.checkup import served_pool
        from sparkadvisor.core.stages.recipe import published_recipe
        from sparkadvisor.sources.bench import BenchError
        from sparkadvisor.urls import without_credentials
        from sparkadvisor.usercatalog import record_bench

        if not figures(self.collected) or self.info is None:
            return None
        if self.match is None or self.match.build is None:
            how = self.match.how if self.match else "no catalog build is known"
            raise BenchError(f"{how.split('; pass --build')[0]}; recording needs the catalog build: pass --build ID")
        beyond = self._beyond_the_ceiling()
        if beyond is not None:
            raise BenchError(beyond)
        facts, cluster = self.index.facts.get(self.match.build.id), self.options.cluster
        # What a vLLM server cannot tell comes from the published recipe; llama.cpp's published recipes are
        # llama-bench runs, not a server's launch, so a llama-server run keeps its own split (`_split`).
        base = published_recipe(facts, cluster.hardware, cluster.nodes) \
            if facts and self.info.served.engine == "vllm" else None
        info = replace(self.info, url=without_credentials(self.info.url))  # the source keeps no password
        pool = served_pool(self.plan, info.config, info.served.max_model_len) if self.plan is not None else None
        return record_bench(self.index, self.match.build, self.options.cluster, info, self.collected, base,
                            pool=pool, launch=self._assumed_launch(info))

    def _beyond_the_ceiling(self) -> str | None:
        """Why the run is not the matched build's, or None: a single stream decoded faster than reading its weights
        at the rated bandwidth allows, on a server that says it drafts no tokens. Recorded, it would move the fit
        of every build on this hardware."""
        from sparkadvisor.core.bench import figures

        plan, info = self.plan, self.info
        if plan is None or plan.decode is None or info is None or info.config.speculating is not False:
            return None
        ceiling = plan.decode.ceiling_tok_s
        found = next((f for f in figures(self.collected) if f.key == "decode_tok_s" and f.streams == 1), None)
        if found is None or found.median <= CEILING_SLACK * ceiling:
            return None
        return (f"not recorded: one stream decoded {found.median:,.0f} tok/s without speculative decoding, above the "
                f"{ceiling:,.0f} tok/s that reading {plan.build.id}'s weights at {plan.cluster.label}'s rated "
                "bandwidth allows, so the server is not serving that build as the catalog describes it; pass --build "
                "with the build it serves")

    def _assumed_launch(self, info: ServerInfo) -> tuple[str, ...]:
        """llama-server reports no batch sizes: a llama.cpp run is recorded with the ones the export writes, which
        the plan it was held against assumed (and the source note says so)."""
        from sparkadvisor.export.llamacpp import batch_args

        return batch_args(self.plan) if info.served.engine == "llama.cpp" and self.plan is not None else ()


def spec_text(spec: BenchSpec) -> str:
    """The prompt the bench sends, in words."""
    return (f"prompts of exactly {spec.context_tokens:,} tokens (token ids from its /tokenize); a warm one "
            f"shares its first {spec.shared_tokens:,} with the cold one before it and adds {spec.new_tokens:,}; "
            f"{spec.output_tokens:,} output tokens; {spec.repetitions} repetition{'s' * (spec.repetitions > 1)}")
