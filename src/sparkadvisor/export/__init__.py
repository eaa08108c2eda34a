"""Launch recipes a person can run, rendered from the plan the advisor computed.

Renderers are pure: a `Plan` (and, for the report, the ranking and the sources) in,
`ExportFile`s out. Writing them to a folder is `sparkadvisor.export.write`'s job.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkadvisor.core.plan import Plan
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_json
from sparkadvisor.core.schema import Source
from sparkadvisor.export.argv import resolve
from sparkadvisor.export.spec import (
    DEFAULT_OPTIONS,
    ExportError,
    ExportFile,
    ExportOptions,
    ExportRefused,
    Launch,
    PatchUse,
    build_launch,
)

FORMATS: dict[str, str] = {
    "sh": "one bash script per node: pre-flight checks, then vLLM in its container",
    "yaml": "a vLLM --config file per node",
    "compose": "a docker compose file per node (vLLM)",
    "claude": "Claude Code's settings.json env block and a check that the service answers",
    "md": "a decision report: cluster, workload, ranking, arithmetic, caveats, commands",
    "json": "the plan for automation: each node's role, env and exact argv",
}
"""Export formats and what each one writes."""
LLAMA_FORMATS: dict[str, str] = {
    "sh": "one bash script per node: pre-flight checks, then llama-server (an RPC server on each worker)",
    "claude": FORMATS["claude"],
    "md": FORMATS["md"],
    "json": FORMATS["json"],
}
"""What a llama.cpp plan exports to: it runs from a local build, so there is no vLLM config or container."""

__all__ = ["FORMATS", "ExportError", "ExportFile", "ExportOptions", "ExportRefused", "plan_json", "render"]


def plan_json(launch: Launch) -> dict[str, object]:
    """{"build", "nodes": [{"role", "host_hint", "env", "vllm_argv"}]}: vllm_argv is the list after `vllm serve`."""
    nodes = [{"role": n.role, "rank": n.rank, "host_hint": n.host_hint,
              "env": {k: resolve(v) for k, v in n.env}, "vllm_argv": [resolve(a) for a in n.vllm_argv],
              **({"ray_argv": [resolve(a) for a in n.ray_argv]} if n.ray_argv else {})} for n in launch.nodes]
    return {"build": launch.plan.build.id, "recipe": launch.plan.recipe.id if launch.plan.recipe else None,
            "image": launch.image, "served_model_name": launch.served_name, "launcher": launch.options.launcher,
            "head_addr": {"value": launch.head.default, "placeholder": launch.options.placeholder_head},
            "nodes": nodes, "patches": [_patch_json(use) for use in launch.patches],
            "notes": [n.text for n in launch.notes]}


def _patch_json(use: PatchUse) -> dict[str, object]:
    patch = use.patch
    return {"id": patch.id, "title": patch.title, "repo": patch.repo, "commit": patch.commit,
            "checkout_env": use.checkout_var, "needed": use.needed, "why": use.why, "breaks": patch.breaks,
            "files": [{"path": f.path, "target": f.target} for f in patch.files], "env": dict(patch.env)}


def render(fmt: str, plan: Plan, options: ExportOptions = DEFAULT_OPTIONS, ranked: tuple[Ranked, ...] = (),
           sources: Mapping[str, Source] | None = None) -> tuple[ExportFile, ...]:
    """The files of one format for a plan; ExportError when the plan cannot be exported."""
    from sparkadvisor.export import claude, configs, report, shell
    from sparkadvisor.export.llamacpp import is_llamacpp

    if is_llamacpp(plan):
        return _render_llama(fmt, plan, options, ranked, sources or {})
    launch = build_launch(plan, options)
    if fmt == "sh":
        return shell.render_sh(launch)
    if fmt == "yaml":
        return configs.render_yaml(launch)
    if fmt == "compose":
        return configs.render_compose(launch)
    if fmt == "claude":
        return claude.render_claude(launch)
    if fmt == "md":
        return report.render_md(launch, ranked, sources or {})
    if fmt == "json":
        return (ExportFile("plan.json", safe_json(plan_json(launch)) + "\n"),)
    raise ExportError(f"unknown format {fmt!r}; valid formats: {', '.join(FORMATS)}")


def _render_llama(fmt: str, plan: Plan, options: ExportOptions, ranked: tuple[Ranked, ...],
                  sources: Mapping[str, Source]) -> tuple[ExportFile, ...]:
    from sparkadvisor.export import claude, llamash, report
    from sparkadvisor.export.llamacpp import build_llama_launch, llama_json

    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; valid formats: {', '.join(FORMATS)}")
    if fmt not in LLAMA_FORMATS:
        raise ExportError(f"--format {fmt} is for vLLM, and {plan.build.id} is planned on llama.cpp, which runs "
                          "from a local build with no container or config file: export it with --format "
                          f"{', '.join(list(LLAMA_FORMATS)[:-1])} or {list(LLAMA_FORMATS)[-1]}")
    launch = build_llama_launch(plan, options)
    if fmt == "sh":
        return llamash.render_llama_sh(launch)
    if fmt == "claude":
        return claude.render_claude(launch)
    if fmt == "md":
        return report.render_md(launch, ranked, sources)
    return (ExportFile("plan.json", safe_json(llama_json(launch)) + "\n"),)
