"""sparkadvisor's own cache of hub metadata, so a repo imported once online re-imports offline.

The hub cache keeps config.json but never the safetensors headers read by range requests,
so after each online read the metadata an import used (config.json text, the index, each
shard's tensor name -> dtype and shape, the commit) is kept in one JSON file per repo and
commit under `paths.cache_dir() / "hub"`, with one pointer file per revision naming the
commit last seen for it. Files are written atomically and hold no token or endpoint.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from sparkadvisor import paths
from sparkadvisor.atomic import write_atomic
from sparkadvisor.core.derive import TensorMeta

FORMAT = 1
"""The layout of a metadata file; a file of another layout is not read."""
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")

Headers = dict[str, dict[str, TensorMeta]]
"""Each shard's header: shard file name -> tensor name -> dtype and shape."""


class MetadataCacheError(Exception):
    """A metadata file that exists but cannot be read, in one sentence naming it."""


@dataclass(frozen=True, slots=True)
class SavedMetadata:
    """What an online import read, as kept for offline re-imports."""

    repo: str
    revision: str
    commit: str
    saved_on: str
    """The date (ISO) the metadata was read online."""
    config_text: str
    index_text: str | None
    headers: Headers
    path: Path


def folder() -> Path:
    """Where the metadata files live."""
    return paths.cache_dir() / "hub"


def metadata_path(repo: str, commit: str) -> Path:
    """The file for one commit of a repo: ORG--NAME--COMMIT.json (the hub forbids `--` in ids)."""
    return folder() / f"{repo.replace('/', '--')}--{commit}.json"


def pointer_path(repo: str, revision: str) -> Path:
    """The file naming the commit last seen for `revision`: ORG--NAME@REVISION.ref, quoted."""
    return folder() / f"{repo.replace('/', '--')}@{quote(revision, safe='')}.ref"


def save(repo: str, revision: str, commit: str, config_text: str, index_text: str | None,
         headers: Headers) -> Path | None:
    """Keep what an online read used; None when it could not be written (the import goes on)."""
    if not _COMMIT.match(commit):
        return None
    record = {"format": FORMAT, "repo": repo, "revision": revision, "commit": commit,
              "saved_on": dt.date.today().isoformat(), "config": config_text, "index": index_text,
              "headers": {shard: {name: [t.dtype, list(t.shape)] for name, t in tensors.items()}
                          for shard, tensors in headers.items()}}
    path = metadata_path(repo, commit)
    try:
        write_atomic(path, json.dumps(record, separators=(",", ":")))
        write_atomic(pointer_path(repo, revision), commit + "\n")
    except OSError as error:
        from sparkadvisor.unsaved import not_saved

        not_saved(f"the hub metadata read for {repo}", folder(), error,
                  "an offline import (HF_HUB_OFFLINE=1) of it needs the hub cache instead")
        return None
    return path


def load(repo: str, revision: str, prefer: Iterable[str | None] = ()) -> SavedMetadata | None:
    """The metadata kept for `repo`: the first of `prefer`'s commits that has a file, else the
    commit last seen for `revision`, else `revision` itself when it is a commit; None if none."""
    for commit in (*prefer, _pointed(repo, revision), revision):
        if commit and _COMMIT.match(commit) and metadata_path(repo, commit).is_file():
            return _read(metadata_path(repo, commit), repo, revision)
    return None


def _pointed(repo: str, revision: str) -> str | None:
    try:
        return pointer_path(repo, revision).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _read(path: Path, repo: str, revision: str) -> SavedMetadata:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("format") != FORMAT or record.get("repo") != repo:
            raise ValueError(f"it is not a format-{FORMAT} file of {repo}")
        headers = {str(shard): {str(name): TensorMeta(str(dtype), tuple(int(n) for n in shape))
                                for name, (dtype, shape) in tensors.items()}
                   for shard, tensors in record["headers"].items()}
        return SavedMetadata(repo, revision, str(record["commit"]), str(record["saved_on"]), str(record["config"]),
                             record["index"] if isinstance(record["index"], str) else None, headers, path)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
        reason = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
        raise MetadataCacheError(f"sparkadvisor's metadata cache file {path} is unreadable ({reason}); delete it "
                                 "and import once online") from None
