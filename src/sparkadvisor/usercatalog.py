"""The user's catalog of imported builds: add a model and a build read from the hub.

The file lives at `paths.user_catalog_path()` and is merged over the bundled catalog by
`catalogs.load_index`. It is the user's file: an import or a record changes only the tables it
adds or replaces (`core.tomledit`), so comments and everything else stay as written; the new
text comes from tomli_w. The result is re-parsed, must hold exactly the tables meant, and must
merge over the bundled catalog before it replaces the file atomically (a temporary file, then
os.replace): a file that cannot be parsed, or a failed import, leaves the file as it was. An
id already in the user's or the bundled catalog is refused unless `force` is given.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkadvisor import paths
from sparkadvisor.atomic import write_atomic
from sparkadvisor.core.records import to_plain
from sparkadvisor.core.schema import Build, Model, Size, Source
from sparkadvisor.core.units import plural

if TYPE_CHECKING:
    from sparkadvisor.core.derive import Derived
    from sparkadvisor.sources.hub import Progress, RepoFiles

HEADER = ("# sparkadvisor: models and builds added with `sparkadvisor import`, and runs of\n"
          "# `sparkadvisor bench --record`. An import or a record adds or replaces only its own tables:\n"
          "# your comments and edits elsewhere stay as written. Check it with `sparkadvisor check FILE`.\n\n")
KINDS = ("models", "builds")


class ImportConflict(Exception):
    """An id the import would add is already taken; one sentence naming it and --force."""


class UserCatalogError(Exception):
    """The user's catalog cannot be read or written; one sentence naming the file."""


