"""The Hugging Face Hub edge: config.json and safetensors headers of a repo, never its weights.

huggingface_hub is imported inside the functions (it costs ~200 ms at start). The
endpoint, cache folder and offline switch are read from the environment at call time
(HF_ENDPOINT, HF_HUB_CACHE / HF_HOME, HF_HUB_OFFLINE), because the library freezes them
at import. Tokens come from HF_TOKEN or the hub's own login, through the library; this
module never reads, prints or logs them. Every failure leaves as one `HubError` sentence.
After each online read the metadata used is kept by `hubmeta`, so an offline import of a
repo seen once online needs neither its weights nor the network.
"""

from __future__ import annotations

import json
import math
import os
import queue
import re
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkadvisor.core.derive import TensorMeta
from sparkadvisor.core.schema import HF_REPO_ID, repo_id_problem
from sparkadvisor.sources import hubmeta
from sparkadvisor.sources.deadline import Deadline, DeadlineExceeded
from sparkadvisor.sources.hubfaults import HubError, check_endpoint, endpoint, malformed, stalled, translated
from sparkadvisor.sources.hubmeta import Headers

Progress = Callable[[str, int, int], None]
"""progress(what, done, total): called from worker threads as files are read."""

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
MAX_HEADER_BYTES = 25_000_000
"""Largest safetensors header accepted (huggingface_hub's SAFETENSORS_MAX_HEADER_LENGTH)."""
DEFAULT_TIMEOUT_S = 60.0
"""Longest a whole online import may take (every request and retry in it)."""
_REPO_ID = re.compile(HF_REPO_ID)


@dataclass(frozen=True, slots=True)
class RepoFiles:
    """What the hub says about one revision of a repo."""

    repo: str
    revision: str
    """The revision as asked for (a branch, tag or commit)."""
    commit: str
    """The commit sha every file was read at."""
    config: dict[str, Any]
    tensors: dict[str, TensorMeta]
    shards: tuple[str, ...]
    from_cache: bool
    """True when read offline, from the hub cache or from sparkadvisor's metadata cache."""
    metadata_file: Path | None = None
    """The metadata cache file an offline read used, when the hub cache lacked the headers."""
    metadata_saved_on: str | None = None
    """The date (ISO) that metadata was read online."""

    @property
    def read_from(self) -> str:
        """Where the metadata came from: "hub", "hub cache" or "metadata cache"."""
        return "metadata cache" if self.metadata_file else "hub cache" if self.from_cache else "hub"


def is_repo_id(text: str) -> bool:
    """True for an ORG/NAME repo id."""
    return bool(_REPO_ID.match(text))


def offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set, now or when the library was imported."""
    flags = (os.environ.get("HF_HUB_OFFLINE", ""), os.environ.get("TRANSFORMERS_OFFLINE", ""))
    if any(f.upper() in ("1", "ON", "YES", "TRUE") for f in flags):
        return True
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def cache_dir() -> str:
    """The hub cache folder: HF_HUB_CACHE, else $HF_HOME/hub, else the library's default."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def fetch_repo(repo: str, revision: str | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S,
               max_workers: int = 16, progress: Progress | None = None) -> RepoFiles:
    """config.json and every safetensors header of `repo` at `revision`, online or from the cache.

    Online, the whole read (model info, config.json, every header, the library's retries)
    ends within `timeout_s`."""
    if not is_repo_id(repo):
        raise HubError(repo_id_problem(repo))
    if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
        raise HubError(f"the timeout must be a number of seconds above 0 (got {timeout_s!r})")
    deadline = Deadline(timeout_s)
    check_endpoint()
    _quiet_library()
    report = progress or (lambda what, done, total: None)
    if offline():
        return _from_cache(repo, revision, report)
    try:
        return deadline.run(lambda: _from_hub(repo, revision, deadline, max_workers, report))
    except DeadlineExceeded:
        waiting = ", ".join(deadline.waiting()[:3]) or "the metadata"
        raise HubError(stalled(repo, waiting, timeout_s)) from None


def _quiet_library() -> None:
    """No progress bars and no retry chatter ("Trying to resume download...") on the terminal."""
    from huggingface_hub.utils import disable_progress_bars, logging

    disable_progress_bars()
    logging.set_verbosity_error()


# --- online -------------------------------------------------------------------


