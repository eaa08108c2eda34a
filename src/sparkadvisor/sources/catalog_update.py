"""`catalog update`: fetch a newer catalog over HTTP, check it as the bundled one is checked, install it.

The download is held in memory and checked whole (schema, references, that the user's own
catalog still merges over it) before anything is written; it is then written beside the
catalog in use and renamed over it, after the one it replaces was kept as the previous
catalog. Every failure (no network, an HTTP error, a stall, a truncated body, an invalid
file) is one `UpdateError` sentence and leaves the files as they were.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sparkadvisor import paths
from sparkadvisor.atomic import write_atomic
from sparkadvisor.catalogs import ActiveCatalog, active_catalog, read_catalog
from sparkadvisor.core.catalog import CatalogError, Problem, check_references, merge, parse_catalog
from sparkadvisor.core.schema import Catalog

DEFAULT_URL = "https://raw.githubusercontent.com/sparkadvisor/sparkadvisor/main/catalog.toml"
"""The bundled catalog as the project's repository holds it on its main branch."""
URL_ENV = "SPARKADVISOR_CATALOG_URL"
"""Environment variable that points `catalog update` at another address (a mirror, a fork)."""
MAX_BYTES = 32 * 2**20
"""A catalog is a few hundred KB; anything past this is not one."""
KINDS = ("models", "builds", "caveats", "hardware", "recipes")
"""What a change report counts, in the order it prints them."""


class UpdateError(Exception):
    """Why no catalog was installed, in one sentence."""


@dataclass(frozen=True, slots=True)
class Change:
    """What one kind of entry gained and lost between two catalogs."""

    kind: str
    """models, builds, caveats, hardware or recipes."""
    added: list[str]
    """Ids new in the downloaded catalog."""
    removed: list[str]
    """Ids the downloaded catalog no longer has."""
    changed: list[str]
    """Ids in both whose entries differ."""


@dataclass(frozen=True, slots=True)
class Installed:
    """The outcome of an update that reached a valid catalog."""

    url: str
    """Where it came from."""
    date: str
    """Its catalog_date."""
    before: ActiveCatalog
    """The catalog that was in use."""
    changes: list[Change]
    """Entries added, removed and changed, by kind."""
    installed: bool
    """False when the download is the catalog already in use (nothing written)."""
    path: Path
    """The file now in use."""


def catalog_url(explicit: str | None = None) -> str:
    """The address to fetch: `--url`, else SPARKADVISOR_CATALOG_URL, else the project's repository."""
    from sparkadvisor.urls import UrlError, check_url

    if explicit:
        return explicit
    try:
        return check_url(os.environ[URL_ENV], f"${URL_ENV}") if os.environ.get(URL_ENV) else DEFAULT_URL
    except UrlError as error:
        raise UpdateError(str(error).rstrip(".")) from None


def update(url: str, timeout_s: float, force: bool = False) -> Installed:
    """Download, check and install the catalog at `url`; UpdateError when nothing was installed. Credentials
    in `url` are sent, never shown or kept: every message and the installed catalog's origin name it redacted."""
    from sparkadvisor.urls import redact, redact_urls

    before = active_catalog()
    try:
        raw = download(url, timeout_s)
    except UpdateError as error:
        raise UpdateError(redact_urls(str(error))) from None
    url = redact(url)
    new = validate(raw, url)
    old = read_catalog(before.path)
    changes = diff(old, new)
    assert new.catalog_date is not None  # validate() refuses a catalog without one
    if not any(c.added or c.removed or c.changed for c in changes) and new.catalog_date == before.date:
        return Installed(url, new.catalog_date, before, changes, False, before.path)
    if before.date and new.catalog_date < before.date and not force:
        raise UpdateError(f"the catalog at {url} is dated {new.catalog_date}, older than the one in use "
                          f"({before.date}); nothing was installed (pass --force to install it anyway)")
    path = install(raw, {"url": url, "catalog_date": new.catalog_date})
    return Installed(url, new.catalog_date, before, changes, True, path)


def download(url: str, timeout_s: float, clock: Callable[[], float] = time.monotonic) -> bytes:
    """The body at `url`, whole: refused when the server stalls, stops early or sends too much."""
    import httpx

    deadline = clock() + timeout_s
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=True) as client, \
                client.stream("GET", url, headers={"Accept": "application/toml, text/plain, */*"}) as response:
            if response.status_code != 200:
                raise UpdateError(f"{url} answered HTTP {response.status_code} {response.reason_phrase}".rstrip())
            body = _read_body(response, url, timeout_s, deadline, clock)
            expected = response.headers.get("content-length")
            received = response.num_bytes_downloaded
    except httpx.TimeoutException:
        raise UpdateError(f"{url} stopped answering for {timeout_s:g} s, so the download was abandoned") from None
    except httpx.RemoteProtocolError:
        raise UpdateError(f"the download from {url} ended before the whole file arrived") from None
    except httpx.ConnectError as error:
        raise UpdateError(f"could not reach {httpx.URL(url).host} ({_reason(error)})") from None
    except httpx.HTTPError as error:
        raise UpdateError(f"the download from {url} failed ({_reason(error)})") from None
    if expected is not None and expected.isdecimal() and int(expected) != received:
        raise UpdateError(f"the download from {url} ended after {received:,} of {int(expected):,} bytes")
    return body