class ImportCancelled(Exception):
    """The person asked to stop before anything was written."""


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import added, and what it learnt."""

    source_id: str
    source: Source
    model: Model
    build: Build
    derived: Derived
    files: RepoFiles
    path: Path
    """The user catalog it was written to."""

    def as_json(self) -> dict[str, Any]:
        """The stable JSON shape of `import --json` (field names are an API)."""
        d = self.derived
        return {
            "model": self.model.id, "build": self.build.id, "repo": self.files.repo,
            "revision": self.files.commit, "requested_revision": self.files.revision,
            "weight_bytes": d.weight_bytes, "bytes_by_dtype": d.bytes_by_dtype,
            "total_params": d.total_params, "active_params": d.active_params,
            "routed_experts": d.routed_experts, "experts_per_token": d.experts_per_token,
            "mtp_layers": d.mtp_layers, "mtp_params": d.mtp_params, "mtp_bytes": d.mtp_bytes,
            "kv_bytes_per_token": d.kv_bytes_per_token, "kv_basis": "bf16 KV, full-attention layers, one rank",
            "format": d.format, "quantizer": d.quantizer,
            "attention": _dump(self.model.attention) if self.model.attention else None,
            "context_tokens": self.model.context.native_tokens if self.model.context else None,
            "shards": len(self.files.shards), "from_cache": self.files.from_cache, "read_from": self.files.read_from,
            "metadata_cache": str(self.files.metadata_file) if self.files.metadata_file else None,
            "unknown": list(d.unknown), "catalog": str(self.path),
        }


def slug(text: str) -> str:
    """An id-safe form of a repo name: lower case, runs of other characters as one dash."""
    return re.sub(r"[^a-z0-9._]+", "-", text.lower()).strip("-._") or "model"


def ids_for(repo: str) -> tuple[str, str, str]:
    """(model id, build id, source id) an import of `repo` adds: NAME-ORG, as the bundled ids read."""
    org, _, name = repo.partition("/")
    build_id = f"{slug(name)}-{slug(org)}"
    return build_id, build_id, f"hf-{build_id}"


def import_repo(repo: str, revision: str | None = None, *, force: bool = False, timeout_s: float = 60.0,
                progress: Progress | None = None) -> Imported:
    """Read `repo` from the hub, derive its facts, and add a model and a build to the user catalog."""
    from sparkadvisor.core.derive import DeriveError, derive
    from sparkadvisor.sources.hub import HubError, fetch_repo

    report: Callable[[str, int, int], None] = progress or (lambda what, done, total: None)
    model_id, build_id, source_id = ids_for(repo)
    check_free(model_id, build_id, force)
    files = fetch_repo(repo, revision, timeout_s=timeout_s, progress=report)
    try:
        derived = derive(files.config, files.tensors, source_id)
    except DeriveError as error:
        raise HubError(f"{repo} cannot be imported: {error}") from None
    if derived.format is None:
        raise HubError(f"{repo} cannot be imported: its {derived.quantizer}")
    source, model, build = entries(files, derived, model_id, build_id, source_id)
    report("writing the user catalog", 0, 1)
    path = add_entries(source_id, source, model, build, force=force)
    report("writing the user catalog", 1, 1)
    return Imported(source_id, source, model, build, derived, files, path)


def entries(files: RepoFiles, derived: Derived, model_id: str, build_id: str,
            source_id: str) -> tuple[Source, Model, Build]:
    """The source, model and build tables an import adds, every number citing the source."""
    today = dt.date.today().isoformat()
    unknown = f"; not derivable: {'; '.join(derived.unknown)}" if derived.unknown else ""
    source = Source(title=f"{files.repo} config.json and safetensors headers", kind="config",
                    url=f"https://huggingface.co/{files.repo}",
                    note=f"revision {files.commit} ({files.revision}), read by sparkadvisor import on {today}"
                         f"{_offline_note(files)}{unknown}")
    name = files.repo.split("/", 1)[1]
    model = Model(id=model_id, name=name, family=derived.family, repo=files.repo, source=source_id,
                  modalities=tuple(derived.modalities), params=derived.params(source_id),
                  attention=derived.attention, tables=tuple(derived.tables(source_id)), mtp=derived.mtp(source_id),
                  context=derived.context)
    dtypes = ", ".join(f"{k} {v:,}" for k, v in derived.bytes_by_dtype.items())
    size = Size(value=derived.weight_bytes / 1e9, unit="GB", source=source_id,
                mtp=derived.mtp_bytes / 1e9 if derived.mtp_bytes else None,
                tables=derived.table_bytes / 1e9 if derived.table_bytes else None,
                note=f"exactly {derived.weight_bytes:,} bytes in {plural(len(files.shards), 'safetensors file')} "
                     f"({dtypes})")
    build = Build(id=build_id, model=model_id, repo=files.repo, format=derived.format,  # type: ignore[arg-type]
                  quantizer=derived.quantizer, size=size, source=source_id)
    return source, model, build


def _offline_note(files: RepoFiles) -> str:
    """Where an offline import found the metadata, for the source note."""
    if files.metadata_file:
        return f" from sparkadvisor's local metadata cache (read online on {files.metadata_saved_on})"
    return " from the hub cache" if files.from_cache else ""


# --- the file -----------------------------------------------------------------


def read_user_tables() -> dict[str, Any]:
    """The user catalog as plain tables (empty when there is none yet)."""
    return _read_user_file()[1]


def _read_user_file() -> tuple[str, dict[str, Any]]:
    """The user catalog's text and its tables ("" and {} when there is none yet)."""
    path = paths.user_catalog_path()
    if not path.is_file():
        return "", {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UserCatalogError(f"{path} cannot be read ({error}); fix or move it, nothing was changed") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UserCatalogError(f"{_toml_reason(path, error, text)}; fix or move it, nothing was changed") from None


def _toml_reason(path: Path, error: tomllib.TOMLDecodeError, text: str) -> str:
    """"FILE line N is not valid TOML (why)", from the catalog parser's reading of tomllib's error."""
    from sparkadvisor.core.catalog import _toml_problem

    problem = _toml_problem(str(path), error, text)
    where = f"{path} line {problem.line}" if problem.line else str(path)
    return f"{where} is not valid TOML ({problem.message.removeprefix('not valid TOML: ')})"


def taken_ids() -> dict[str, str]:
    """Model and build ids already in use, each with where: "user catalog" or "bundled catalog"."""
    from sparkadvisor.catalogs import active_catalog, read_catalog

    taken: dict[str, str] = {}
    bundled = read_catalog(active_catalog().path)
    for item_id in [m.id for m in bundled.models] + [b.id for b in bundled.builds]:
        taken[item_id] = "the bundled catalog"
    user = read_user_tables()
    for kind in KINDS:
        for item in user.get(kind, []):
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                taken[item["id"]] = str(paths.user_catalog_path())
    return taken


def check_free(model_id: str, build_id: str, force: bool) -> None:
    """Refuse ids already taken, unless `force`."""
    if force:
        return
    taken = taken_ids()
    for kind, entry_id in (("build", build_id), ("model", model_id)):
        if entry_id in taken:
            raise ImportConflict(f"{kind} {entry_id!r} is already in {taken[entry_id]}; "
                                 "pass --force to replace it with this import")


def add_entries(source_id: str, source: Source, model: Model, build: Build, *, force: bool = False) -> Path:
    """Add (or, with `force`, replace) the tables in the user catalog, leaving the rest as written."""
    from sparkadvisor.core.tomledit import append_table, replace_table

    check_free(model.id, build.id, force)
    edit = _Edit()
    sources = edit.tables.setdefault("sources", {})
    block = _toml({"sources": {source_id: _dump(source)}})
    if source_id in sources:
        edit.change(replace_table, ("sources", source_id), block, f"source {source_id!r}")
    else:
        edit.change(append_table, block)
    sources[source_id] = _dump(source)
    for kind, entry in (("models", model), ("builds", build)):
        items, plain = edit.tables.setdefault(kind, []), _dump(entry)
        block = _toml({kind: [plain]})
        at = next((n for n, item in enumerate(items) if isinstance(item, dict) and item.get("id") == entry.id), None)
        if at is None:
            items.append(plain)
            edit.change(append_table, block)
        else:
            items[at] = plain
            edit.change(replace_table, (kind, at), block, f"{kind[:-1]} {entry.id!r}")
    return edit.write()


class _Edit:
    """The user catalog's text and tables, changed together: each textual change beside the
    change to the tables it stands for, so `write` can check the text holds just those tables."""

    def __init__(self) -> None:
        self.path = paths.user_catalog_path()
        self.text, self.tables = _read_user_file()
        self.versioned = "schema_version" in self.tables
        """The file names its schema_version; else it is added last (so problems name the user's lines)."""
        self.tables.setdefault("schema_version", 1)

    def change(self, edit: Callable[..., str], *args: Any) -> None:
        from sparkadvisor.core.tomledit import EditError

        try:
            self.text = edit(self.text, *args)
        except EditError as error:
            raise UserCatalogError(f"{self.path}: {error}, so it cannot be changed in place; "
                                   "nothing was changed") from None

    def write(self) -> Path:
        """Re-parse the new text, check it holds the tables meant and merges cleanly, then replace the file."""
        from sparkadvisor.core.tomledit import append_table, set_root_key

        if not self.versioned:
            version = "schema_version = 1"
            self.text = set_root_key(self.text, version) if self.text.strip() else \
                append_table(HEADER + version + "\n", self.text)
            self.versioned = True
        try:
            written = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as error:
            raise UserCatalogError(f"adding to {self.path} as written would make it invalid "
                                   f"({_toml_reason(self.path, error, self.text)}); nothing was changed") from None
        if written != tomllib.loads(_toml(self.tables)):
            raise UserCatalogError(f"{self.path} is laid out in a way sparkadvisor cannot add to without "
                                   "rewriting what you wrote; nothing was changed")
        _validate(self.text)
        return _write_atomically(self.path, self.text)


def _dump(table: Any) -> dict[str, Any]:
    return to_plain(table, drop_defaults=True, drop_none=True)


def _toml(tables: dict[str, Any]) -> str:
    import tomli_w

    ordered: dict[str, Any] = {key: tables[key] for key in ("schema_version", "sources", "models", "builds")
                               if key in tables}
    ordered.update({k: v for k, v in tables.items() if k not in ordered})
    return tomli_w.dumps(ordered)


def _validate(text: str) -> None:
    """The new file must parse and merge over the bundled catalog without a problem."""
    from sparkadvisor.catalogs import active_catalog, read_catalog
    from sparkadvisor.core.catalog import CatalogError, check_references, merge, parse_catalog

    name = str(paths.user_catalog_path())
    problems = check_references(merge(read_catalog(active_catalog().path), parse_catalog(text, name)), name)
    if problems:
        raise CatalogError(problems)


def _write_atomically(path: Path, text: str) -> Path:
    """Write `text` beside `path`, flushed to disk, then replace `path` in one step."""
    try:
        return write_atomic(path, text, mode=0o600, durable=True)
    except OSError as error:
        raise UserCatalogError(f"cannot write {path} ({error.strerror or error}); nothing was changed") from None


# --- bench runs -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Recorded:
    """Where a bench run went in the user's catalog."""

    recipe_id: str
    source_id: str
    count: int
    """Measurements added."""
    new_recipe: bool
    path: Path

    def as_json(self) -> dict[str, Any]:
        return {"recipe": self.recipe_id, "source": self.source_id, "measurements": self.count,
                "new_recipe": self.new_recipe, "catalog": str(self.path)}


def record_bench(index: Any, build: Build, cluster: Any, info: Any, collected: Any, base: Any | None,
                 today: str | None = None, pool: Any | None = None, launch: tuple[str, ...] = ()) -> Recorded:
    """Add a bench run as measurements of `build` on `cluster`: to the bench recipe measured with
    the same server settings (never changing what it holds), else to a new one. `pool`, the KV cache
    vLLM sized (`core.checkup.ServedPool`), is added as well unless that recipe already holds that pool;
    `launch`, flags the server does not report, is recorded as assumed (a recipe with others is another)."""
    from sparkadvisor.core.bench import figures
    from sparkadvisor.core.benchrecord import (
        bench_measurements,
        bench_source,
        new_bench_recipe,
        pool_measurement,
        server_recipe_settings,
    )
    from sparkadvisor.core.tomledit import append_table, append_to_table, extend_array, set_key, written_as_key

    today = today or dt.date.today().isoformat()
    edit = _Edit()
    tables = edit.tables
    sources = tables.setdefault("sources", {})
    source_id = _free_id(f"bench-{build.id}-{today}", set(sources) | set(index.catalog.sources))
    settings = server_recipe_settings(info)
    if launch:
        settings["extra_args"] = list(launch)
    recipes = tables.setdefault("recipes", [])
    recipe = _bench_recipe(recipes, sources, build, cluster, settings)
    measurements = bench_measurements(figures(collected), collected.spec, source_id, today)
    sized = pool_measurement(pool, source_id, today) if pool is not None else None
    if sized is not None and not any(m.get("metric") == "kv_pool_tokens" and m.get("value") == sized["value"]
                                     for m in (recipe or {}).get("measurements", []) if isinstance(m, dict)):
        measurements.append(sized)
    sources[source_id] = bench_source(info, cluster, collected, base.id if base else None, today, launch)
    edit.change(append_table, _toml({"sources": {source_id: sources[source_id]}}))
    if recipe is None:
        taken = {r.get("id") for r in recipes if isinstance(r, dict)} | {r.id for r in index.catalog.recipes}
        recipe = new_bench_recipe(build, cluster, info, collected, _dump(base) if base else None, settings,
                                  source_id)
        recipe["id"] = _free_id(recipe["id"], taken)
        recipe["measurements"] = [*recipe.get("measurements", []), *measurements]
        recipes.append(recipe)
        edit.change(append_table, _toml({"recipes": [recipe]}))
        new = True
    else:
        at, what = next(n for n, r in enumerate(recipes) if r is recipe), f"recipe {recipe.get('id')!r}"
        table = ("recipes", at)
        if isinstance(recipe.get("source"), list):  # grown in place: comments inside the array stay put
            edit.change(extend_array, table, "source", [_toml_value(source_id)], what)
        else:
            edit.change(set_key, table, "source", _toml({"source": [*_as_list(recipe.get("source")), source_id]}),
                        what)
        recipe["source"] = [*_as_list(recipe.get("source")), source_id]
        if written_as_key(edit.text, table, "measurements"):  # `measurements = [{...}]`: inline tables added
            edit.change(extend_array, table, "measurements", [_inline_table(m) for m in measurements], what)
        else:
            block = "\n".join(f"[[recipes.measurements]]\n{_toml(m)}" for m in measurements)
            edit.change(append_to_table, table, block, what)
        recipe["measurements"] = [*recipe.get("measurements", []), *measurements]
        new = False
    path = edit.write()
    return Recorded(recipe["id"], source_id, len(measurements), new, path)


def _toml_value(value: Any) -> str:
    """One value as tomli_w writes it (quoted and escaped by the serializer)."""
    return _toml({"v": value}).split("=", 1)[1].strip()


def _inline_table(table: dict[str, Any]) -> str:
    """A flat table as a TOML inline table, each key and value written by tomli_w."""
    return "{ " + ", ".join(_toml({k: v}).strip() for k, v in table.items()) + " }"


def _free_id(wanted: str, taken: set[Any]) -> str:
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted}-{n}" in taken:
        n += 1
    return f"{wanted}-{n}"


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else ([value] if value else [])


def _bench_recipe(recipes: list[Any], sources: dict[str, Any], build: Build, cluster: Any,
                  settings: dict[str, Any]) -> dict[str, Any] | None:
    """The user's bench recipe for this build and cluster measured with these server settings."""
    from sparkadvisor.core.benchrecord import BENCH_SETTINGS

    for recipe in reversed(recipes):
        if not isinstance(recipe, dict) or not any(
                isinstance(sources.get(i), dict) and sources[i].get("kind") == "bench"
                for i in _as_list(recipe.get("source"))):
            continue
        same_place = (recipe.get("build"), recipe.get("hardware", "dgx-spark"), recipe.get("nodes")) == \
                     (build.id, cluster.hardware.id, cluster.nodes)
        assumed = ("extra_args",) if "extra_args" in settings else ()  # launch flags a llama.cpp run assumed
        if same_place and all(recipe.get(k) == settings.get(k) for k in (*BENCH_SETTINGS, *assumed)):
            return recipe
    return None
