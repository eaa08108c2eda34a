"""Where sparkadvisor reads and writes: the bundled catalog and themes, and the user's folders.

The user's folders follow platformdirs (XDG on Linux). `SPARKADVISOR_HOME`, when set,
puts config, data and state under one folder: tests and portable installs use it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = "sparkadvisor"


def _home(kind: str) -> Path | None:
    root = os.environ.get("SPARKADVISOR_HOME")
    return Path(root) / kind if root else None


def _user_dir(kind: str, xdg_variable: str, xdg_default: str, platform_name: str) -> Path:
    """`kind` under SPARKADVISOR_HOME, else the platform's user folder for the app.

    On Linux that is the XDG rule (an absolute $XDG_..._HOME, else the default under the home
    folder), worked out here: platformdirs costs ~10 ms to import, at every start. Elsewhere,
    or with a HOME that is not absolute, platformdirs decides."""
    home = _home(kind)
    if home is not None:
        return home
    user_home = os.environ.get("HOME", "")
    if sys.platform.startswith("linux") and os.path.isabs(user_home) and not _android():
        base = os.environ.get(xdg_variable, "")
        return Path(base if os.path.isabs(base) else os.path.join(user_home, xdg_default)) / APP
    import platformdirs

    return Path(getattr(platformdirs, platform_name)(APP))


def _android() -> bool:
    """Android reports itself as Linux; platformdirs knows its folders."""
    return hasattr(sys, "getandroidapilevel") or (
        os.environ.get("ANDROID_DATA") == "/data" and os.environ.get("ANDROID_ROOT") == "/system")


def config_dir() -> Path:
    """User configuration: themes."""
    return _user_dir("config", "XDG_CONFIG_HOME", ".config", "user_config_dir")


def data_dir() -> Path:
    """User data: the catalog of imported builds."""
    return _user_dir("data", "XDG_DATA_HOME", ".local/share", "user_data_dir")


def state_dir() -> Path:
    """App state: the last theme, workload, hardware and node count."""
    return _user_dir("state", "XDG_STATE_HOME", ".local/state", "user_state_dir")


def cache_dir() -> Path:
    """Derived files that can be rebuilt at any time: the parsed catalog, hub metadata already read."""
    return _user_dir("cache", "XDG_CACHE_HOME", ".cache", "user_cache_dir")


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
