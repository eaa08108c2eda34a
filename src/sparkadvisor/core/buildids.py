"""Finding the build a person meant: by id in any case, by Hugging Face repo name, or by closest spelling.

One resolver behind every command that takes a build (`show`, `export`, `compare`, `bench`,
`probe`): a typo gets one suggestion, or the few that are about as close, never the whole list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from sparkadvisor.core.records import record

if TYPE_CHECKING:
    from sparkadvisor.core.schema import Build

MAX_SUGGESTIONS = 3
"""Suggestions named for a misspelt id."""
CLOSE_ENOUGH = 0.75
"""Similarity (difflib's ratio, 0-1) below which a spelling is not suggested."""
TIE = 0.03
"""Suggestions within this much of the closest are named beside it."""
HUB_PREFIXES = ("https://huggingface.co/", "http://huggingface.co/", "huggingface.co/", "https://hf.co/", "hf.co/")
"""How a repo name is often pasted: as its hub address."""


@record(kw_only=False)
class BuildMatch:
    """What a typed build name resolves to."""

    build_id: str | None = None
    """The one build meant, when there is exactly one."""
    suggestions: tuple[str, ...] = ()
    """Ids to offer when there is not: the builds of a shared repo, or the closest spellings."""
    why: str = ""
    """"shared repo", "close spelling", "contains" or "" (nothing like it)."""


def _repo_name(text: str) -> str:
    lowered = text.strip().lower()
    for prefix in HUB_PREFIXES:
        if lowered.startswith(prefix):
            return lowered[len(prefix):].strip("/")
    return lowered


def match_build(builds: Mapping[str, Build], typed: str) -> BuildMatch:
    """The build `typed` names: its id (any case), or its repo when one build has that repo;
    else the builds of that repo, the ids that contain it, or the closest spellings."""
    if typed in builds:
        return BuildMatch(typed)
    lowered = typed.strip().lower()
    by_id = {b.lower(): b for b in builds}
    if lowered in by_id:
        return BuildMatch(by_id[lowered])
    repo = _repo_name(typed)
    same_repo = sorted(b.id for b in builds.values() if b.repo.lower() == repo)
    if len(same_repo) == 1:
        return BuildMatch(same_repo[0])
    if same_repo:
        return BuildMatch(None, tuple(same_repo), "shared repo")
    containing = tuple(sorted(b for low, b in by_id.items() if lowered and lowered in low))
    if containing:
        return BuildMatch(None, containing, "contains")
    close = closest(lowered, by_id) or closest(repo, {b.repo.lower(): b.id for b in builds.values()})
    return BuildMatch(None, close, "close spelling" if close else "")


def closest(typed: str, names: Mapping[str, str]) -> tuple[str, ...]:
    """The values of `names` whose keys are spelt most like `typed`: the closest, and any
    others about as close, at most MAX_SUGGESTIONS."""
    from difflib import SequenceMatcher

    matcher = SequenceMatcher(b=typed, autojunk=False)
    scored = []
    for key, value in names.items():
        matcher.set_seq1(key)
        if matcher.real_quick_ratio() >= CLOSE_ENOUGH and matcher.quick_ratio() >= CLOSE_ENOUGH:
            scored.append((matcher.ratio(), value))
    scored = sorted((s for s in scored if s[0] >= CLOSE_ENOUGH), key=lambda s: (-s[0], s[1]))
    if not scored:
        return ()
    best = scored[0][0]
    return tuple(dict.fromkeys(value for score, value in scored if score >= best - TIE))[:MAX_SUGGESTIONS]


def unknown_build_sentence(typed: str, match: BuildMatch, shown: int = 5) -> str:
    """One sentence for a name that did not resolve to one build."""
    if match.why == "shared repo":
        listed = _listed(match.suggestions, shown)
        return f"{typed!r} is the repo of {len(match.suggestions)} builds: {listed}; name one"
    if not match.suggestions:
        return f"unknown build {typed!r}; `sparkadvisor rank` lists the build ids"
    if len(match.suggestions) <= MAX_SUGGESTIONS:
        return f"unknown build {typed!r}; did you mean {_either(match.suggestions)}?"
    return f"unknown build {typed!r}; builds whose id contains it: {_listed(match.suggestions, shown)}"


def _either(ids: tuple[str, ...]) -> str:
    return ids[0] if len(ids) == 1 else f"{', '.join(ids[:-1])} or {ids[-1]}"


def _listed(ids: Iterable[str], shown: int) -> str:
    ids = tuple(ids)
    text = ", ".join(ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
