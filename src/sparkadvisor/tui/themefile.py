"""The theme file's model: pydantic coerces what it can and names the field it cannot take.

`tui.themes` reads a well-typed file without it; this module is imported only for the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from textual.color import Color, ColorParseError
from textual.theme import Theme


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


def validated(data: dict[str, Any], path: Path) -> Theme:
    """The Textual theme of `data`, or ValueError with a sentence naming the file and the field."""
    try:
        return ThemeFile.model_validate(data).to_textual()
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "file"
        message = first["msg"].replace("Value error, ", "")
        if first["type"] == "extra_forbidden":
            message = f"unknown key; valid keys are {', '.join(ThemeFile.model_fields)}"
        raise ValueError(f"{path}: {where}: {message}") from None