def _from_hub(repo: str, revision: str | None, deadline: Deadline, workers: int, report: Progress) -> RepoFiles:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint())
    report("model info", 0, 1)
    with translated(repo, revision, "its model info", deadline):
        info = api.model_info(repo, revision=revision, timeout=deadline.left())
    siblings = {s.rfilename for s in info.siblings or ()}
    config_path = _download(repo, "config.json", revision or "main", deadline)
    assert config_path is not None, "without missing_ok a missing file raises"
    commit = Path(config_path).parent.name
    config_text = _read_text(repo, config_path, "config.json")
    config = _parse_config(repo, config_text)
    index_text = None
    if INDEX_FILE in siblings or not siblings:
        index_path = _download(repo, INDEX_FILE, commit, deadline, missing_ok=not siblings)
        index_text = _read_text(repo, index_path, INDEX_FILE) if index_path else None
        shards = _shards_from_index(repo, index_text)
    else:
        shards = (SINGLE_FILE,) if SINGLE_FILE in siblings else ()
    if not shards:
        raise HubError(f"{repo} has no safetensors weights ({SINGLE_FILE} or {INDEX_FILE}); "
                       "only safetensors repos can be imported")
    parse = _remote_header(api, repo, commit, deadline)
    headers = _parse_all(shards, parse, workers, report)
    hubmeta.save(repo, revision or "main", commit, config_text, index_text, headers)
    return RepoFiles(repo, revision or "main", commit, config, _merged(headers), shards, False)


def _download(repo: str, filename: str, revision: str, deadline: Deadline, missing_ok: bool = False) -> str | None:
    """A small file through the hub cache (so an offline import can reuse it)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        with translated(repo, revision, filename, deadline):
            return hf_hub_download(repo, filename, revision=revision, endpoint=endpoint(), cache_dir=cache_dir(),
                                   etag_timeout=deadline.left())
    except HubError as error:
        if missing_ok and isinstance(error.__cause__, EntryNotFoundError):
            return None
        raise


def _read_text(repo: str, path: str, filename: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise HubError(f"{filename} of {repo} is not UTF-8 text, so not valid JSON; the file is malformed") from None


def _parse_config(repo: str, text: str) -> dict[str, Any]:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise HubError(f"config.json of {repo} is not valid JSON (line {error.lineno}: {error.msg}); "
                       "the repo's config is malformed") from None
    if not isinstance(config, dict):
        raise HubError(f"config.json of {repo} holds a {type(config).__name__}, not a table of settings")
    return config


def _shards_from_index(repo: str, text: str | None) -> tuple[str, ...]:
    if text is None:
        return (SINGLE_FILE,)
    try:
        weight_map = json.loads(text)["weight_map"]
        return tuple(sorted({str(f) for f in weight_map.values()}))
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
        raise HubError(f"{INDEX_FILE} of {repo} is malformed (it needs a weight_map of tensor -> shard)") from None


def _remote_header(api: Any, repo: str, commit: str, deadline: Deadline) -> Callable[[str], dict[str, TensorMeta]]:
    from huggingface_hub.errors import SafetensorsParsingError

    def parse(filename: str) -> dict[str, TensorMeta]:
        with translated(repo, commit, filename, deadline):
            try:
                meta = api.parse_safetensors_file_metadata(repo, filename, revision=commit, timeout=deadline.left())
                return {name: TensorMeta(t.dtype, tuple(t.shape)) for name, t in meta.tensors.items()}
            except (SafetensorsParsingError, TypeError, AttributeError, ValueError) as error:
                raise malformed(repo, filename, error) from None

    return parse


def _parse_all(shards: Iterable[str], parse: Callable[[str], dict[str, TensorMeta]], workers: int,
               report: Progress) -> Headers:
    """Every shard's header, at most `workers` at a time; a failure (or a cancel) drops the rest.

    Daemon threads, not a ThreadPoolExecutor: a read abandoned at the deadline must not
    hold the process open at exit while the library waits out its own retries."""
    shards = list(shards)
    report("safetensors headers", 0, len(shards))
    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for shard in shards:
        todo.put(shard)
    done: queue.SimpleQueue[tuple[str, dict[str, TensorMeta] | None, BaseException | None]] = queue.SimpleQueue()
    stop = threading.Event()

    def worker() -> None:
        while not stop.is_set():
            try:
                shard = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((shard, parse(shard), None))
            except BaseException as error:  # noqa: BLE001  (handed to the collecting thread)
                done.put((shard, None, error))

    for _ in range(max(1, min(workers, len(shards)))):
        threading.Thread(target=worker, name="sparkadvisor-hub-header", daemon=True).start()
    headers: Headers = {}
    try:
        while len(headers) < len(shards):
            shard, tensors, error = done.get()
            if error is not None:
                raise error
            headers[shard] = tensors  # type: ignore[assignment]
            report("safetensors headers", len(headers), len(shards))
    finally:
        stop.set()
    return {shard: headers[shard] for shard in shards}


def _merged(headers: Headers) -> dict[str, TensorMeta]:
    """Every shard's tensors in one table, in shard order."""
    return {name: meta for tensors in headers.values() for name, meta in tensors.items()}


