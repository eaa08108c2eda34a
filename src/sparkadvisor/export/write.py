"""Write an export's files into a folder: atomically, and never over a file without force.

Every target is checked before anything is written, so a refused export leaves the
folder as it was; each file is written to a temporary file beside it and renamed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sparkadvisor.atomic import write_atomic
from sparkadvisor.export.spec import ExportFile


class ExistingFiles(FileExistsError):
    """Files an export would overwrite, refused because force was not given."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        super().__init__(self.sentence("pass --force to overwrite"))

    def sentence(self, how: str) -> str:
        """"X already exists; `how`, or choose another folder", with the shell's own way to overwrite."""
        names = ", ".join(str(p) for p in self.paths)
        return f"{names} already exist{'s' if len(self.paths) == 1 else ''}; {how}, or choose another folder"


class NotAFolder(NotADirectoryError):
    """The folder to write into is a file."""

    def __init__(self, folder: Path, files: list[ExportFile]):
        names = ", ".join(f.name for f in files)
        super().__init__(f"{folder} is a file, not a folder; give the folder to write {names} into")


def write_files(folder: Path, files: Iterable[ExportFile], force: bool = False) -> list[Path]:
    """Write every file into `folder` (created if missing); ExistingFiles if any exists and not `force`,
    NotAFolder if `folder` is a file."""
    chosen = list(files)
    if folder.exists() and not folder.is_dir():
        raise NotAFolder(folder, chosen)
    targets = [folder / f.name for f in chosen]
    existing = [t for t in targets if t.exists() or t.is_symlink()]
    if existing and not force:
        raise ExistingFiles(existing)
    folder.mkdir(parents=True, exist_ok=True)
    for target, file in zip(targets, chosen, strict=True):
        write_atomic(target, file.text, mode=0o755 if file.executable else 0o644)
    return targets
