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

TARGET_KEYS: tuple[TargetKey, ...] = ("context", "first-token", "turn", "decode", "sessions")
"""The workload's targets, in the order a reason names them (and `Plan.statuses` holds them)."""


@record(kw_only=False)
class TargetCheck:
    """One target of the workload against one plan: its status, and the sentence that says so."""

    key: TargetKey
    status: Status
    text: str
    """In words, e.g. "context 32,768 < 100,200 needed"."""


@record(kw_only=False)
class UsableContext:
    """The longest prompt plus answer the served model accepts (vLLM's --max-model-len)."""

    tokens: int | None
    """None when neither the recipe nor the model's card says."""
    basis: Literal["recipe", "native", "setting", "pool", "unknown"]
    """The user's --max-model-len, else the recipe's max_model_len, else the model's native context, or
    ("pool") the native context cut to what the KV pool holds of one request, as the export writes it."""
    extended: bool
    """The length goes past the native context: it relies on the recipe's extension (YaRN, ...)."""
    asked: int | None = None
    """The user's --max-model-len when it asked for more than the build serves here (`tokens` is then
    the longest it serves)."""
    pool_cap: int | None = None
    """The longest max-model-len the KV pool holds one request of, when it is shorter than `tokens`: for
    the "pool" basis the native context it was cut from is `asked`; for the recipe's or the user's length,
    vLLM would not start (`starts`)."""

    @property
    def starts(self) -> bool:
        """vLLM starts with this length: the KV pool holds a request of it (unknown pools count as holding)."""
        return self.pool_cap is None or self.basis == "pool"

    def describe(self, model: Model) -> str:
        """"32,768 (native; YaRN factor 4 reaches 131,072 when a recipe enables it)"."""
        if self.tokens is None:
            return "unknown (neither the model's card nor a recipe gives it)"
        ctx = model.context
        ext = f", past the native {ctx.native_tokens:,} by {ctx.extended_method or 'RoPE scaling'}" \
            if self.extended and ctx else ""
        if self.basis == "pool":
            return (f"{self.tokens:,} (the model's native {self.asked:,}, cut to what the KV pool holds of one "
                    "request, as the export writes it)")
        if not self.starts:
            whose = "--max-model-len as set" if self.basis == "setting" else "the recipe's --max-model-len"
            return (f"{self.tokens:,} ({whose}{ext}; one request of it needs more KV cache than this plan's pool, "
                    f"which holds {self.pool_cap:,} tokens of one: vLLM would not start)")
        if self.basis == "setting":
            if self.asked:
                return (f"{self.tokens:,} (the longest this build serves here{ext}; --max-model-len asked for "
                        f"{self.asked:,}, which vLLM would refuse)")
            return f"{self.tokens:,} (--max-model-len as set{ext})"
        if self.basis == "recipe":
            return f"{self.tokens:,} (the recipe's --max-model-len{ext})"
        if ctx is not None and ctx.extended_tokens:
            how = ctx.extended_method or "RoPE scaling"
            return f"{self.tokens:,} (native; {how} reaches {ctx.extended_tokens:,} when a recipe enables it)"
        return f"{self.tokens:,} (native)"


def usable_context(model: Model, recipe: Recipe | None, limit: int | None = None) -> UsableContext:
    """The recipe's max_model_len when it sets one, else the model's native context. Under the user's
    --max-model-len `limit`: the smaller of it and the longest the build serves here (the recipe's
    length or the native one, whichever is longer: vLLM refuses a length past what config.json and the
    recipe's extension allow)."""
    native = model.context.native_tokens if model.context else None
    if recipe is not None and recipe.max_model_len:
        own = UsableContext(recipe.max_model_len, "recipe", native is not None and recipe.max_model_len > native)
    elif native is not None:
        own = UsableContext(native, "native", False)
    else:
        return UsableContext(None, "unknown", False)
    if limit is None:
        return own
    assert own.tokens is not None
    longest = max(own.tokens, native or 0)
    tokens = min(limit, longest)
    if tokens == own.tokens and limit <= longest:
        return own
    return UsableContext(tokens, "setting", native is not None and tokens > native, limit if limit > longest else None)


