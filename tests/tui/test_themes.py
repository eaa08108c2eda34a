"""TOML themes: the bundled ones load; a broken file is one sentence, never a crash."""

from __future__ import annotations

from pathlib import Path

from sparkadvisor import paths
from sparkadvisor.tui.themes import load_themes, read_theme


def test_bundled_themes_load_without_problems() -> None:
    loaded = load_themes()
    names = [t.name for t in loaded.themes]
    assert {"dark", "light", "high-contrast"} <= set(names)
    assert loaded.problems == ()
    assert next(t for t in loaded.themes if t.name == "light").dark is False


def test_user_theme_overrides_a_bundled_one_by_name() -> None:
    folder = paths.config_dir() / "themes"
    folder.mkdir(parents=True)
    (folder / "mine.toml").write_text('name = "dark"\nprimary = "#FF0000"\n')
    dark = next(t for t in load_themes().themes if t.name == "dark")
    assert dark.primary == "#FF0000"


def test_broken_files_are_named_with_the_field(tmp_path: Path) -> None:
    (tmp_path / "a-good.toml").write_text('name = "good"\nprimary = "#00FF00"\n')
    (tmp_path / "colour.toml").write_text('name = "bad"\nprimary = "not-a-colour"\n')
    (tmp_path / "syntax.toml").write_text('name = "bad2"\nprimary = \n')
    (tmp_path / "key.toml").write_text('name = "bad3"\nprimary = "#000000"\nprimray = "#111111"\n')
    loaded = load_themes([tmp_path])
    assert [t.name for t in loaded.themes] == ["good"]
    problems = "\n".join(loaded.problems)
    assert "colour.toml: primary: 'not-a-colour' is not a colour" in problems
    assert "syntax.toml: not valid TOML" in problems
    assert "key.toml: primray: unknown key" in problems


def test_read_theme_requires_primary(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('name = "t"\n')
    try:
        read_theme(path)
    except ValueError as error:
        assert str(error) == f"{path}: primary: Field required"
    else:
        raise AssertionError("a theme without a primary colour was accepted")


def test_a_well_typed_file_gives_the_theme_the_model_gives(tmp_path: Path) -> None:
    from sparkadvisor.tui.themefile import validated
    from sparkadvisor.tui.themes import tomllib

    files = sorted(paths.bundled("themes").glob("*.toml"))
    (tmp_path / "lax.toml").write_text('name = "lax"\nprimary = "red"\ntext_alpha = 1\nvariables = {a = "b"}\n')
    for path in [*files, tmp_path / "lax.toml"]:
        assert read_theme(path) == validated(tomllib.loads(path.read_text()), path), path.name


def test_a_file_the_model_must_coerce_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "coerced.toml"
    path.write_text('name = "coerced"\nprimary = "#123456"\nluminosity_spread = "0.3"\n')
    assert read_theme(path).luminosity_spread == 0.3
