"""Read catalog files: the bundled one (or the newer one `catalog update` installed), the user's
imports and any `--catalog FILE`.

File access lives here so the core stays pure; every failure becomes a CatalogError that
names the file.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkadvisor import __version__, core, paths
from sparkadvisor.atomic import TEMP_SUFFIX, write_atomic
from sparkadvisor.core import sanity
from sparkadvisor.core.bulk import collector_paused
from sparkadvisor.core.catalog import CatalogError, Problem, check_references, merge, parse_catalog
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.records import from_plain, record, to_plain
from sparkadvisor.core.sanity import MAX_CATALOG_BYTES
from sparkadvisor.core.schema import Catalog

try:  # hashlib.blake2b itself, without loading OpenSSL for hashlib's other algorithms (~4 ms at start-up)
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b

if TYPE_CHECKING:
    from sparkadvisor.core.calibration import Calibration

CACHE_FORMAT = 2
"""Version of the cache file's layout; a file of another version is ignored and rewritten."""

CACHE_KEEP = 4
"""Catalog sets kept in the cache (bundled alone, with the user's imports, with --catalog files)."""

ORPHAN_AGE_S = 600
"""A temporary cache file older than this was left by a process that died; it is removed."""


_DATE = re.compile(r'^catalog_date\s*=\s*"(\d{4}-\d{2}-\d{2})"\s*(#.*)?$')


@record(kw_only=False)
class ActiveCatalog:
    """The base catalog in use: the bundled one, or the one `catalog update` installed."""

    path: Path
    """The file."""
    updated: bool
    """True when it is the installed update, False for the catalog shipped with the package."""
    date: str | None
    """Its catalog_date."""
    bundled_date: str | None
    """The catalog_date of the catalog shipped with the package."""


def active_catalog() -> ActiveCatalog:
    """The installed update when there is one at least as new as the bundled catalog, else the bundled one.

    A package upgrade that ships a newer catalog thus wins over an older download."""
    bundled = paths.bundled("catalog.toml")
    bundled_date = declared_date(bundled)
    installed = paths.catalog_updates_dir() / "catalog.toml"
    installed_date = declared_date(installed)
    if installed_date is not None and (bundled_date is None or installed_date >= bundled_date):
        return ActiveCatalog(installed, True, installed_date, bundled_date)
    return ActiveCatalog(bundled, False, bundled_date, bundled_date)


def declared_date(path: Path) -> str | None:
    """The top-level catalog_date of a catalog file, read without parsing the file (top-level keys
    come before the first table); None when the file is missing or declares none."""
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("["):
                    return None
                if match := _DATE.match(line.strip()):
                    return match.group(1)
    except (OSError, UnicodeDecodeError):
        return None
    return None


def read_catalog(path: Path) -> Catalog:
    """Parse one catalog file."""
    return parse_catalog(_decode(path, _read_bytes(path)), str(path))


def load_index(extra: Sequence[Path] = (), include_user: bool = True) -> CatalogIndex:
    """The catalog in use (bundled or updated), then the user's imported builds, then each `extra` file, merged.

    A checked catalog is cached as plain JSON records with its speed calibrations, keyed by a
    digest of every file's bytes, the core's code and the version, so start-up skips parsing,
    validation (and the pydantic import) and calibration until a file changes."""
    files = [active_catalog().path]
    user = paths.user_catalog_path()
    if include_user and user.is_file():
        files.append(user)
    files += list(extra)
    texts = [_read_bytes(path) for path in files]
    digest = _digest(files, texts)
    cache = paths.cache_dir() / f"catalog-{digest}.json"
    cached = _read_cache(cache, digest)
    if cached is not None:
        return CatalogIndex(*cached)
    index = CatalogIndex(_merged(files, texts))
    _write_cache(cache, digest, index)
    return index


def catalog_builds_of(repo: str) -> tuple[str, ...]:
    """Ids of the builds of `repo` (in any case) in the catalog in use, bundled or updated, without
    the user's own: an import of one of them would rank a bare copy beside the curated build."""
    wanted = repo.lower()
    return tuple(b.id for b in load_index(include_user=False).catalog.builds if b.repo.lower() == wanted)


def already_in_catalog(repo: str, builds: Sequence[str], force_words: str) -> str:
    """The sentence that refuses an import of a repo the catalog has (`force_words` says how to insist)."""
    named = ", ".join(builds)
    return (f"{repo} is already in the catalog as build{'s' * (len(builds) > 1)} {named}, with its recipes, "
            f"measurements and sources (sparkadvisor show {builds[0]}); {force_words} to import it again beside it")


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, at most MAX_CATALOG_BYTES of them (`check /dev/zero` must end)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CATALOG_BYTES + 1)
    except FileNotFoundError:
        message = "no such file; give the path of a catalog TOML file"
        raise CatalogError([Problem(str(path), None, "", message)]) from None
    except OSError as error:
        raise CatalogError([Problem(str(path), None, "", f"cannot be read: {error.strerror}")]) from None
    if len(raw) > MAX_CATALOG_BYTES:
        raise CatalogError([Problem(str(path), None, "", f"is larger than {MAX_CATALOG_BYTES // 2**20} MiB; a catalog "
                                                         "is a text file of a few hundred KB")])
    return raw


