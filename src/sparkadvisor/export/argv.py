"""The exact `vllm serve` argument list a plan implies, node by node.

Every number comes from the plan: TP/PP, gpu-memory-utilization from its budget, the
pinned KV cache, the KV dtype in force; the rest from the recipe the plan used. A recipe's
verbatim extra arguments pass only when the plan does not already set them and vLLM 0.33
knows the flag, or the recipe runs its own image for a build stock vLLM cannot run (a
custom-image caveat), whose flags are that image's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from sparkadvisor.core.plan import Plan
from sparkadvisor.core.units import GiB
from sparkadvisor.export.flags import dest_of, is_known, option_name

MASTER_PORT = 29501
"""vLLM's default --master-port, written out so the workers' scripts can be checked against it."""
REMOVED_FLAGS = {"--swap-space": "removed from vLLM in 0.18 (unified memory has nowhere to swap to)"}
EXPORT_SETS = ("model", "config", "host", "port")
"""Settings the export writes itself: a recipe's own copy is left out (and named)."""
NEGATIVE_NUMBER = re.compile(r"-\d+|-\d*\.\d+")
"""argparse's own test for a value that looks like a negative number rather than an option."""
LONG_FLAG = re.compile(r"--[a-z0-9][a-z0-9_-]*")
"""What an argparse long option of an image's own looks like; anything else among a recipe's arguments is no flag."""


@dataclass(frozen=True, slots=True)
class EnvRef:
    """A value a script reads from its environment; other formats print the default."""

    name: str
    """Shell variable, e.g. HEAD_ADDR."""
    default: str
    """What the JSON plan, the YAML and the report print."""
    shell_default: str | None = None
    """The default as a script computes it, when it derives from another setting."""


Arg = str | EnvRef
Option = tuple[Arg, ...]
"""One option and its values, e.g. ("--max-model-len", "262144"); the model alone as ("repo",)."""


def resolve(arg: Arg) -> str:
    """The literal value of an argument (an EnvRef's default)."""
    return arg.default if isinstance(arg, EnvRef) else arg


def kv_bytes_arg(n_bytes: float) -> str:
    """--kv-cache-memory-bytes in a form vLLM 0.33 parses: 6G is 6 x 2^30 (binary suffixes take integers only)."""
    whole = int(round(n_bytes))
    for suffix, size in (("G", GiB), ("M", 1 << 20), ("K", 1 << 10)):
        if whole % size == 0:
            return f"{whole // size}{suffix}"
    return str(whole)


def max_model_len(plan: Plan) -> tuple[int | None, str]:
    """--max-model-len and why: the plan's usable context (`Plan.usable_context`): the user's setting within
    what the build serves, else the recipe's, else the model's native context cut to what the KV pool holds
    of one request; None (the flag left out, vLLM reads config.json) when the model's context is unknown.
    Never longer than the model serves: the catalog refuses a recipe past the model's longest context, and
    the export refuses a length the pool cannot hold (`spec._check`)."""
    usable = plan.usable_context
    if usable.tokens is None:
        return None, "left out: the model's context window is unknown, so vLLM takes it from config.json"
    ctx = plan.model.context
    extended = (f", the EXTENDED context: past the native {ctx.native_tokens:,} by "
                f"{ctx.extended_method or 'RoPE scaling'}, which the recipe must enable"
                if usable.extended and ctx is not None else "")
    if usable.basis == "setting":
        if usable.asked:
            return usable.tokens, (f"the longest this build serves here (--max-model-len asked for "
                                   f"{usable.asked:,}){extended}")
        return usable.tokens, f"as --max-model-len sets it{extended}"
    if usable.basis == "recipe":
        return usable.tokens, f"the recipe's{extended}"
    if usable.basis == "pool":
        return usable.tokens, f"capped at the KV pool (the model's native context is {usable.asked:,})"
    if ctx is not None and ctx.extended_tokens:
        return usable.tokens, "the model's native context (the extended one needs a recipe that enables it)"
    return usable.tokens, "the model's native context"


def speculative_json(plan: Plan) -> str | None:
    """The --speculative-config JSON of the recipe, or None."""
    spec = plan.recipe.speculative if plan.recipe else None
    if spec is None:
        return None
    config: dict[str, object] = {"method": spec.method}
    if spec.draft_repo:
        config["model"] = spec.draft_repo
    config["num_speculative_tokens"] = spec.tokens_per_pass
    return json.dumps(config, separators=(",", ":"), ensure_ascii=False)


def graph_options(plan: Plan) -> list[Option]:
    """--enforce-eager when the plan runs without CUDA graphs (the user's --eager/--cuda-graphs, else the
    recipe's mode: the plan's reserve and speed are costed in it), else the recipe's CUDA-graph mode."""
    if plan.speed.eager:
        return [("--enforce-eager",)]
    recipe = plan.recipe
    if recipe is None or recipe.enforce_eager:  # a recipe run eager names no graph mode to keep
        return []
    if recipe.cudagraph_mode:
        mode = json.dumps({"cudagraph_mode": recipe.cudagraph_mode}, separators=(",", ":"), ensure_ascii=False)
        return [("--compilation-config", mode)]
    return []