def _read_body(response: Any, url: str, timeout_s: float, deadline: float, clock: Callable[[], float]) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_BYTES:
            raise UpdateError(f"{url} sent more than {MAX_BYTES // 2**20} MiB, which is no catalog")
        if clock() > deadline:
            raise UpdateError(f"{url} was still sending after the {timeout_s:g} s allowed, so the download was "
                              "abandoned")
        chunks.append(chunk)
    return b"".join(chunks)


def _reason(error: Exception) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:160]


def validate(raw: bytes, url: str) -> Catalog:
    """The downloaded catalog, checked as `sparkadvisor check` checks the bundled one; UpdateError if not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UpdateError(f"the file at {url} is not UTF-8 text (byte {error.start}), so it is no catalog") from None
    try:
        catalog = parse_catalog(text, url)
        problems = check_references(catalog, url, {url: text})
    except CatalogError as error:
        problems = error.problems
    if problems:
        raise UpdateError(_invalid(url, problems))
    if catalog.catalog_date is None or not (catalog.models and catalog.builds and catalog.hardware):
        raise UpdateError(f"the file at {url} is valid TOML but not a whole catalog (it needs catalog_date, "
                          "hardware, models and builds)")
    _user_catalog_still_merges(catalog, text, url)
    return catalog


def _invalid(url: str, problems: list[Problem]) -> str:
    more = f" (and {len(problems) - 1} more problem{'s' * (len(problems) > 2)})" if len(problems) > 1 else ""
    first = problems[0]
    where = f"line {first.line}" if first.line else "the file"
    field = f" {first.path}:" if first.path else ""
    return f"the catalog at {url} is not valid: {where}:{field} {first.message}{more}"


def _user_catalog_still_merges(catalog: Catalog, text: str, url: str, outcome: str = "nothing was installed") -> None:
    """Refuse a catalog that would break the user's imported builds (a model they build on removed); `outcome`
    says what was left undone."""
    user = paths.user_catalog_path()
    if not user.is_file():
        return
    try:
        own_text = user.read_text(encoding="utf-8")
        problems = check_references(merge(catalog, parse_catalog(own_text, str(user))), str(user),
                                    {url: text, str(user): own_text})
    except (OSError, UnicodeDecodeError, CatalogError):
        return  # a user catalog that is already broken is reported by every command, not blamed on the update
    if problems:
        raise UpdateError(f"your catalog {user} would no longer load over the catalog at {url} "
                          f"({problems[0].message}); {outcome}")


def diff(old: Catalog, new: Catalog) -> list[Change]:
    """Entries added, removed and changed between two catalogs, by kind."""
    changes = []
    for kind in KINDS:
        before = {item.id: item for item in getattr(old, kind)}
        after = {item.id: item for item in getattr(new, kind)}
        changed = [i for i in after if i in before and after[i] != before[i]]
        changes.append(Change(kind, [i for i in after if i not in before], [i for i in before if i not in after],
                              changed))
    return changes


def install(raw: bytes, origin: dict[str, str]) -> Path:
    """Write `raw` as the catalog in use, keeping the one it replaces as the previous catalog."""
    folder = paths.catalog_updates_dir()
    current, previous = folder / "catalog.toml", folder / "previous.toml"
    meta = {**origin, "installed_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)}
    try:
        if current.is_file():
            write_atomic(previous, current.read_bytes(), durable=True)
            write_atomic(folder / "previous.json", _read_meta_bytes(folder / "catalog.json"), durable=True)
        write_atomic(current, raw, durable=True)
        write_atomic(folder / "catalog.json", json.dumps(meta, indent=2), durable=True)
    except OSError as error:
        raise UpdateError(f"could not write in {folder} ({error.strerror or error}); the catalog in use "
                          "was left as it was") from None
    return current


def rollback() -> ActiveCatalog:
    """Put the previous catalog back in use (or the bundled one when there was none before), unless the user's own
    catalog would no longer load over it; the catalog rolled back from is dropped (`catalog update` fetches it
    again)."""
    folder = paths.catalog_updates_dir()
    current, previous = folder / "catalog.toml", folder / "previous.toml"
    if not current.is_file():
        raise UpdateError("no catalog update is installed, so the bundled catalog is already in use")
    _still_loads_over(previous if previous.is_file() else paths.bundled("catalog.toml"))
    try:
        if previous.is_file():
            os.replace(previous, current)
            write_atomic(folder / "catalog.json", _read_meta_bytes(folder / "previous.json"), durable=True)
            (folder / "previous.json").unlink(missing_ok=True)
        else:
            current.unlink()
            (folder / "catalog.json").unlink(missing_ok=True)
    except OSError as error:
        raise UpdateError(f"could not restore the previous catalog in {folder} ({error.strerror or error})") from None
    return active_catalog()


def _still_loads_over(path: Path) -> None:
    """UpdateError when the user's own catalog would no longer load over the catalog at `path` (a model it builds
    on is not there), as `validate` refuses such an update."""
    try:
        text = path.read_text(encoding="utf-8")
        catalog = parse_catalog(text, str(path))
    except (OSError, UnicodeDecodeError, CatalogError) as error:
        raise UpdateError(f"the catalog to go back to, {path}, cannot be read ({_reason(error)}); nothing was "
                          "changed") from None
    _user_catalog_still_merges(catalog, text, str(path), "nothing was changed")


def origin() -> dict[str, str | int]:
    """Where the installed update came from and when (empty when none is installed or it is unreadable); its size
    in bytes a number."""
    try:
        data = json.loads((paths.catalog_updates_dir() / "catalog.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: int(v) if k == "bytes" and str(v).isdecimal() else str(v) for k, v in data.items()}


def _read_meta_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b"{}"
