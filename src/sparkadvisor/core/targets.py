"""The workload's targets, checked one by one: met, missed, or unknown.

Unknown is never a pass: a figure nobody can compute (no prefill rate, no decode
estimate, no context window, no KV facts) is reported as unknown and the plan does not
meet its targets. For an agent, prefix caching off is a miss whatever the first-token
figure says: every turn recomputes the whole prompt (the article's point).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Model, Recipe
from sparkadvisor.core.units import fmt_seconds, plural
from sparkadvisor.core.workload import Workload

if TYPE_CHECKING:
    from sparkadvisor.core.plan import Plan

Status = Literal["met", "missed", "unknown"]
TargetKey = Literal["context", "first-token", "turn", "decode", "sessions"]


class TargetCheck:
    """One target of the workload against one plan: its status, and the sentence that says so.

    The ranking reads only the statuses of every plan; the sentence is written when a view
    asks for `text` (a view shows a few plans, a ranking judges thousands). Two checks are
    equal when key, status and text are."""

    __slots__ = ("key", "status", "_words")

    key: TargetKey
    status: Status
    _words: str | Callable[[], str]

    def __init__(self, key: TargetKey, status: Status, words: str | Callable[[], str]) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "_words", words)

    @property
    def text(self) -> str:
        """In words, e.g. "context 32,768 < 100,200 needed"."""
        words = self._words
        return words if isinstance(words, str) else words()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a TargetCheck is frozen: cannot assign {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TargetCheck):
            return NotImplemented
        return (self.key, self.status, self.text) == (other.key, other.status, other.text)

    def __hash__(self) -> int:
        return hash((self.key, self.status, self.text))

    def __repr__(self) -> str:
        return f"TargetCheck({self.key!r}, {self.status!r}, {self.text!r})"


@record(kw_only=False)
class UsableContext:
    """The longest prompt plus answer the served model accepts (vLLM's --max-model-len)."""

    tokens: int | None
    """None when neither the recipe nor the model's card says."""
    basis: Literal["recipe", "native", "unknown"]
    """The recipe's max_model_len, else the model's native context."""
    extended: bool
    """The recipe's length goes past the native context: it relies on the extension (YaRN, ...)."""

    def describe(self, model: Model) -> str:
        """"32,768 (native; YaRN factor 4 reaches 131,072 when a recipe enables it)"."""
        if self.tokens is None:
            return "unknown (neither the model's card nor a recipe gives it)"
        ctx = model.context
        if self.basis == "recipe":
            ext = f", past the native {ctx.native_tokens:,} by {ctx.extended_method or 'RoPE scaling'}" \
                if self.extended and ctx else ""
            return f"{self.tokens:,} (the recipe's --max-model-len{ext})"
        if ctx is not None and ctx.extended_tokens:
            how = ctx.extended_method or "RoPE scaling"
            return f"{self.tokens:,} (native; {how} reaches {ctx.extended_tokens:,} when a recipe enables it)"
        return f"{self.tokens:,} (native)"


def usable_context(model: Model, recipe: Recipe | None) -> UsableContext:
    """The recipe's max_model_len when it sets one, else the model's native context."""
    native = model.context.native_tokens if model.context else None
    if recipe is not None and recipe.max_model_len:
        return UsableContext(recipe.max_model_len, "recipe", native is not None and recipe.max_model_len > native)
    if native is not None:
        return UsableContext(native, "native", False)
    return UsableContext(None, "unknown", False)


def context_needed(workload: Workload) -> int:
    """The prompt plus the answer: vLLM refuses a request whose total passes --max-model-len."""
    return workload.context_tokens + workload.output_tokens


def check_targets(plan: Plan) -> tuple[TargetCheck, ...]:
    """Every target of the plan's workload, in the order a reason names them."""
    return (_context(plan), _first_token(plan), _turn(plan), _decode(plan), _sessions(plan))


def _context(plan: Plan) -> TargetCheck:
    usable, needed = usable_context(plan.model, plan.recipe), context_needed(plan.workload)
    tokens = usable.tokens
    if tokens is None:
        return TargetCheck("context", "unknown", "context window unknown")
    if tokens < needed:
        ctx = plan.model.context
        hint = (f" ({ctx.extended_method or 'RoPE scaling'} reaches {ctx.extended_tokens:,} if a recipe enables it)"
                if ctx and ctx.extended_tokens and ctx.extended_tokens >= needed and usable.basis == "native" else "")
        return TargetCheck("context", "missed", lambda: f"context {tokens:,} < {needed:,} needed{hint}")
    return TargetCheck("context", "met", lambda: f"context {tokens:,} >= {needed:,} needed")


def _first_token(plan: Plan) -> TargetCheck:
    w, ttft = plan.workload, plan.first.ttft_s
    target = w.first_token_target_s
    if w.kind == "agentic" and not plan.first.prefix_caching:
        uncached = plan.first.uncached_tokens
        return TargetCheck("first-token", "missed", lambda: f"first token {fmt_seconds(ttft)}: prefix caching is "
                           f"off ({prefix_off_cite(plan)}), every turn recomputes {uncached:,} tokens")
    if ttft is None:
        return TargetCheck("first-token", "unknown", "first token unknown (no prefill figure)")
    if ttft > target:
        return TargetCheck("first-token", "missed", lambda: f"first token {ttft:.0f} s > {target:.0f} s")
    return TargetCheck("first-token", "met", lambda: f"first token {fmt_seconds(ttft)} <= {target:.0f} s")


def prefix_off_cite(plan: Plan) -> str:
    """Who turns prefix caching off: the caveat's citation, else the recipe."""
    caveat = next((c for c in plan.caveats if c.kind == "prefix-caching-disabled"), None)
    if caveat is not None:
        return caveat.cite or caveat.id
    return "the recipe disables it"


def _turn(plan: Plan) -> TargetCheck:
    turn, target = plan.turn_s, plan.workload.turn_target_s
    if turn is None:
        return TargetCheck("turn", "unknown", "time per turn unknown")
    if turn > target:
        return TargetCheck("turn", "missed", lambda: f"turn {turn:.0f} s > {target:.0f} s")
    return TargetCheck("turn", "met", lambda: f"turn {fmt_seconds(turn)} <= {target:.0f} s")


def _decode(plan: Plan) -> TargetCheck:
    speed, target = plan.speed.tok_s, plan.workload.decode_target_tok_s
    if speed is None:
        return TargetCheck("decode", "unknown", "decode speed unknown")
    if speed < target:
        return TargetCheck("decode", "missed", lambda: f"decode {speed:.0f} tok/s < {target:.0f} tok/s")
    return TargetCheck("decode", "met", lambda: f"decode {speed:.0f} tok/s >= {target:.0f} tok/s")


def _sessions(plan: Plan) -> TargetCheck:
    tokens, sessions = plan.workload.context_tokens, plan.pool.sessions
    if sessions is None:
        return TargetCheck("sessions", "unknown",
                           lambda: f"room for a {tokens:,}-token session unknown (KV size unknown)")
    if sessions == 0:
        return TargetCheck("sessions", "missed", lambda: f"no room for one {tokens:,}-token session")
    return TargetCheck("sessions", "met", lambda: f"{plural(sessions, 'session')} of {tokens:,} tokens fit")
