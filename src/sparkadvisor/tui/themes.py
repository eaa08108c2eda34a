"""TOML theme files, validated and turned into Textual themes.

Bundled themes ship in `themes/` (the wheel's `sparkadvisor/data/themes`); a user adds or
overrides themes in `paths.config_dir()/themes`. A broken file becomes one sentence in
`ThemeLoad.problems` and is skipped: a theme never stops the app.

A file whose every key is known and every value already of its field's type and range (the
bundled themes, and nearly every hand-written one) becomes its Textual theme directly; any
other goes through the pydantic model in `tui.themefile`, which coerces what it can and
writes the sentence. pydantic costs ~0.2 s to import, on the path to the first frame.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from sparkadvisor import paths

DEFAULT_THEME = "dark"
"""The theme used when none was chosen or the chosen one is gone."""

COLOURS = ("primary", "secondary", "accent", "warning", "error", "success", "foreground", "background", "surface",
           "panel", "boost")
"""The colour keys of a theme file (`primary` is required)."""
SHARES = {"luminosity_spread": 0.15, "text_alpha": 0.95}
"""The keys that take a number from 0 to 1, with their defaults."""


@dataclass(frozen=True, slots=True)
class ThemeLoad:
    """The themes read, in cycling order, and one sentence per file that could not be used."""

    themes: tuple[Theme, ...]
    problems: tuple[str, ...]


def read_theme(path: Path) -> Theme:
    """One theme file, or ValueError with a sentence naming the file and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    plain = _exactly_typed(data)
    if plain is not None:
        return Theme(**plain)
    from sparkadvisor.tui.themefile import validated

    return validated(data, path)


def _exactly_typed(data: dict[str, Any]) -> dict[str, Any] | None:
    """The Textual theme's arguments when `data` is a theme the model would take unchanged, else
    None (the model then coerces or refuses it, and says why)."""
    known = {"name", "description", "dark", "variables", *COLOURS, *SHARES}
    if not known.issuperset(data) or not isinstance(data.get("name"), str) or not data["name"]:
        return None
    if not isinstance(data.get("description", ""), str) or not isinstance(data.get("dark", True), bool):
        return None
    for key in COLOURS:
        value = data.get(key)
        if value is None and key != "primary":
            continue
        if not isinstance(value, str) or not _is_colour(value):
            return None
    shares = {key: data.get(key, default) for key, default in SHARES.items()}
    if not all(type(v) in (int, float) and 0 <= v <= 1 for v in shares.values()):
        return None
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
        return None
    return {"name": data["name"], "dark": data.get("dark", True), **{key: data.get(key) for key in COLOURS},
            **{key: float(value) for key, value in shares.items()}, "variables": dict(variables)}


def _is_colour(value: str) -> bool:
    try:
        Color.parse(value)
    except ColorParseError:
        return False
    return True


def theme_folders() -> tuple[Path, ...]:
    """The bundled themes, then the user's (which win on a name clash)."""
    return paths.bundled("themes"), paths.config_dir() / "themes"


def load_themes(folders: Iterable[Path] | None = None) -> ThemeLoad:
    """Every *.toml theme in `folders`, later folders overriding earlier ones by name."""
    by_name: dict[str, Theme] = {}
    problems: list[str] = []
    for folder in theme_folders() if folders is None else folders:
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else ():
            try:
                theme = read_theme(path)
            except ValueError as error:
                problems.append(str(error))
                continue
            by_name[theme.name] = theme
    return ThemeLoad(tuple(by_name.values()), tuple(problems))
