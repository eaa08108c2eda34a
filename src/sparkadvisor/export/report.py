"""`md`: a decision report to share: cluster, workload, the ranked table at that moment,
the chosen build's arithmetic, its caveats with sources, and the commands."""

from __future__ import annotations

from collections.abc import Mapping

from sparkadvisor.core.catalog import source_ids
from sparkadvisor.core.explain import explain
from sparkadvisor.core.ranking import Ranked, capability_for
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.schema import Source
from sparkadvisor.core.table import COLUMNS, row_cells
from sparkadvisor.export.argv import Arg, EnvRef, resolve
from sparkadvisor.export.llamacpp import BUILD_COMMANDS, AnyLaunch, LlamaLaunch
from sparkadvisor.export.spec import ExportFile, Launch, is_placeholder
from sparkadvisor.export.text import md_cell, md_fence, one_line, sh_words


def _table(ranked: tuple[Ranked, ...], chosen: str) -> list[str]:
    lines = ["| " + " | ".join(c.label for c in COLUMNS) + " |",
             "|" + "|".join("---:" if c.numeric else "---" for c in COLUMNS) + "|"]
    for item in ranked:
        cells = row_cells(item)
        mark = " **(chosen)**" if item.plan.build.id == chosen else ""
        lines.append("| " + " | ".join(md_cell(cells[c.key]) + (mark if c.key == "build" else "") for c in COLUMNS)
                     + " |")
    return lines + [""] + [f"- {item.rank or '-'}. `{md_cell(item.plan.build.id)}`: {md_cell(item.reason)}"
                           for item in ranked]


def _sources(launch: AnyLaunch, sources: Mapping[str, Source]) -> list[str]:
    plan = launch.plan
    lines = []
    for ref in plan.source_ids(capability_for(plan.model, plan.workload)):
        source = sources.get(ref)
        if source is not None:
            link = f" <{one_line(source.url)}>" if source.url else ""
            lines.append(f"- `{md_cell(ref)}`: {md_cell(source.title)}{link}")
    return lines


def _caveats(launch: AnyLaunch) -> list[str]:
    lines = []
    for c in launch.plan.caveats:
        lines.append(f"- **{c.kind}** ({c.severity}): {md_cell(c.explanation)} "
                     f"[{', '.join(md_cell(s) for s in source_ids(c.source))}]")
    lines += [f"- **{'WARNING: ' if n.loud else ''}{md_cell(n.text)}**" for n in launch.notes
              if not n.from_caveat]
    return lines or ["- none known"]


def _patches(launch: Launch) -> list[str]:
    lines = []
    for use in launch.patches:
        patch, commit = use.patch, use.patch.commit or "no pinned commit"
        lines += [f"- **{md_cell(patch.title)}** (`{patch.id}`, {'needed' if use.needed else 'optional'}: "
                  f"{md_cell(use.why)}): without it {md_cell(patch.breaks)}.",
                  f"  From <{patch.repo}> at `{commit}`; the sh export mounts "
                  + ", ".join(f"`{f.path}` over `{f.target}`" for f in patch.files)
                  + f" from the checkout named by `{use.checkout_var}`."]
    return lines


def _commands(launch: AnyLaunch) -> list[str]:
    lines = []
    for hint, words in _node_commands(launch):
        body = safe_text(sh_words(words), keep_newlines=True)  # for reading; serve.sh carries the exact bytes
        fence = md_fence(body)
        lines += [f"On {md_cell(hint)}:", "", fence + "sh", body, fence, ""]
    if isinstance(launch, LlamaLaunch):
        return lines + ["llama.cpp runs from a local build with CUDA (`" + "`, then `".join(BUILD_COMMANDS)
                        + "`). The sh export wraps these in pre-flight checks; the claude export points Claude Code "
                        "at llama-server."]
    return lines + [f"Image: `{md_cell(launch.image)}`. The sh export wraps these in pre-flight checks and the "
                    "container; the claude export points Claude Code at the server."]


def _node_commands(launch: AnyLaunch) -> list[tuple[str, list[Arg]]]:
    """Each node's host hint and the command it runs, with the addresses given written out as the JSON plan has
    them (a report is read and pasted, not run with a script's environment); one not given stays $NAME."""
    if isinstance(launch, LlamaLaunch):
        return [(n.host_hint, [_given(a) for a in (n.program, *n.argv)]) for n in launch.nodes]
    return [(n.host_hint, [_given(a) for a in (("vllm", "serve", *n.vllm_argv) if n.vllm_argv
                                                else ("ray", *n.ray_argv))]) for n in launch.nodes]


def _given(arg: Arg) -> Arg:
    """An argument's literal value, unless it is an address nobody gave (a placeholder)."""
    return arg if isinstance(arg, EnvRef) and is_placeholder(arg.default) else resolve(arg)


def render_md(launch: AnyLaunch, ranked: tuple[Ranked, ...],
              sources: Mapping[str, Source]) -> tuple[ExportFile, ...]:
    """report.md for the plan, with the ranking it was chosen from."""
    plan, w = launch.plan, launch.plan.workload
    hw = plan.cluster.hardware
    lines = [f"# {md_cell(plan.model.name)} on {plan.cluster.label}", "",
             f"Build `{md_cell(plan.build.id)}` ({md_cell(plan.build.repo)}), "
             + (f"recipe `{md_cell(plan.recipe.id)}`: {md_cell(plan.recipe.title)}." if plan.recipe
                else "no community recipe: every flag comes from sparkadvisor's plan."), "",
             "## Cluster and workload", "",
             f"- {plan.cluster.label}: {plan.cluster.usable_gib:.1f} GiB usable, "
             f"{hw.memory_bandwidth_gb_s:g} GB/s per node" + (f", link: {md_cell(hw.link.name)}" if hw.link else ""),
             f"- {w.label}: {w.context_tokens:,} tokens of prompt, {w.prefix_reuse:.0%} reused from the last turn, "
             f"{w.output_tokens:,} tokens out; targets: first token <= {w.first_token_target_s:g} s, turn <= "
             f"{w.turn_target_s:g} s, decode >= {w.decode_target_tok_s:g} tok/s", "",
             "## The ranking at this moment", ""]
    lines += _table(ranked, plan.build.id) + ["", "## The arithmetic", ""]
    lines += [f"- **{s.title}** [{s.basis}]: {md_cell(s.text)}" for s in explain(plan) if s.key != "caveat"]
    lines += ["", "## Caveats", ""] + _caveats(launch)
    if isinstance(launch, Launch) and launch.patches:
        lines += ["", "## Patches", ""] + _patches(launch)
    lines += ["", "## Sources", ""] + _sources(launch, sources)
    lines += ["", "## Commands", ""] + _commands(launch)
    return (ExportFile("report.md", "\n".join(lines) + "\n"),)
