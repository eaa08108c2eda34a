"""Parse, check and merge catalogs. Pure: text in, a `Catalog` or a `CatalogError` out.

Errors name the file, the line and the field, and say what would be valid, in one
sentence each; they are collected, not raised one at a time, so a user fixing a
catalog sees every problem at once.
"""

from __future__ import annotations

import datetime as dt
import re
import typing
from dataclasses import is_dataclass, replace
from typing import TYPE_CHECKING, Any

from sparkadvisor.core.formats import KV_DTYPE_BYTES
from sparkadvisor.core.records import field_names, iter_tables, record
from sparkadvisor.core.sanity import MAX_CATALOG_BYTES, MAX_NESTING, sanity_findings
from sparkadvisor.core.schema import (
    HF_REPO_ID,
    PATTERN_WORDS,
    REPO_FIELDS,
    Catalog,
    Context,
    Recipe,
    repo_id_problem,
)
from sparkadvisor.core.tomllines import TomlLines, index_lines
from sparkadvisor.core.workload import ENGINES

if TYPE_CHECKING:
    import tomllib

    from sparkadvisor.core.index import CatalogIndex

__all__ = ["CatalogError", "CatalogIndex", "Problem", "check_references", "iter_tables", "merge", "parse_catalog",
           "source_ids"]


@record(kw_only=False)
class Problem:
    """One thing wrong with a catalog."""

    file: str
    """File name as the user gave it."""
    line: int | None
    """1-based line, when it can be found."""
    path: str
    """Field path, e.g. builds[2] "x" > size.value."""
    message: str
    """What is wrong and what would be valid."""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field_part = f" {self.path}:" if self.path else ""
        return f"{where}:{field_part} {self.message}"


class CatalogError(Exception):
    """A catalog that cannot be used, with every problem found."""

    def __init__(self, problems: list[Problem]):
        files = list(dict.fromkeys(p.file for p in problems))
        self.problems = sorted(problems, key=lambda p: (files.index(p.file), p.line or 0))
        """Each file's problems in the order of its lines (the checks find them in another)."""
        super().__init__("\n".join(str(p) for p in problems))


# --- parsing ------------------------------------------------------------------


def parse_catalog(text: str, name: str = "catalog.toml") -> Catalog:
    """Parse TOML text into a Catalog; references are checked by `check_references`.

    The one place a catalog meets pydantic (through `core.validation`). The limits of
    `core.sanity` come first, so nothing the arithmetic cannot carry reaches the schema."""
    import tomllib

    from pydantic import ValidationError

    from sparkadvisor.core.validation import validate_catalog

    if len(text) > MAX_CATALOG_BYTES:
        raise CatalogError([Problem(name, None, "", f"is {len(text) / 2**20:.1f} MiB; a catalog file holds at most "
                                                    f"{MAX_CATALOG_BYTES // 2**20} MiB of text")])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise CatalogError([_toml_problem(name, error, text)]) from None
    except RecursionError:
        raise CatalogError([_too_deep(name, text)]) from None
    lines: TomlLines | None = None
    problems = []
    if findings := sanity_findings(data):
        lines = index_lines(text)
        problems = [Problem(name, lines.find(loc), _field_path(loc, data), message) for loc, message in findings]
        if any("nested more than" in p.message for p in problems):
            raise CatalogError(problems)
    try:
        catalog = validate_catalog(data)
    except ValidationError as error:
        lines = lines or index_lines(text)
        problems += [_validation_problem(name, lines, data, item) for item in error.errors()
                     if not _already_said(problems, lines, tuple(item["loc"]))]
    if problems:
        raise CatalogError(problems)
    return catalog


def _too_deep(name: str, text: str) -> Problem:
    depth, line = index_lines(text).deepest
    return Problem(name, line or None, "", f"arrays or tables are nested {depth} deep here; a catalog needs a few "
                                           f"levels (at most {MAX_NESTING})")


def _already_said(problems: list[Problem], lines: TomlLines, loc: tuple[Any, ...]) -> bool:
    """A schema error at a place the sanity limits already named (one sentence per place)."""
    line = lines.find(loc)
    return any(p.line == line and line is not None for p in problems)


def _toml_problem(name: str, error: tomllib.TOMLDecodeError, text: str) -> Problem:
    """tomllib's reason with its line; "at end of document" becomes the line where the
    string, array or table left open began (or the last line written)."""
    message = str(error)
    match = re.search(r"\(at line (\d+), column (\d+)\)", message)
    line = int(match.group(1)) if match else None
    reason = re.sub(r"\s*\((at line \d+, column \d+|at end of document)\)", "", message)
    reason = f"{reason[0].lower()}{reason[1:]}"
    if line is None and "at end of document" in message:
        found = index_lines(text)
        if found.unclosed:
            line, what = found.unclosed
            reason += f" ({what} opened here is never closed)"
        else:
            line = found.last_line or None
            reason += " at the end of the file"
    return Problem(name, line, "", f"not valid TOML: {reason}")


def _validation_problem(
    name: str, lines: TomlLines, data: dict[str, Any], item: Any
) -> Problem:
    loc = tuple(item["loc"])
    where = loc[:-1] if item["type"] == "missing" else loc
    return Problem(name, lines.find(loc), _field_path(where, data), _message(loc, item))


