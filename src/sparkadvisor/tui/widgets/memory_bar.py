"""One node's memory drawn as a bar: weights | KV cache | runtime and activations | free.

Each part has its own glyph as well as its own colour, so the bar still reads with
NO_COLOR or in a monochrome terminal. The sizes are the plan's budget; the widget only
scales them to its width.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content

from sparkadvisor.core.memory import Budget
from sparkadvisor.core.speed.chunks import GGML_ENGINES
from sparkadvisor.core.units import GiB


@dataclass(frozen=True, slots=True)
class Part:
    """A segment of the bar."""

    label: str
    glyph: str
    style: str
    """A Textual style naming theme variables only."""
    gib: float


def parts(budget: Budget) -> tuple[Part, ...]:
    """The budget's segments, per node, in GiB."""
    kv = max(budget.kv_bytes, 0.0) / GiB
    weights = budget.weights_bytes / GiB
    runtime = budget.runtime_bytes / GiB
    free = budget.free_bytes / GiB
    return (Part("weights", "█", "$primary", weights), Part("KV", "▓", "$success", kv),
            Part("runtime", "▒", "$warning", runtime), Part("free", "░", "$foreground-muted", free))


def segment_widths(values: list[float], width: int) -> list[int]:
    """Split `width` cells in proportion to `values`; any non-zero part gets at least one cell."""
    total = sum(values) or 1.0
    cells = [max(1, round(v / total * width)) if v > 0 else 0 for v in values]
    while sum(cells) > width and max(cells) > 1:
        cells[cells.index(max(cells))] -= 1
    if cells and sum(cells) < width:
        cells[cells.index(max(cells))] += width - sum(cells)
    return cells


def bar_content(budget: Budget, width: int, by_recipe: bool = False, engine: str = "vllm") -> Content:
    """The per-node memory of a plan in `width` cells: a title, the bar, and its legend. `by_recipe`:
    a recipe runs the build although the arithmetic says it does not fit (its shortfall is then a warning).
    `engine`: the plan's; llama.cpp and Ollama have no gpu-memory-utilization, and the title says vLLM's rule
    stands in for theirs, as the fit step does."""
    segments = parts(budget)
    usable = budget.usable_bytes / GiB
    widths = segment_widths([p.gib for p in segments], max(width, 10))
    bar = Content.assemble(*((p.glyph * w, p.style) for p, w in zip(segments, widths, strict=True)))
    share = f"{budget.utilization:g} x {usable:.1f} = {budget.engine_bytes / GiB:.1f} GiB"
    title = (f"Per node {usable:.1f} GiB; {engine} sized by vLLM's {share}" if engine in GGML_ENGINES
             else f"Per node {usable:.1f} GiB; vLLM gets gpu-memory-utilization {share}")
    legend = Content(" ").join(Content.assemble((p.glyph, p.style), f" {p.label} {_amount(p, budget)}")
                               for p in segments if p.label != "free" or budget.left_bytes >= 0) + " GiB"
    return Content("\n").join([Content.assemble((title, "bold")), bar,
                               legend + _shortfall(budget, by_recipe, engine in GGML_ENGINES)])


def _amount(part: Part, budget: Budget) -> str:
    """The part's GiB; "none" for a KV cache with no room at all (a 0.0 would read as a figure)."""
    return "none" if part.label == "KV" and budget.kv_bytes <= 0 else f"{part.gib:.1f}"


def _shortfall(budget: Budget, by_recipe: bool = False, stand_in: bool = False) -> Content:
    """What does not fit, in the words of the arithmetic's fit step; empty when it all fits. `stand_in`: vLLM's
    rule sizes another engine's memory."""
    if budget.left_bytes < 0:
        share = f"the {budget.engine_bytes / GiB:.1f} GiB of vLLM's rule" if stand_in else \
            f"vLLM's {budget.engine_bytes / GiB:.1f} GiB"
        words = f"weights exceed {share} by {-budget.left_bytes / GiB:.1f} GiB"
    elif budget.kv_bytes <= 0:
        words = "no room left for the KV cache"
    else:
        return Content("")
    if by_recipe:
        return Content.assemble(" · ", (f"{words} in the arithmetic; the recipe runs it", "bold $warning"))
    return Content.assemble(" · ", (words, "bold $error"))