def parser_options(plan: Plan) -> list[Option]:
    """Tool-call and reasoning parsers (auto tool choice needs the tool-call parser)."""
    recipe, options = plan.recipe, list[Option]()
    if recipe and recipe.tool_call_parser:
        options += [("--tool-call-parser", recipe.tool_call_parser), ("--enable-auto-tool-choice",)]
    if recipe and recipe.reasoning_parser:
        options.append(("--reasoning-parser", recipe.reasoning_parser))
    return options


def model_options(plan: Plan, served_name: str) -> list[Option]:
    """What every node passes, as [flag, values...] groups: the model first, then memory, cache,
    decoding and parsers."""
    budget = plan.budget
    options: list[Option] = [(plan.build.repo,), ("--served-model-name", served_name),
                             ("--tensor-parallel-size", str(plan.tp))]
    if plan.pp > 1:
        options.append(("--pipeline-parallel-size", str(plan.pp)))
    options.append(("--gpu-memory-utilization", f"{budget.utilization:g}"))
    if budget.kv_pinned_bytes is not None:
        options.append(("--kv-cache-memory-bytes", kv_bytes_arg(budget.kv_pinned_bytes)))
    length = max_model_len(plan)[0]
    if length is not None:
        options.append(("--max-model-len", str(length)))
    options.append(("--kv-cache-dtype", plan.kv_cache_dtype))
    inputs = plan.pool.inputs
    if inputs.batched_set:  # the user's; a recipe's own passes with its extra arguments
        options.append(("--max-num-batched-tokens", str(inputs.batched_tokens)))
    if plan.recipe and plan.recipe.block_size:
        options.append(("--block-size", str(plan.recipe.block_size)))
    options.append(("--enable-prefix-caching",) if plan.prefix_caching else ("--disable-prefix-caching",))
    spec = speculative_json(plan)
    if spec:
        options.append(("--speculative-config", spec))
    return options + graph_options(plan) + parser_options(plan)


def model_args(plan: Plan, served_name: str) -> list[Arg]:
    """The same arguments as one flat list."""
    return list(flatten(model_options(plan, served_name)))


def is_option(token: str) -> bool:
    """A token vLLM's argparse reads as an option: it starts with '-', is not '-' alone and not a negative
    number (argparse's own `_parse_optional` rules, kept conservative)."""
    return token.startswith("-") and token != "-" and not NEGATIVE_NUMBER.fullmatch(token)


def group_args(argv: list[str]) -> list[list[str]]:
    """Arguments grouped as [flag, values...]; a leading value stands alone."""
    groups: list[list[str]] = []
    for token in argv:
        if is_option(token) or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups


def flatten(options: tuple[Option, ...] | list[Option]) -> tuple[Arg, ...]:
    """The argument list of option groups."""
    return tuple(arg for option in options for arg in option)


def extra_args(plan: Plan, already: list[Option]) -> tuple[list[Option], list[str], list[str]]:
    """The recipe's verbatim arguments that the plan does not set and its image accepts (vLLM 0.33's, or, where the
    recipe names its own image for a build stock vLLM cannot run, that image's), what was left out (why), and
    which kept ones vLLM 0.33 itself would refuse."""
    kept: list[Option] = []
    dropped: list[str] = []
    forked: list[str] = []
    own_image = fork_image(plan)
    taken = {dest_of(str(o[0])) for o in already if is_option(str(o[0]))} | set(EXPORT_SETS)
    for group in group_args(list(plan.recipe.extra_args) if plan.recipe else []):
        flag, why = option_name(group[0]), ""
        if flag in REMOVED_FLAGS:
            why = REMOVED_FLAGS[flag]
        elif not is_known(flag) and (own_image is None or not LONG_FLAG.fullmatch(flag)):
            why = "not a vLLM 0.33 serve option"
        elif dest_of(flag) in taken:
            why = f"the plan sets {flag} itself"
        elif dest_of(flag) == dest_of("--compilation-config") and plan.speed.eager:
            why = "the plan runs eager (--enforce-eager turns torch.compile and CUDA graphs off)"
        elif dest_of(flag) in {dest_of(str(o[0])) for o in kept}:
            why = f"{flag} is given twice; a config file can hold it once"
        if why:
            dropped.append(f"{' '.join(group)}: {why}")
        else:
            kept.append(tuple(group))
            if not is_known(flag):
                forked.append(" ".join(group))
    return kept, dropped, forked


def fork_image(plan: Plan) -> str | None:
    """The recipe's own image where it runs a build stock vLLM cannot (a custom-image caveat of the recipe's): its
    flags are that image's, not vLLM 0.33's. None otherwise."""
    recipe = plan.recipe
    if recipe is None or not recipe.image or not any(c.kind == "custom-image" for c in plan.caveats):
        return None
    return recipe.image


def launcher_options(nodes: int, rank: int, launcher: str, head: EnvRef) -> list[Option]:
    """Multi-node flags: vLLM's native launcher (--nnodes ... --headless) or the Ray backend."""
    if nodes == 1:
        return []
    if launcher == "ray":
        return [("--distributed-executor-backend", "ray")]
    options: list[Option] = [("--nnodes", str(nodes)), ("--node-rank", str(rank)), ("--master-addr", head),
                             ("--master-port", str(MASTER_PORT))]
    return options + ([("--headless",)] if rank > 0 else [])
