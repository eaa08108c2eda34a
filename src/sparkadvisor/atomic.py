"""One way to write a file so that nothing the user had is lost: all of it or none of it.

The text goes to a temporary file in the same folder, which is then renamed over the
target in one step (os.replace is atomic on one filesystem). A failure removes the
temporary file and leaves the old file as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

TEMP_SUFFIX = ".tmp"
"""Every temporary file ends so, so a folder's leftovers can be found and removed."""


def write_atomic(path: Path, data: str | bytes, *, mode: int = 0o644, durable: bool = False) -> Path:
    """Write `data` (text as UTF-8 with \\n line ends) to `path` atomically, creating its folder.

    `durable` also flushes the data to disk before the rename, for files a person wrote."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path
