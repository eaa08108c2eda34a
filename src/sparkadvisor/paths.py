"""Where sparkadvisor reads and writes: the bundled catalog and themes, and the user's folders.

The user's folders follow platformdirs (XDG on Linux). `SPARKADVISOR_HOME`, when set,
puts config, data and state under one folder: tests and portable installs use it.
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "sparkadvisor"


def _home(kind: str) -> Path | None:
    root = os.environ.get("SPARKADVISOR_HOME")
    return Path(root) / kind if root else None


def config_dir() -> Path:
    """User configuration: themes."""
    import platformdirs

    return _home("config") or Path(platformdirs.user_config_dir(APP))


def data_dir() -> Path:
    """User data: the catalog of imported builds."""
    import platformdirs

    return _home("data") or Path(platformdirs.user_data_dir(APP))


def state_dir() -> Path:
    """App state: the last theme, workload, hardware and node count."""
    import platformdirs

    return _home("state") or Path(platformdirs.user_state_dir(APP))


def cache_dir() -> Path:
    """Derived files that can be rebuilt at any time: the parsed catalog, hub metadata already read."""
    import platformdirs

    return _home("cache") or Path(platformdirs.user_cache_dir(APP))


def user_catalog_path() -> Path:
    """The user's own catalog, merged over the bundled one when it exists."""
    return data_dir() / "catalog.toml"


def catalog_updates_dir() -> Path:
    """What `sparkadvisor catalog update` installed: the catalog in use, the previous one, and their origin."""
    return data_dir() / "catalog-updates"


def bundled(name: str) -> Path:
    """A file shipped beside the package: inside the wheel, or at the top of a checkout."""
    # The package is a plain folder (wheel or checkout), so its data sits beside this file;
    # importlib.resources would cost tempfile, shutil and zipfile at every start.
    here = Path(__file__).resolve().parent
    packaged = here / "data" / name
    if packaged.exists():
        return packaged
    return here.parents[1] / name