# --- offline ------------------------------------------------------------------


def _from_cache(repo: str, revision: str | None, report: Progress) -> RepoFiles:
    """An import with HF_HUB_OFFLINE set: the hub cache's files, else sparkadvisor's metadata cache."""
    report("hub cache", 0, 1)
    config_path = _cached(repo, "config.json", revision)
    commit = Path(config_path).parent.name if config_path else None
    found = _from_hub_cache(repo, revision, config_path, report) if config_path else None
    if isinstance(found, RepoFiles):
        return found
    try:
        saved = hubmeta.load(repo, revision or "main", prefer=(commit,))
    except hubmeta.MetadataCacheError as error:
        raise HubError(str(error)) from None
    if saved is not None:
        return _from_saved(saved, report)
    held = (f"the hub cache holds config.json of {repo} but not {found} safetensors files, and "
            f"sparkadvisor's metadata cache has no copy of their headers" if found else
            f"neither the hub cache nor sparkadvisor's metadata cache holds {repo} at {revision or 'main'}")
    raise HubError(f"offline (HF_HUB_OFFLINE=1) and {held}; import it once online (later offline imports "
                   "reuse its metadata), or unset HF_HUB_OFFLINE")


def _from_hub_cache(repo: str, revision: str | None, config_path: str, report: Progress) -> RepoFiles | str:
    """The repo read from whole files in the hub cache, or how many of its shards it lacks ("1 of its 4")."""
    commit = Path(config_path).parent.name
    config = _parse_config(repo, _read_text(repo, config_path, "config.json"))
    index = _cached(repo, INDEX_FILE, commit)
    shards = _shards_from_index(repo, _read_text(repo, index, INDEX_FILE) if index else None)
    paths = {shard: _cached(repo, shard, commit) for shard in shards}
    missing = [s for s, p in paths.items() if p is None]
    if missing:
        return f"{len(missing)} of its {len(shards)}"
    headers = _parse_all(shards, lambda s: _local_header(repo, s, paths[s]), 4, report)  # type: ignore[arg-type]
    return RepoFiles(repo, revision or "main", commit, config, _merged(headers), shards, True)


def _from_saved(saved: hubmeta.SavedMetadata, report: Progress) -> RepoFiles:
    """The repo as an earlier online import read it, from sparkadvisor's metadata cache."""
    config = _parse_config(saved.repo, saved.config_text)
    shards = _shards_from_index(saved.repo, saved.index_text)
    if set(shards) != set(saved.headers):
        raise HubError(f"sparkadvisor's metadata cache file {saved.path} does not hold every shard's header; "
                       "delete it and import once online")
    report("metadata cache", 1, 1)
    headers = {shard: saved.headers[shard] for shard in shards}
    return RepoFiles(saved.repo, saved.revision, saved.commit, config, _merged(headers), shards, True,
                     saved.path, saved.saved_on)


def _cached(repo: str, filename: str, revision: str | None) -> str | None:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo, filename, cache_dir=cache_dir(), revision=revision)
    return found if isinstance(found, str) else None


def _local_header(repo: str, filename: str, path: str) -> dict[str, TensorMeta]:
    """The header of a safetensors file in the cache: 8 bytes of length, then JSON."""
    try:
        with open(path, "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > MAX_HEADER_BYTES:
                raise ValueError(f"header of {length} bytes is larger than {MAX_HEADER_BYTES}")
            header = json.loads(handle.read(length))
        return {name: TensorMeta(t["dtype"], tuple(t["shape"])) for name, t in header.items() if name != "__metadata__"}
    except (struct.error, ValueError, KeyError, TypeError, AttributeError) as error:
        raise malformed(repo, filename, error) from None
