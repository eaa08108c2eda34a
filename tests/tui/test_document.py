"""The text pane: what it shows after each change, in one or two columns, in the theme's colours."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.content import Content

from sparkadvisor.tui.widgets.document import Document


class OneDocument(App[None]):
    def compose(self) -> ComposeResult:
        yield Document(split_at=60, left_width=30)


async def test_each_show_replaces_the_text_and_unchanged_sections_read_the_same() -> None:
    app = OneDocument()
    async with app.run_test(size=(100, 12)) as pilot:
        document = app.query_one(Document)
        caveats = Content.assemble(("Caveats", "bold $primary"), "\nnone known")
        document.show([Content("agentic: 57 tok/s")], [caveats])
        await pilot.pause()
        assert document.text.splitlines()[:2] == ["agentic: 57 tok/s              │ Caveats",
                                                  "                               │ none known"]
        document.show([Content("chat: 61 tok/s")], [caveats])
        await pilot.pause()
        assert document.text.splitlines()[:2] == ["chat: 61 tok/s                 │ Caveats",
                                                  "                               │ none known"]
        document.show([Content("one column")])
        await pilot.pause()
        assert document.text == "one column"


async def test_a_theme_change_recolours_text_that_did_not_change(make_app) -> None:
    app = make_app(theme="dark")
    async with app.run_test(size=(160, 45)) as pilot:
        detail = app.screen.query_one("#detail")
        await pilot.pause()
        before = detail.render_line(0)
        app.theme = "light"
        await pilot.pause()
        after = list(detail.render_line(0))
        detail.show(detail.left, detail.right, detail.stacked)  # the same sections, drawn from scratch:
        detail._rendered.clear()
        detail._columns = None
        assert after == list(detail.render_line(0)) != list(before), "the title is drawn in the new theme"