def _message(loc: tuple[Any, ...], item: Any) -> str:
    kind = item["type"]
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        allowed = ", ".join(_allowed_keys(loc[:-1]))
        return f"unknown key {loc[-1]!r}; valid keys here are: {allowed}"
    if kind == "missing":
        return f"missing required key {loc[-1]!r}"
    pattern = item.get("ctx", {}).get("pattern") if kind == "string_pattern_mismatch" else None
    if pattern == HF_REPO_ID and loc[-1] in REPO_FIELDS:  # a patch's `repo` is a GitHub URL: its own words below
        return repo_id_problem(str(item.get("input")))
    if kind == "dataclass_type":
        return f"should be a table (got {_shown(item.get('input'))})"
    value = item.get("input")
    if kind == "string_type" and isinstance(value, dt.date | dt.time):
        what = "time" if isinstance(value, dt.time) else "date"
        return f'should be text in quotes (got the TOML {what} {value.isoformat()}; write "{value.isoformat()}")'
    if pattern in PATTERN_WORDS:
        return f"should be {PATTERN_WORDS[pattern]} (got {_shown(value)})"
    if kind == "string_too_short":
        least = item.get("ctx", {}).get("min_length", 1)
        return f"should {'not be empty' if least == 1 else f'have at least {least} characters'} (got {_shown(value)})"
    text = item["msg"].replace("Input should be", "should be").replace("a valid tuple", "a valid list")
    text = text.replace("Value error, ", "")
    if kind == "value_error":
        return text
    return f"{text} (got {_shown(item.get('input'))})"