def _digest(files: Sequence[Path], texts: Sequence[bytes]) -> str:
    """Names every input of a cached catalog: the version, the core's source and each file.
    The core's code decides whether a catalog is accepted (schema, sanity) and what its
    calibrations are (speed model, fitting): an edit to any of its files, its sub-packages' too (name, size and
    modification time, which a checkout or an install changes too) is a new entry."""
    digest = blake2b(f"{__version__}\0{CACHE_FORMAT}\0".encode())
    root = Path(core.__file__).parent
    sources = sorted((path.relative_to(root).as_posix(), path.stat()) for path in root.rglob("*.py"))
    for name, stat in sources:
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    for path, text in zip(files, texts, strict=True):
        digest.update(str(path).encode() + b"\0" + text + b"\0")
    return digest.hexdigest()[:24]


def _merged(files: Sequence[Path], texts: Sequence[bytes]) -> Catalog:
    catalog, problems = None, []
    for path, raw in zip(files, texts, strict=True):
        try:
            overlay = parse_catalog(_decode(path, raw), str(path))
        except CatalogError as error:
            problems += error.problems
            continue
        catalog = overlay if catalog is None else merge(catalog, overlay)
    if catalog is not None and not problems:
        texts_by_name = {str(path): _decode(path, raw) for path, raw in zip(files, texts, strict=True)}
        problems += check_references(catalog, str(files[-1]), texts_by_name)
    if problems or catalog is None:
        raise CatalogError(problems)
    return catalog


def _decode(path: Path, raw: bytes) -> str:
    """The file's text; a leading byte-order mark (Windows editors write one) is dropped."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CatalogError([Problem(str(path), None, "", f"is not UTF-8 text (byte {error.start})")]) from None


def _read_cache(cache: Path, digest: str) -> tuple[Catalog, dict[str, Calibration]] | None:
    """The cached catalog and its calibrations, or None when the file is missing, of another
    version or unreadable."""
    from sparkadvisor.core.calibration import Calibration

    try:
        data = json.loads(cache.read_bytes())
        if data["format"] != CACHE_FORMAT or data["version"] != __version__ or data["digest"] != digest:
            return None
        if sanity.sanity_findings(data["catalog"]):  # a hand-edited cache: numbers the arithmetic cannot carry
            return None
        with collector_paused():
            catalog = from_plain(Catalog, data["catalog"])
        calibrations = {hw: from_plain(Calibration, plain) for hw, plain in data["calibrations"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    _touch(cache)
    return catalog, calibrations


def _touch(cache: Path) -> None:
    """Marks the entry as recently used, so the sets in use are the ones kept."""
    try:
        os.utime(cache)
    except OSError:
        pass


def _write_cache(cache: Path, digest: str, index: CatalogIndex) -> None:
    """Best effort: a cache that cannot be written only costs the next start-up."""
    record: dict[str, Any] = {"format": CACHE_FORMAT, "version": __version__, "digest": digest,
                              "catalog": to_plain(index.catalog, drop_defaults=True),
                              "calibrations": {hw: to_plain(c) for hw, c in index.calibrations.items()}}
    try:
        write_atomic(cache, json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        _prune(cache.parent)
    except OSError as error:
        from sparkadvisor.unsaved import not_saved

        not_saved("the catalog cache", cache.parent, error,
                  "every start reads and checks the catalog again, which is slower but loses nothing")


def _prune(folder: Path) -> None:
    """Keeps the CACHE_KEEP most recently used catalog sets; removes other formats and orphans."""
    entries = sorted(folder.glob("catalog-*.json"), key=_mtime, reverse=True)
    stale = entries[CACHE_KEEP:] + list(folder.glob("catalog-*.pickle"))
    stale += [t for t in folder.glob(f".catalog-*{TEMP_SUFFIX}") if time.time() - _mtime(t) > ORPHAN_AGE_S]
    for path in stale:
        path.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def check_file(path: Path) -> list[Problem]:
    """Problems in one catalog file, checked on its own and over the bundled catalog."""
    try:
        text = _decode(path, _read_bytes(path))
        own = parse_catalog(text, str(path))
    except CatalogError as error:
        return error.problems
    bundled_path = active_catalog().path
    if path.resolve() == bundled_path.resolve():
        return check_references(own, str(path), {str(path): text})
    try:
        base_text = _decode(bundled_path, _read_bytes(bundled_path))
        base = parse_catalog(base_text, str(bundled_path))
    except CatalogError:
        return check_references(own, str(path), {str(path): text})
    return check_references(merge(base, own), str(path), {str(bundled_path): base_text, str(path): text})
