"""Import a Hugging Face repo from its metadata: type ORG/NAME, watch it read, get a build id back.

The import runs in a thread worker (huggingface_hub blocks); the worker only posts
messages, and the screen updates its widgets from them, so the app stays responsive.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, ProgressBar, Static
from textual.worker import get_current_worker

from sparkadvisor.core.safetext import safe_text
from sparkadvisor.tui.screens.early_keys import EarlyKeys
from sparkadvisor.tui.widgets.footer import KeyFooter
from sparkadvisor.tui.widgets.tickbox import TickBox


class HubImportScreen(EarlyKeys, ModalScreen[str | None]):
    """Dismissed with the new build id, or None when the person cancels."""

    CSS_PATH = "hub_import.tcss"
    FIRST_FIELD = "#hub-import-repo"
    BINDINGS = [("escape", "cancel", "Cancel")]

    @dataclass
    class Progress(Message):
        """The worker read `done` of `total` of `what`."""

        what: str
        done: int
        total: int

    @dataclass
    class Finished(Message):
        """The import wrote `build_id` (None on failure) and has this to say."""

        build_id: str | None
        text: str

    def compose(self) -> ComposeResult:
        with Vertical(id="hub-import"):
            yield Label("Import a Hugging Face repo (metadata only, no weights)", id="hub-import-title")
            yield Input(placeholder="ORG/NAME, e.g. HuggingFaceTB/SmolLM3-3B", id="hub-import-repo")
            yield Input(placeholder="revision (default: main)", id="hub-import-revision")
            yield TickBox("Force: replace an import, or add a repo the catalog has", id="hub-import-force")
            yield ProgressBar(total=1, id="hub-import-progress", show_eta=False)  # still until Import (None pulses)
            yield Static("Enter to import, Esc to cancel.", id="hub-import-status", markup=False)
            with Horizontal(id="hub-import-buttons"):
                yield Button("Import", variant="primary", id="hub-import-go")
                yield Button("Cancel", id="hub-import-cancel")
        yield KeyFooter()

    def __init__(self) -> None:
        super().__init__()
        self.keep_early_keys()

    def on_mount(self) -> None:
        self.ready()

    @on(Input.Submitted)
    @on(Button.Pressed, "#hub-import-go")
    def start(self) -> None:
        """Check the repo id, then read it in the background."""
        from sparkadvisor.core.schema import repo_id_problem
        from sparkadvisor.sources.hub import is_repo_id

        repo = self.query_one("#hub-import-repo", Input).value.strip()
        if not is_repo_id(repo):
            self._status(f"{repo_id_problem(repo)}.", error=True)
            return
        revision = self.query_one("#hub-import-revision", Input).value.strip() or None
        self.query_one("#hub-import-go", Button).disabled = True
        self.query_one(ProgressBar).update(total=None, progress=0)  # pulses until the first file is counted
        self._status(f"Reading {repo}...")
        self.run_import(repo, revision, self.query_one("#hub-import-force", Checkbox).value)

    @work(thread=True, exclusive=True, group="hub-import")
    def run_import(self, repo: str, revision: str | None, force: bool) -> None:
        """Fetch, derive and write; every outcome leaves as a Finished message."""
        from sparkadvisor.sources.hub import HubError
        from sparkadvisor.usercatalog import ImportCancelled, ImportConflict, UserCatalogError, import_repo

        worker = get_current_worker()

        def progress(what: str, done: int, total: int) -> None:
            if worker.is_cancelled:
                raise ImportCancelled
            self.post_message(self.Progress(what, done, total))

        if not force:
            from sparkadvisor.catalogs import already_in_catalog, catalog_builds_of

            if builds := catalog_builds_of(repo):
                self.post_message(self.Finished(None, already_in_catalog(repo, builds, "tick Force")))
                return
        try:
            imported = import_repo(repo, revision, force=force, progress=progress)
        except ImportCancelled:
            return
        except (HubError, ImportConflict, UserCatalogError) as error:
            self.post_message(self.Finished(None, str(error)))
            return
        self.post_message(self.Finished(imported.build.id, f"Added {imported.build.id}."))

    def on_hub_import_screen_progress(self, message: Progress) -> None:
        bar = self.query_one(ProgressBar)
        bar.update(total=max(message.total, 1), progress=message.done)
        self._status(f"Reading {message.what}: {message.done}/{message.total}")

    def on_hub_import_screen_finished(self, message: Finished) -> None:
        if message.build_id is not None:
            self.dismiss(message.build_id)
            return
        self.query_one("#hub-import-go", Button).disabled = False
        self.query_one(ProgressBar).update(total=1, progress=0)
        self._status(message.text, error=True)

    @on(Button.Pressed, "#hub-import-cancel")
    def action_cancel(self) -> None:
        """Stop reading (nothing is written after a cancel) and close."""
        self.workers.cancel_group(self, "hub-import")
        self.dismiss(None)

    def _status(self, text: str, error: bool = False) -> None:
        status = self.query_one("#hub-import-status", Static)
        status.update(safe_text(text))
        status.set_class(error, "error")