def pool_cap(pool_tokens: float | None) -> int | None:
    """The longest --max-model-len a KV pool of `pool_tokens` holds one request of, in whole 1,024s of tokens:
    vLLM refuses to start past it ("To serve at least one request with the models's max seq len ... KV
    cache is needed, which is larger than the available KV cache memory"). None when the pool is unknown."""
    return None if pool_tokens is None else max(1024, int(pool_tokens) // 1024 * 1024)


def within_pool(usable: UsableContext, pool_tokens: float | None) -> UsableContext:
    """`usable` held against the KV pool: the native context cut to the pool's cap (the export writes that);
    the recipe's or the user's length kept, but marked as one vLLM would not start with."""
    cap = pool_cap(pool_tokens)
    if usable.tokens is None or cap is None or cap >= usable.tokens:
        return usable
    if usable.basis == "native":
        return UsableContext(cap, "pool", False, usable.tokens, cap)
    return UsableContext(usable.tokens, usable.basis, usable.extended, usable.asked, cap)


def context_needed(workload: Workload) -> int:
    """The prompt plus the answer: vLLM refuses a request whose total passes --max-model-len."""
    return workload.context_tokens + workload.output_tokens


def judge_targets(plan: Plan) -> tuple[Status, ...]:
    """The status of each target (`TARGET_KEYS` order): all the ranking reads. A ranking judges
    thousands of plans and a view shows a few, so the sentences wait for `check_targets`."""
    context = _context(plan)
    if not plan.fit.fits:  # a build that cannot load on these nodes has no first token, turn, speed or session
        return (context, "missed", "missed", "missed", "missed")
    # A prompt the context refuses opens no session, however many the KV pool would hold.
    return (context, _first_token(plan), _turn(plan), _decode(plan), "missed" if context == "missed" else
            _sessions(plan))


def check_targets(plan: Plan) -> tuple[TargetCheck, ...]:
    """Every target of the plan's workload with its sentence, in the order a reason names them."""
    return tuple(TargetCheck(key, status, say(plan, status))
                 for key, status, say in zip(TARGET_KEYS, plan.statuses, _SENTENCES, strict=True))


def _context(plan: Plan) -> Status:
    # `Plan.usable_context` without its record: a ranking judges every plan (`within_pool` says it in words).
    inputs = plan.pool.inputs
    tokens = inputs.max_model_len
    if tokens is None:
        return "unknown"
    cap = pool_cap(plan.kv_pool_tokens)
    if cap is not None and cap < tokens:
        if inputs.origins[:1] != (NATIVE_ORIGIN,):
            return "missed"  # the recipe's or the user's length: vLLM would not start
        tokens = cap
    return "missed" if tokens < context_needed(plan.workload) else "met"


NATIVE_ORIGIN = "the model's native context"
"""`PoolInputs.origins`' first entry when the pool is sized for the model's native context."""


def _context_text(plan: Plan, status: Status) -> str:
    usable, needed = plan.usable_context, context_needed(plan.workload)
    if status == "unknown":
        return "context window unknown"
    if status == "missed" and not usable.starts:
        return (f"context {usable.tokens:,}: one request of it needs more KV cache than the pool holds "
                f"({usable.pool_cap:,} tokens), so vLLM would not start")
    if status == "missed":
        ctx = plan.model.context
        hint = (f" ({ctx.extended_method or 'RoPE scaling'} reaches {ctx.extended_tokens:,} if a recipe enables it)"
                if ctx and ctx.extended_tokens and ctx.extended_tokens >= needed and usable.basis == "native" else "")
        return f"context {usable.tokens:,} < {needed:,} needed{hint}"
    return f"context {usable.tokens:,} >= {needed:,} needed"


def _recomputes_every_turn(plan: Plan) -> bool:
    """An agent's turn with prefix caching off: a miss whatever the first-token figure says."""
    return plan.workload.kind == "agentic" and not plan.first.prefix_caching


def _not_here(plan: Plan) -> str:
    """What a figure of a build that cannot load on these nodes says instead of a number."""
    return f"it does not fit on {plural(plan.cluster.nodes, 'node')}"


def _target(target: float) -> str:
    """A target as the user set it: 20, 0.5, 12.5 (never rounded to 0 or 1)."""
    return f"{target:g}"


def _past(value: float | None, target: float, *, above: bool, equal: bool = False) -> tuple[str, str]:
    """(value, target), the value with the fewest decimals that still reads on its side of the
    target: a 20.4 s first token missing 20 s prints "20.4 s > 20 s", not "20 s > 20 s". A status
    other than unknown has a value (the callers say unknown first)."""
    if value is None:
        return "unknown", _target(target)
    for places in range(4):
        shown = round(value, places)
        if (equal and shown == target) or ((shown > target) if above else (shown < target)):
            return f"{value:.{places}f}", _target(target)
    return f"{value:g}", _target(target)


def _seconds_past(value: float | None, target: float) -> tuple[str, str]:
    """(duration with its unit, target) for a time past its target: as `fmt_seconds` writes it where that reads
    past the target, else with the decimals `_past` needs ("20.4 s > 20 s")."""
    if value is not None and value >= 90 and fmt_seconds(value) != fmt_seconds(target):
        return fmt_seconds(value), _target(target)
    shown, limit = _past(value, target, above=True)
    return f"{shown} s", limit


def _first_token(plan: Plan) -> Status:
    """For a plan that fits (`judge_targets`)."""
    ttft = plan.first.ttft_s
    if _recomputes_every_turn(plan):
        return "missed"
    if ttft is None:
        return "unknown"
    if ttft > plan.workload.first_token_target_s:
        return "missed"  # at a bound, the first token comes later still
    return "unknown" if plan.first_token_bound else "met"


def _first_token_text(plan: Plan, status: Status) -> str:
    ttft, target = plan.first.ttft_s, plan.workload.first_token_target_s
    if not plan.fits:
        return f"no first token: {_not_here(plan)}"
    if _recomputes_every_turn(plan):
        return (f"first token {fmt_seconds(ttft)}: prefix caching is off ({prefix_off_cite(plan)}), every turn "
                f"recomputes {plan.first.uncached_tokens:,} tokens, a miss for an agent whatever the first token")
    if status == "unknown" and ttft is not None:
        return (f"first token at least {fmt_seconds(ttft)} ({plan.first_token_bound_reason(plan.slow_route)}): "
                f"<= {_target(target)} s unknown")
    if status == "unknown":
        return "first token unknown (no prefill figure)"
    if status == "missed":
        value, limit = _seconds_past(ttft, target)
        return f"first token {'at least ' * plan.first_token_bound}{value} > {limit} s"
    return f"first token {fmt_seconds(ttft)} <= {_target(target)} s"


def prefix_off_cite(plan: Plan) -> str:
    """Who turns prefix caching off: the caveat's citation, else the recipe."""
    caveat = next((c for c in plan.caveats if c.kind == "prefix-caching-disabled"), None)
    if caveat is not None:
        return caveat.cite or caveat.id
    return "the recipe disables it"


def _turn(plan: Plan) -> Status:
    """For a plan that fits (`judge_targets`)."""
    turn = plan.turn_s
    if turn is None:
        return "unknown"
    if turn > plan.workload.turn_target_s:
        return "missed"  # at a bound on decode or first token, the turn is at least this long
    return "unknown" if plan.turn_bound else "met"


def _turn_text(plan: Plan, status: Status) -> str:
    turn, target = plan.turn_s, plan.workload.turn_target_s
    if not plan.fits:
        return f"no turns: {_not_here(plan)}"
    if status == "unknown" and turn is not None:
        return f"turn at least {fmt_seconds(turn)} ({turn_bound_text(plan)}): <= {_target(target)} s unknown"
    if status == "unknown":
        return "time per turn unknown"
    if status == "missed":
        value, limit = _seconds_past(turn, target)
        return f"turn {'at least ' * plan.turn_bound}{value} > {limit} s"
    return f"turn {fmt_seconds(turn)} <= {_target(target)} s"


def turn_bound_text(plan: Plan) -> str:
    """Which of a turn's parts is a bound (`Plan.turn_bound`), in a few words."""
    both = plan.decode_bound and plan.first_token_bound
    return "the decode speed and the first token are bounds" if both else \
        "the decode speed is a bound" if plan.decode_bound else "the first token is a bound"


def _decode(plan: Plan) -> Status:
    """For a plan that fits (`judge_targets`)."""
    speed = plan.speed.tok_s
    if speed is None:
        return "unknown"
    if speed < plan.workload.decode_target_tok_s:
        return "missed"  # a bound below the target: the speed is lower still
    return "unknown" if plan.decode_bound else "met"


def _decode_text(plan: Plan, status: Status) -> str:
    speed, target = plan.speed.tok_s, plan.workload.decode_target_tok_s
    if not plan.fits:
        return f"no decode: {_not_here(plan)}"
    if status == "unknown" and speed is not None:
        return f"decode at most {speed:.0f} tok/s ({_bound_text(plan)}): >= {_target(target)} tok/s unknown"
    if status == "unknown":
        return "decode speed unknown"
    if status == "missed":
        value, limit = _past(speed, target, above=False)
        return f"decode {'at most ' * plan.decode_bound}{value} tok/s < {limit} tok/s"
    value, limit = _past(speed, target, above=True, equal=True)
    return f"decode {value} tok/s >= {limit} tok/s"


def _bound_text(plan: Plan) -> str:
    """Why the decode speed is a bound (`Plan.decode_bound`), in a clause."""
    return plan.decode.bound_reason if plan.decode is not None else "the decode speed is a bound"


def _sessions(plan: Plan) -> Status:
    """For a plan that fits (`judge_targets`)."""
    sessions = plan.pool.sessions
    if sessions is None:
        return "unknown"
    return "missed" if sessions == 0 else "met"


def _sessions_text(plan: Plan, status: Status) -> str:
    tokens, sessions = plan.workload.context_tokens, plan.pool.sessions
    if not plan.fits:
        return f"no room for one {tokens:,}-token session: {_not_here(plan)}"
    if status == "unknown":
        return f"room for a {tokens:,}-token session unknown (KV size unknown)"
    if status == "missed" and sessions:
        return (f"no {tokens:,}-token session: the context refuses its prompt, though the KV pool would hold "
                f"{plural(sessions, 'session')}")
    if status == "missed":
        return f"no room for one {tokens:,}-token session"
    return f"{plural(sessions or 0, 'session')} of {tokens:,} tokens fit"


_SENTENCES: tuple[Callable[[Plan, Status], str], ...] = (
    _context_text, _first_token_text, _turn_text, _decode_text, _sessions_text)
"""Each target's sentence, in `TARGET_KEYS` order."""
