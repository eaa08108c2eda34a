"""Read catalog files: the bundled one, the user's imports and any `--catalog FILE`.

File access lives here so the core stays pure; every failure becomes a CatalogError that
names the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sparkadvisor import paths
from sparkadvisor.core.catalog import CatalogError, CatalogIndex, Problem, check_references, merge, parse_catalog
from sparkadvisor.core.schema import Catalog


def read_catalog(path: Path) -> Catalog:
    """Parse one catalog file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CatalogError([Problem(str(path), None, "", "no such file; give the path of a catalog TOML file")]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise CatalogError([Problem(str(path), None, "", f"cannot be read: {error}")]) from None
    return parse_catalog(text, str(path))


def load_index(extra: Sequence[Path] = (), include_user: bool = True) -> CatalogIndex:
    """The bundled catalog, then the user's imported builds, then each `extra` file, merged."""
    files = [paths.bundled("catalog.toml")]
    user = paths.user_catalog_path()
    if include_user and user.is_file():
        files.append(user)
    files += list(extra)
    catalog, problems = None, []
    for path in files:
        try:
            overlay = read_catalog(path)
        except CatalogError as error:
            problems += error.problems
            continue
        catalog = overlay if catalog is None else merge(catalog, overlay)
    if catalog is not None:
        problems += check_references(catalog, " + ".join(str(f) for f in files) if len(files) > 1 else str(files[0]))
    if problems or catalog is None:
        raise CatalogError(problems)
    return CatalogIndex(catalog)


def check_file(path: Path) -> list[Problem]:
    """Problems in one catalog file, checked on its own and over the bundled catalog."""
    try:
        own = read_catalog(path)
    except CatalogError as error:
        return error.problems
    bundled_path = paths.bundled("catalog.toml")
    if path.resolve() == bundled_path.resolve():
        return check_references(own, str(path))
    try:
        base = read_catalog(bundled_path)
    except CatalogError:
        return check_references(own, str(path))
    return check_references(merge(base, own), str(path))
