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


PARAGRAPHS = ["", "one", "a few words that wrap at a narrow width, again and again and again",
              "x" * 95, "  indented · with spaces   ", "漢字と仮名の幅は二つ" * 6, "word " * 40,
              "a\ttab stop"]


async def test_a_paragraph_height_from_its_words_is_the_height_textual_draws() -> None:
    import textual.content
    from rich._wrap import divide_line
    from textual.visual import Visual

    from sparkadvisor.tui.widgets.document import wrapped_height

    # The height is worked out with the function Textual wraps with; if Textual stops using it, this fails.
    assert textual.content.divide_line is divide_line
    app = OneDocument()
    async with app.run_test(size=(100, 12)):
        document = app.query_one(Document)
        for width in (20, 33, 80):
            for text in PARAGRAPHS:
                drawn = Visual.to_strips(document, Content(text), width, None, document.visual_style)
                assert wrapped_height(text, width, document.styles) == len(drawn), (text, width)


async def test_lines_styled_when_drawn_are_the_lines_of_the_whole_section(make_app) -> None:
    from textual.visual import Visual

    from sparkadvisor.tui.widgets.document import _Section

    app = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        detail = app.screen.query_one("#detail")
        sections = list(detail._rendered.values())
        assert len(sections) == 7 and max(s.height for s in sections) > 40, "the build's seven sections"
        for kept in sections:
            whole = Visual.to_strips(detail, kept.content, kept.width, None, detail.visual_style)
            section = _Section(detail, kept.content, kept.width, {}, {})
            order = [section.height - 1, 0, section.height // 2, *range(section.height)]
            drawn = {i: list(section.line(i)) for i in order}
            assert section.height == len(whole)
            assert [drawn[i] for i in range(section.height)] == [list(strip) for strip in whole]
        # Drawn from the top a line at a time, as the screen draws it, the same again.
        arithmetic = max(sections, key=lambda s: s.height)
        section = _Section(detail, arithmetic.content, arithmetic.width, {}, {})
        assert [list(section.line(i, 1)) for i in range(section.height)] == \
            [list(strip) for strip in Visual.to_strips(detail, arithmetic.content, arithmetic.width, None,
                                                       detail.visual_style)]


async def test_the_scroll_bar_follows_each_new_height() -> None:
    # The height is set without a layout, through textual 8.2's `_scroll_update`: if that stops updating
    # the bar, this fails.
    app = OneDocument()
    async with app.run_test(size=(50, 12)) as pilot:
        document = app.query_one(Document)
        for lines in (40, 25, 25, 60):
            document.show([Content("\n".join(f"line {n}" for n in range(lines)))])
            await pilot.pause()
            bar = document.vertical_scrollbar
            assert document.show_vertical_scrollbar and bar.window_virtual_size == lines == document.virtual_size.height
            assert bar.window_size == document.scrollable_content_region.height
        document.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert document.render_line(document.scrollable_content_region.height - 1).text.strip() == "line 59"
