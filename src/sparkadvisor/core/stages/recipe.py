"""What every stage reads from the recipe and the caveats: which recipe a build runs, its
measurements, its launch flags, the context the pool is sized for, and whether prefix caching is on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sparkadvisor.core.schema import Caveat, Hardware, Measurement, Recipe
from sparkadvisor.core.speed.chunks import launch_flag
from sparkadvisor.core.targets import usable_context

if TYPE_CHECKING:
    from sparkadvisor.core.index import BuildFacts
    from sparkadvisor.core.workload import Settings

PREFIX_OFF_KINDS = ("prefix-caching-disabled",)
"""Caveat kinds that force prefix caching off, whatever the recipe says."""


def measured(recipe: Recipe | None, metric: str, streams: int = 1, eager: bool | None = None) -> Measurement | None:
    """The recipe's newest measurement of `metric` at `streams` concurrent requests (a later
    bench run is listed after an earlier one; calibration still uses every run); with `eager`, the newest
    taken in that execution mode (its own `enforce_eager`, else the recipe's)."""
    if recipe is None:
        return None
    return next((m for m in reversed(recipe.measurements) if m.metric == metric and m.streams == streams
                 and (eager is None or run_eager(recipe, m) == eager)), None)


def run_eager(recipe: Recipe, m: Measurement) -> bool:
    """Whether the run behind `m` went without CUDA graphs: as it states, else as its recipe launches."""
    return m.enforce_eager if m.enforce_eager is not None else recipe.enforce_eager


def measured_ttft(recipe: Recipe | None, context_tokens: int, uncached_tokens: int) -> Measurement | None:
    """The newest first token measured at this context with as many tokens from the prefix
    cache as the workload reuses (within 2% of the prompt), or None."""
    if recipe is None:
        return None
    cached = context_tokens - uncached_tokens
    return next((m for m in reversed(recipe.measurements)
                 if m.metric == "ttft_s" and m.context_tokens == context_tokens and m.cached_tokens is not None
                 and abs(m.cached_tokens - cached) <= 0.02 * context_tokens), None)


def pick_recipe(facts: BuildFacts, hardware: Hardware, nodes: int, named: str | None = None) -> Recipe | None:
    """The vLLM recipe for this build on exactly `nodes` of this hardware: the one the user `named`
    when it is among them, else the newest one the user's own `sparkadvisor bench` recorded, else the
    best-measured published one that is not a benchmark's test configuration."""
    on_hardware = facts.recipes.get(hardware.id)
    if not on_hardware:
        return None
    candidates = [r for r in on_hardware if r.nodes == nodes]
    chosen = next((r for r in candidates if r.id == named), None) if named else None
    if chosen is not None:
        return chosen
    own = [r for r in candidates if r.id in facts.own_recipes]
    return own[-1] if own else published_recipe(facts, hardware, nodes)


DRAFTER_SHAPED = ("decode_tok_s", "aggregate_tok_s", "kv_pool_tokens")
"""Measurements a recipe's drafter shaped: its speed, and its pool (the drafter's memory, the speculative
tokens' state pages). Without the drafter they describe another server."""

_REDRAFTED: dict[tuple[int, int], tuple[Recipe, Recipe]] = {}
"""Each speculating recipe's copies with another drafter setting (0 tokens: none), kept with the original so
its id stays its own."""


def without_drafter(recipe: Recipe) -> Recipe:
    """The recipe with speculative decoding left off: no drafter, and none of the measurements it shaped
    (`DRAFTER_SHAPED`). The same copy every time, so what a ranking works out once per recipe still is."""
    return _redrafted(recipe, 0)


def drafting(recipe: Recipe, tokens: int) -> Recipe:
    """The recipe with its drafter proposing `tokens` a pass instead of its own, at its own acceptance, and
    none of the measurements its own count shaped. The same copy every time."""
    return _redrafted(recipe, tokens)


def _redrafted(recipe: Recipe, tokens: int) -> Recipe:
    held = _REDRAFTED.get((id(recipe), tokens))
    if held is None or held[0] is not recipe:
        kept = tuple(m for m in recipe.measurements if m.metric not in DRAFTER_SHAPED)
        spec = replace(recipe.speculative, tokens_per_pass=tokens) if tokens and recipe.speculative else None
        held = (recipe, replace(recipe, speculative=spec, measurements=kept))
        _REDRAFTED[(id(recipe), tokens)] = held
    return held[1]


PlanRecipe = tuple[Recipe | None, bool, int | None]
"""(the recipe a plan follows, its drafter left off, the drafted tokens a served vLLM runs instead of the
recipe's): `plan_recipe`."""


def plan_recipe(facts: BuildFacts, hardware: Hardware, nodes: int, settings: Settings) -> PlanRecipe:
    """`pick_recipe`'s recipe, without its drafter when the settings turn speculation off, or drafting the
    served vLLM's tokens a pass when they differ from the recipe's."""
    recipe = pick_recipe(facts, hardware, nodes, settings.recipe)
    spec = recipe.speculative if recipe is not None else None
    if spec is None or recipe is None:
        return recipe, False, None
    if settings.speculation is False:
        return without_drafter(recipe), True, None
    tokens = settings.speculative_tokens
    if tokens is not None and tokens != spec.tokens_per_pass:
        return drafting(recipe, tokens), False, tokens
    return recipe, False, None


def published_recipe(facts: BuildFacts, hardware: Hardware, nodes: int) -> Recipe | None:
    """The best-measured published vLLM recipe to serve this build with on exactly `nodes` of this hardware
    (a bench run copies from it what a server cannot tell); a benchmark's test configuration is not one."""
    candidates = [r for r in facts.recipes_on(hardware)
                  if r.nodes == nodes and r.id not in facts.own_recipes and not r.benchmark]
    return max(candidates, key=lambda r: len(r.measurements), default=None)


def engine_arg(recipe: Recipe | None, flag: str) -> str | None:
    """The value a recipe passes for a `vllm serve` flag among its extra arguments (`--flag v` or
    `--flag=v`, dashes or underscores), or None."""
    return launch_flag(recipe.extra_args, (flag,)) if recipe is not None else None


def recipe_batched_tokens(recipe: Recipe | None) -> int | None:
    """The recipe's --max-num-batched-tokens as a number, or None where it sets none."""
    value = engine_arg(recipe, "--max-num-batched-tokens")
    return int(value) if value and value.isdecimal() else None


def _window(facts: BuildFacts, recipe: Recipe | None, limit: int | None = None) -> int | None:
    """The max_model_len the pool is sized for: the usable context (the user's --max-model-len `limit`
    within what the build serves, else the recipe's, else the model's native)."""
    return usable_context(facts.model, recipe, limit).tokens


def prefix_caching(recipe: Recipe | None, caveats: tuple[Caveat, ...]) -> tuple[bool, str]:
    """(on, why in a sentence): a caveat that turns it off, else the recipe's setting."""
    for caveat in caveats:
        if caveat.kind in PREFIX_OFF_KINDS:
            return False, caveat.explanation
    if recipe is not None and not recipe.prefix_caching:
        return False, f"the recipe ({recipe.title}) disables prefix caching"
    return True, "prefix caching on (vLLM's default)"
