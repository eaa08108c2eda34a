"""TOML theme files, validated and turned into Textual themes.

Bundled themes ship in `themes/` (the wheel's `sparkadvisor/data/themes`); a user adds or
overrides themes in `paths.config_dir()/themes`. A broken file becomes one sentence in
`ThemeLoad.problems` and is skipped: a theme never stops the app.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from textual.color import Color, ColorParseError
from textual.theme import Theme

from sparkadvisor import paths

DEFAULT_THEME = "dark"
"""The theme used when none was chosen or the chosen one is gone."""


class ThemeFile(BaseModel):
    """One theme as written in TOML: Textual's base colours plus a name."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    name: str = Field(min_length=1)
    """The name shown and saved; not the file name."""
    description: str = ""
    """One line about the theme."""
    dark: bool = True
    """A dark theme (light text on a dark background)."""
    primary: str
    """The main colour: highlights, the cursor row, titles."""
    secondary: str | None = None
    """A second colour for less prominent elements."""
    accent: str | None = None
    """Contrasting colour for emphasis."""
    warning: str | None = None
    """Warnings and caveats."""
    error: str | None = None
    """Errors and builds that do not fit."""
    success: str | None = None
    """Builds that fit, measured figures."""
    foreground: str | None = None
    """Default text colour."""
    background: str | None = None
    """Screen background."""
    surface: str | None = None
    """Background of widgets."""
    panel: str | None = None
    """Background of panels and headers."""
    boost: str | None = None
    """A colour blended over others to lift them."""
    luminosity_spread: float = Field(default=0.15, ge=0, le=1)
    """How far the generated shades spread."""
    text_alpha: float = Field(default=0.95, ge=0, le=1)
    """Opacity of text."""
    variables: dict[str, str] = {}
    """Extra Textual CSS variables, e.g. "footer-key-foreground"."""

    @field_validator("primary", "secondary", "accent", "warning", "error", "success", "foreground",
                     "background", "surface", "panel", "boost")
    @classmethod
    def _is_colour(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                Color.parse(value)
            except ColorParseError:
                raise ValueError(f"{value!r} is not a colour; use #rrggbb, rgb(r,g,b) or a CSS colour name") from None
        return value

    def to_textual(self) -> Theme:
        """The Textual theme."""
        return Theme(**self.model_dump(exclude={"description"}))


@dataclass(frozen=True, slots=True)
class ThemeLoad:
    """The themes read, in cycling order, and one sentence per file that could not be used."""

    themes: tuple[Theme, ...]
    problems: tuple[str, ...]


def read_theme(path: Path) -> ThemeFile:
    """One theme file, or ValueError with a sentence naming the file and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    try:
        return ThemeFile.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "file"
        message = first["msg"].replace("Value error, ", "")
        if first["type"] == "extra_forbidden":
            message = f"unknown key; valid keys are {', '.join(ThemeFile.model_fields)}"
        raise ValueError(f"{path}: {where}: {message}") from None


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
                theme = read_theme(path).to_textual()
            except ValueError as error:
                problems.append(str(error))
                continue
            by_name[theme.name] = theme
    return ThemeLoad(tuple(by_name.values()), tuple(problems))
