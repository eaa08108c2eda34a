"""The export modal (`e`): pick a format, read the rendered files, write them to a folder."""

from __future__ import annotations

import re
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, TextArea

from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.plan import Plan
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.units import plural
from sparkadvisor.export import (
    FORMATS,
    LLAMA_FORMATS,
    ExportError,
    ExportFile,
    ExportOptions,
    ExportRefused,
    addresses,
    render,
)
from sparkadvisor.export.llamacpp import is_llamacpp
from sparkadvisor.export.placeholders import left_out
from sparkadvisor.export.spec import CX7_NETDEV, machines
from sparkadvisor.tui.screens.early_keys import EarlyKeys
from sparkadvisor.tui.widgets.footer import KeyFooter
from sparkadvisor.tui.widgets.tickbox import TickBox

ADDRESS_FIELDS = ("export-head", "export-workers", "export-nic", "export-gateway")
NODE_KEYS = (1, 2, 3, 4)
"""The cluster sizes the main screen has keys for."""
FIELD_NAMES = {"head": "head addr", "workers": "worker addrs"}
"""The address fields as their placeholders name them, for the notice of what was left out."""


def default_folder(plan: Plan) -> Path:
    """~/sparkadvisor-exports/<build>-<nodes>n, with the build id reduced to safe characters."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", plan.build.id).strip("._") or "build"
    return Path.home() / "sparkadvisor-exports" / f"{safe}-{plan.cluster.nodes}n"


def preview(files: tuple[ExportFile, ...]) -> str:
    """All files of an export in one text, each under its name."""
    return "\n".join(f"==> {f.name} <==\n{safe_text(f.text, keep_newlines=True)}" for f in files)


class ExportScreen(EarlyKeys, ModalScreen[None]):
    """Renders the plan in the chosen format and writes it; Esc closes."""

    CSS_PATH = "export.tcss"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]
    """Under 30 rows the dialog takes the full height: the preview keeps 10 lines beside the notice."""
    FIRST_FIELD = "#export-format"
    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="export.close", tooltip="Close the export window"),
        Binding("ctrl+s", "write", "Write", id="export.write", tooltip="Write the files into the folder"),
        # The preview pages whichever field has focus (no field takes these keys).
        Binding("pagedown", "page(1)", "Page", key_display="PgDn", id="export.page_down",
                tooltip="Page down the preview"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="export.page_up", tooltip="Page up the preview"),
    ]

    def __init__(self, index: CatalogIndex, plan: Plan, ranked: tuple[Ranked, ...]):
        super().__init__()
        self.keep_early_keys()
        self.index = index
        self.plan = plan
        self.ranked = ranked
        """The ranking the build was chosen from, for the report."""
        self.files: tuple[ExportFile, ...] = ()
        self._rendered_for: tuple[object, ...] | None = None
        """The choices the text on show was rendered for."""

    def compose(self) -> ComposeResult:
        # A llama.cpp plan runs from a local build: no vLLM config or container, no Ray, no NCCL NIC.
        llama = is_llamacpp(self.plan)
        formats = LLAMA_FORMATS if llama else FORMATS
        single = machines(self.plan) == 1  # one machine: no workers, no launcher, no NIC between machines
        with Vertical(id="export-box"):
            yield Label(safe_text(f"Export {self.plan.build.id} on {self.plan.cluster.label}"), id="export-title",
                        markup=False)
            with Horizontal(id="export-controls"):
                # Compact controls, one line each: at 80x24 the preview keeps ~15 lines to read the recipe in.
                yield Select([(f"{k}: {v}", k) for k, v in formats.items()], value="sh", allow_blank=False,
                             id="export-format", compact=True)
                yield Select([("native launcher", "native"), ("Ray launcher", "ray")], value="native",
                             allow_blank=False, id="export-launcher", compact=True, disabled=llama or single)
            with Horizontal(id="export-addresses"):
                yield Input(placeholder="head addr", id="export-head", compact=True,
                            tooltip="The head node's address as Claude Code and the workers reach it "
                                    "(empty: a named placeholder)")
                yield Input(placeholder="worker addrs", id="export-workers", compact=True, disabled=single,
                            tooltip="Each worker's ConnectX-7 address, rank 1 first, comma-separated")
                yield Input(placeholder=f"NIC {CX7_NETDEV}", id="export-nic", compact=True, disabled=llama or single,
                            tooltip="The ConnectX-7 netdev NCCL uses (the '(Up)' one in ibdev2netdev)")
                yield Input(placeholder="gateway URL", id="export-gateway", compact=True,
                            tooltip="A gateway Claude Code talks to instead of vLLM")
            yield Label("", id="export-notice", markup=False)
            with Horizontal(id="export-target"):
                yield Input(str(default_folder(self.plan)), id="export-folder", compact=True)
                yield TickBox("overwrite", id="export-force", compact=True)
                yield Button("Write", id="export-write", variant="primary", compact=True)
            yield TextArea("", read_only=True, soft_wrap=False, id="export-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.refresh_text()
        self.ready()

    def action_page(self, pages: int) -> None:
        """Page the preview without taking the focus from the field being filled in."""
        preview = self.query_one("#export-text", TextArea)
        (preview.scroll_page_down if pages > 0 else preview.scroll_page_up)(animate=False)

    def on_select_changed(self, _: Select.Changed) -> None:
        self.refresh_text()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id in ADDRESS_FIELDS:
            self.refresh_text()

    def options(self) -> ExportOptions:
        """The dialog's choices, each field through the CLI's own check (ValueError names the bad one)."""
        launcher = str(self.query_one("#export-launcher", Select).value)
        head, workers, nic, gateway = (self.query_one(f"#{i}", Input).value.strip() for i in ADDRESS_FIELDS)
        return ExportOptions(launcher, addresses.gateway_url(gateway) if gateway else None,  # type: ignore[arg-type]
                             head_addr=addresses.address(head) if head else None,
                             worker_addrs=addresses.addresses(workers) if workers else (),
                             nic=addresses.netdev(nic) if nic else None)

    def refresh_text(self) -> None:
        """Render the chosen format; an export that cannot be made says why in place of the text."""
        fmt = str(self.query_one("#export-format", Select).value)
        chosen = (fmt, self.query_one("#export-launcher", Select).value,
                  *(self.query_one(f"#{i}", Input).value for i in ADDRESS_FIELDS))
        if chosen == self._rendered_for:
            return  # the Selects announce their first value after on_mount: nothing to redo
        self._rendered_for = chosen
        try:
            self.files = render(fmt, self.plan, self.options(), self.ranked, self.index.catalog.sources)
            text = preview(self.files)
        except ExportRefused as error:
            press = f" (close this and press {error.nodes_needed})" if error.nodes_needed in NODE_KEYS else ""
            self.files, text = (), f"Cannot export: {error}{press}"
        except (ExportError, ValueError) as error:
            self.files, text = (), f"Cannot export: {error}"
        area = self.query_one("#export-text", TextArea)
        area.soft_wrap = not self.files  # a reason is read whole; files keep their lines as written
        area.load_text(text)
        self._show_notice(fmt)

    def _show_notice(self, fmt: str) -> None:
        """Which addresses the files name by placeholder, as `sparkadvisor export` says it."""
        label = self.query_one("#export-notice", Label)
        llama = is_llamacpp(self.plan)
        notice = left_out(fmt, machines(self.plan), self.options(), llama) if self.files else None
        label.display = notice is not None
        if notice is not None:
            fields = [name for key, name in FIELD_NAMES.items() if getattr(notice, key)]
            label.update(f"No {' or '.join(fields)}: {notice.short}")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "export-write":
            self.action_write()

    def action_write(self) -> None:
        """Write the rendered files; existing files only with overwrite ticked."""
        from sparkadvisor.export.write import ExistingFiles, NotAFolder, write_files

        if not self.files:
            self.notify("Nothing to write: this export cannot be made.", severity="error")
            return
        folder = Path(self.query_one("#export-folder", Input).value).expanduser()
        try:
            written = write_files(folder, self.files, self.query_one("#export-force", Checkbox).value)
        except ExistingFiles as error:
            self._not_written(error.sentence(f"tick overwrite to replace {'it' if len(error.paths) == 1 else 'them'}"))
            return
        except NotAFolder as error:
            self._not_written(str(error))
            return
        except OSError as error:
            self._not_written(f"cannot write to {folder}: {error.strerror or error}")
            return
        self.notify(safe_text(f"Wrote {plural(len(written), 'file')} to {folder}"), title="Exported", markup=False)
        notice = self.query_one("#export-notice", Label)
        if notice.display:
            self.notify(str(notice.render()), title="Addresses left out", severity="warning", markup=False)

    def _not_written(self, sentence: str) -> None:
        self.notify(safe_text(sentence), title="Not written", severity="error", markup=False)
