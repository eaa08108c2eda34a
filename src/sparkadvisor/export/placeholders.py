"""Which addresses an export names by placeholder: the CLI's notice and the TUI dialog's say the same."""

from __future__ import annotations

from dataclasses import dataclass

from sparkadvisor.export.spec import PLACEHOLDER_HOST, ExportOptions, worker_placeholder


@dataclass(frozen=True, slots=True)
class LeftOut:
    """The addresses an export left to placeholders, and what that means for its files."""

    head: bool
    """The head's address is a placeholder somewhere in the files."""
    workers: bool
    """The workers' addresses are placeholders."""
    names: tuple[str, ...]
    """The placeholders the files name."""
    stops: str
    """"; the scripts stop until HEAD_ADDR is set" for scripts (which name no placeholder: each reads its address from
    a variable left empty), else empty."""

    @property
    def text(self) -> str:
        """"the files name ..., placeholders that never resolve", or for scripts, which name no address but read it
        from a variable left empty, "the scripts stop until ... is set"."""
        return self.stops[2:] if self.stops else f"the files name {', '.join(self.names)}, {self._what}"

    @property
    def short(self) -> str:
        """The text without the names, for a dialog whose preview shows them (two lines at 80 columns)."""
        return self.stops[2:] if self.stops else f"the files name {self._what}"

    @property
    def _what(self) -> str:
        return "a placeholder that never resolves" if len(self.names) == 1 else "placeholders that never resolve"


def left_out(fmt: str, nodes: int, options: ExportOptions, llama: bool = False) -> LeftOut | None:
    """What `fmt` on `nodes` nodes names by placeholder with these options; None when nothing.

    vLLM: the head appears in every multi-node file, and in Claude Code's settings and the report on one
    node (unless Claude Code talks to a gateway); the workers only where a worker is launched. llama.cpp
    (`llama`): the head only in Claude Code's settings (llama-server listens on every address, and nothing
    else reaches it); the workers in the scripts (the head's --rpc, each rpc-server's --host) and the JSON
    plan, while the report's commands show the variables the scripts read."""
    named = fmt == "claude" if llama else fmt in ("claude", "md") or nodes > 1
    head = options.head_addr is None and named and not (fmt == "claude" and options.gateway_url)
    where = ("sh", "json") if llama else ("sh", "yaml", "compose", "json")
    workers = nodes > 1 and not options.worker_addrs and fmt in where
    if not (head or workers):
        return None
    names = [PLACEHOLDER_HOST] * head + [worker_placeholder(r) for r in range(1, nodes)] * workers
    unset = [v for v, m in (("HEAD_ADDR", head), ("RPC_SERVERS", workers and llama), ("NODE_ADDR", workers)) if m]
    stops = f"; the scripts stop until {' and '.join(unset)} {'is' if len(unset) == 1 else 'are'} set" \
        if fmt == "sh" else ""
    return LeftOut(head, workers, tuple(names), stops)
