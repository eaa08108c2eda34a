"""Caveat kinds and severities as a reader sees them: a badge that says what the problem
is, a line that says what it means, and the order severities sort in.

The vocabulary itself is `schema.CaveatKind`; a test checks every kind has an entry here.
Views colour a severity (critical red, warning amber, info dim); the core only names it.
"""

from __future__ import annotations

from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Caveat, Severity


@record(kw_only=False)
class CaveatKindInfo:
    """What a caveat kind is called in a table and what it means for a decision."""

    badge: str
    """Short label in tables, e.g. "PREFIX-OFF"."""
    meaning: str
    """One line: what this kind of problem does to a user."""


KINDS: dict[str, CaveatKindInfo] = {
    "prefix-caching-disabled": CaveatKindInfo(
        "PREFIX-OFF", "prefix caching is off: every agent turn recomputes the whole prompt"),
    "prefix-caching-unreliable": CaveatKindInfo(
        "PREFIX-CACHE?", "prefix caching works only some of the time: some turns recompute the prompt"),
    "tool-calls-corrupted": CaveatKindInfo(
        "TOOLCALLS-CORRUPT", "tool-call tokens come out mangled: an agent silently loses its tool calls"),
    "tool-calls-disputed": CaveatKindInfo(
        "TOOLCALLS-DISPUTED", "sources disagree on whether tool calls survive: test before trusting an agent to it"),
    "swap-required": CaveatKindInfo(
        "SWAP", "needs swap on to load: a machine-wide memory policy change"),
    "page-cache-drop": CaveatKindInfo(
        "DROP-CACHES", "drop the page cache before loading or the loader runs out of memory"),
    "custom-image": CaveatKindInfo(
        "CUSTOM-IMAGE", "stock vLLM does not run it: needs a specific container image or build"),
    "patch-required": CaveatKindInfo(
        "PATCH", "needs a patch to vLLM that the recipe applies"),
    "eager-only": CaveatKindInfo(
        "EAGER", "runs without CUDA graphs: a launch cost on every kernel"),
    "memory-utilization-limit": CaveatKindInfo(
        "GMU-LIMIT", "a higher --gpu-memory-utilization hangs or faults the machine"),
    "spec-decode-cache-miss": CaveatKindInfo(
        "SPEC-CACHE-MISS", "speculative decoding makes some requests miss the prefix cache"),
    "slow-cold-load": CaveatKindInfo(
        "SLOW-LOAD", "a cold load takes long or fails on some versions"),
    "quality-loss": CaveatKindInfo(
        "QUALITY", "the quantization measurably lowers answer quality"),
    "output-garbled": CaveatKindInfo(
        "GARBLED-OUTPUT", "output can come out garbled under a stated condition"),
    "server-crash": CaveatKindInfo(
        "CRASHES", "the server is reported to crash under a stated condition"),
    "slow-engine": CaveatKindInfo(
        "SLOW-ENGINE", "reported very slow on an engine or route: on the engines it names, far slower than what the "
                       "model reads and computes"),
    "slow-decode": CaveatKindInfo(
        "SLOW-DECODE", "memory bandwidth caps decode far below what an agent needs"),
}
"""Every caveat kind, by its schema name."""

SEVERITY_ORDER: dict[Severity, int] = {"critical": 0, "warning": 1, "info": 2}
"""Most serious first."""


def badge(caveat: Caveat) -> str:
    """The caveat's badge, e.g. "TOOLCALLS-DISPUTED"."""
    return KINDS[caveat.kind].badge


def by_severity(caveats: tuple[Caveat, ...]) -> tuple[Caveat, ...]:
    """Caveats most serious first, otherwise in catalog order."""
    return tuple(sorted(caveats, key=lambda c: SEVERITY_ORDER[c.severity]))


def slow_route(caveats: tuple[Caveat, ...], engine: str) -> str:
    """How a reason cites the caveat that reports `engine` running this build far slower than what it reads and
    computes (kind slow-engine, naming `engine` among its `engines`), "" for none. On such a route the speed model's
    figure is an upper bound, not a prediction: the defect it reports is no rate the physics can carry. A
    slow-engine caveat that names no engine warns of another route than the plan's, and leaves its figures be."""
    return next((c.cite or c.id for c in caveats if c.kind == "slow-engine" and engine in c.engines), "")


def on_engine(caveats: tuple[Caveat, ...], engine: str) -> tuple[Caveat, ...]:
    """The caveats that concern a plan on `engine`: those naming no engine, and those naming it."""
    if all(not c.engines for c in caveats):
        return caveats
    return tuple(c for c in caveats if not c.engines or engine in c.engines)