def _shown(value: Any) -> str:
    """A value as a problem sentence quotes it: repr, cut short (a file can hold a huge one)."""
    text = value.isoformat() if isinstance(value, dt.date | dt.time) else repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Field names of the schema table at `loc` (list indices and dict keys skipped)."""
    table: type = Catalog
    for part in loc:
        if isinstance(part, int) or part not in field_names(table):
            continue
        inner = _record_in(typing.get_type_hints(table)[part])
        if inner is None:
            break
        table = inner
    return field_names(table)


def _record_in(annotation: Any) -> type | None:
    if isinstance(annotation, type) and is_dataclass(annotation):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _record_in(arg)
        if found is not None:
            return found
    return None


def _field_path(loc: tuple[Any, ...], data: dict[str, Any]) -> str:
    """`builds[2] "glm-nvfp4" > size.value`: the index and the id a reader searches for."""
    parts: list[str] = []
    node: Any = data
    for part in loc:
        if isinstance(part, int):
            parts[-1] += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                parts[-1] += f' "{node["id"]}"'
        else:
            parts.append(str(part))
            node = node.get(part) if isinstance(node, dict) else None
    return ".".join(parts).replace('" .', '" > ').replace('".', '" > ')


# --- references ---------------------------------------------------------------


def source_ids(ref: str | tuple[str, ...] | list[str]) -> list[str]:
    """The ids in a `source` field."""
    return [ref] if isinstance(ref, str) else list(ref)


def check_references(catalog: Catalog, name: str = "catalog",
                     texts: dict[str, str] | None = None) -> list[Problem]:
    """Ids that name nothing, duplicated ids and recipes whose parallelism is inconsistent.

    `texts` (file name -> TOML text, in merge order) lets each problem name the file and
    line where the entry was written."""
    where = _Locator(texts or {}, name)
    problems = _duplicate_ids(catalog, where)
    models = {m.id for m in catalog.models}
    builds = {b.id for b in catalog.builds}
    caveats = {c.id for c in catalog.caveats}
    for build in catalog.builds:
        if build.model not in models:
            problems.append(where.ref("builds", build.id, "model", build.model, "model", models))
        problems += _caveat_refs(where, "builds", build.id, build.caveats, caveats)
    hardware = {h.id: h for h in catalog.hardware}
    build_models = {b.id: b.model for b in catalog.builds}
    contexts = {m.id: m.context for m in catalog.models}
    for recipe in catalog.recipes:
        if recipe.build not in builds:
            problems.append(where.ref("recipes", recipe.id, "build", recipe.build, "build", builds))
        if recipe.hardware not in hardware:
            problems.append(where.ref("recipes", recipe.id, "hardware", recipe.hardware, "hardware", set(hardware)))
        elif recipe.nodes > hardware[recipe.hardware].max_nodes:
            problems.append(where.problem("recipes", recipe.id, "nodes", f"{recipe.nodes} nodes is more than the "
                                          f"{hardware[recipe.hardware].max_nodes} the hardware allows (max_nodes)"))
        if recipe.tp * recipe.pp != recipe.nodes:
            problems.append(where.problem("recipes", recipe.id, "nodes", f"tp x pp = {recipe.tp * recipe.pp} but "
                                          f"nodes = {recipe.nodes}; with one GPU per node they must be equal"))
        if recipe.kv_cache_dtype not in KV_DTYPE_BYTES:
            problems.append(where.problem("recipes", recipe.id, "kv_cache_dtype", f"{recipe.kv_cache_dtype!r} is not a "
                                          f"KV dtype the advisor can cost; use one of {', '.join(KV_DTYPE_BYTES)}"))
        problems += _caveat_refs(where, "recipes", recipe.id, recipe.caveats, caveats)
        problems += _context_problems(where, recipe, contexts.get(build_models.get(recipe.build, "")))
    return problems + _caveat_engines(catalog, where) + _source_refs(catalog, where)


def _caveat_engines(catalog: Catalog, where: _Locator) -> list[Problem]:
    """A caveat's `engines` name engines something in the catalog runs: a misspelt one would silently leave every
    plan out of its reach."""
    known = set(ENGINES) | {r.engine for r in catalog.recipes} | {e for b in catalog.builds for e in b.engines} | {
        e for h in catalog.hardware if h.serving is not None for e in h.serving.engines}
    return [where.ref("caveats", caveat.id, "engines", engine, "engine", known)
            for caveat in catalog.caveats for engine in caveat.engines if engine not in known]


def _context_problems(where: _Locator, recipe: Recipe, context: Context | None) -> list[Problem]:
    """A recipe cannot serve a longer context than the model reaches, extended or not."""
    if context is None or recipe.max_model_len is None or recipe.max_model_len <= context.longest_tokens:
        return []
    reach = (f"its extended context {context.extended_tokens:,}" if context.extended_tokens
             else f"its native context {context.native_tokens:,} (no extension is recorded)")
    return [where.problem("recipes", recipe.id, "max_model_len", f"{recipe.max_model_len:,} is longer than the "
                          f"model serves: {reach}")]


class _Locator:
    """Finds the file, line and path of a catalog entry for an error message."""

    def __init__(self, texts: dict[str, str], default_name: str):
        import tomllib

        self.files = []
        for file_name, text in texts.items():
            try:
                self.files.append((file_name, tomllib.loads(text), index_lines(text)))
            except tomllib.TOMLDecodeError:
                continue
        self.default_name = default_name

    def problem(self, kind: str, item_id: str, key: str, message: str) -> Problem:
        for file_name, data, lines in reversed(self.files):
            for position, item in enumerate(data.get(kind, [])):
                if isinstance(item, dict) and item.get("id") == item_id:
                    loc = (kind, position, key)
                    return Problem(file_name, lines.find(loc), f'{kind}[{position}] "{item_id}" > {key}',
                                   message)
        return Problem(self.default_name, None, f'{kind} "{item_id}" > {key}', message)

    def ref(self, kind: str, item_id: str, key: str, value: str, target: str, known: set[str]) -> Problem:
        hint = ", ".join(sorted(known)[:8]) + (", ..." if len(known) > 8 else "") or "none defined"
        return self.problem(kind, item_id, key, f"names {target} {value!r}, which is not in the catalog "
                                                f"(known: {hint})")


def _duplicate_ids(catalog: Catalog, where: _Locator) -> list[Problem]:
    problems = []
    for kind in ("hardware", "models", "builds", "recipes", "caveats"):
        seen: set[str] = set()
        for item in getattr(catalog, kind):
            if item.id in seen:
                problems.append(where.problem(kind, item.id, "id", "this id is used twice; ids must be unique"))
            seen.add(item.id)
    return problems


def _caveat_refs(where: _Locator, kind: str, item_id: str, ids: tuple[str, ...], known: set[str]) -> list[Problem]:
    return [where.ref(kind, item_id, "caveats", cid, "caveat", known) for cid in ids if cid not in known]


def _source_refs(catalog: Catalog, where: _Locator) -> list[Problem]:
    known = set(catalog.sources)
    hint = ", ".join(sorted(known)[:6]) + (", ..." if len(known) > 6 else "") or "none defined"
    problems = []
    for kind in ("hardware", "models", "builds", "recipes", "caveats"):
        for item in getattr(catalog, kind):
            for path, table in iter_tables(item):
                names = field_names(type(table))
                for field in ("source", "reference_source"):
                    ref = getattr(table, field, None) if field in names else None
                    for sid in source_ids(ref) if ref is not None else ():
                        if sid not in known:
                            key = f"{path}.{field}" if path else field
                            problems.append(where.problem(kind, item.id, key, f"names source {sid!r}, which is "
                                                                              f"not in [sources] (known: {hint})"))
    return problems


# --- merging and lookup -------------------------------------------------------


def merge(base: Catalog, overlay: Catalog) -> Catalog:
    """`overlay` added to `base`; an entry with an id already in `base` replaces it."""
    merged: dict[str, Any] = {"sources": {**base.sources, **overlay.sources}}
    for kind in ("hardware", "models", "builds", "recipes", "caveats"):
        by_id = {item.id: item for item in getattr(base, kind)}
        by_id.update({item.id: item for item in getattr(overlay, kind)})
        merged[kind] = tuple(by_id.values())
    return replace(base, **merged)


def __getattr__(name: str) -> object:
    """`CatalogIndex` lives in core.index; importing it from here still works."""
    if name == "CatalogIndex":
        from sparkadvisor.core.index import CatalogIndex

        return CatalogIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
