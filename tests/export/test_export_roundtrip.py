"""Hostile catalog values through every format and back: what bash, vLLM's --config loader,
docker compose and a JSON reader get equals the plan's argument list, or every format refuses.

vLLM's side is a transcription of `FlexibleArgumentParser.load_config_file` and
`_pull_args_from_config` (vllm/utils/argparse_utils.py): yaml.safe_load, then per top-level key
`true` -> `--key`, `false` -> `--no-key` only when vLLM knows it, a list -> `--key item...` (str()
of each), a mapping -> `--key <json.dumps>`, anything else -> `--key str(value)`; `vllm serve
--config f` puts those after `serve`, so the model arrives as `--model`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import subprocess

import pytest
import yaml
from export_helpers import plan_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkadvisor.export import ExportError, render
from sparkadvisor.export.flags import accepted_options, long_name
from sparkadvisor.export.spec import PLACEHOLDER_HOST

NASTY = ["-", "--trust-remote-code", "--model=attacker/evil", "-5", "x\nmodel: attacker/evil-model",
         "x\ntrust-remote-code: true", "$(touch PWNED)", "`id`", "'; touch PWNED; '", '"quoted"', "a: b",
         "# not a comment", "{\"json\": 1}", "[1, 2]", "yes", "null", "0x10", "~", "&anchor", "*alias", "!!python/name",
         "tab\there", "\u2028line", "nel\x85", "\ufeffbom", "é😀", "back\\slash", "%s", "trailing ", " leading",
         "a=b", "${HOME}", "$$"]
CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
HOSTILE = st.one_of(st.sampled_from(NASTY), st.text(CHARS, min_size=1, max_size=12),
                    st.builds(lambda a, b: a + b, st.sampled_from(NASTY), st.text(CHARS, max_size=6)))
NEGATIVE_NUMBER = re.compile(r"-\d+|-\d*\.\d+")
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""yaml.safe_load's loader with libyaml's parser when present: the same resolver and constructor, faster."""


@functools.cache
def glm_plan():  # type: ignore[no-untyped-def]
    """The GLM two-node plan every hostile case starts from (not a fixture: hypothesis would print it)."""
    from sparkadvisor.catalogs import load_index

    return plan_for(load_index(include_user=False), "glm-5.3-flash-nvfp4-redhat", 2)


def _with(obj, **changes):  # type: ignore[no-untyped-def]
    """A copy of a catalog record or plan with some fields changed (pydantic or dataclass)."""
    return obj.model_copy(update=changes) if hasattr(obj, "model_copy") else dataclasses.replace(obj, **changes)


def hostile_plan(plan, values):  # type: ignore[no-untyped-def]
    """`plan` with every catalog string an export writes replaced by a hostile one."""
    recipe = plan.recipe
    spec = _with(recipe.speculative, draft_repo="draft/" + values["draft"])
    recipe = _with(recipe, tool_call_parser=values["tool"], reasoning_parser=values["reasoning"],
                   title=values["title"], image="img:" + values["image"], speculative=spec,
                   extra_args=["--max-num-seqs", values["seqs"], "--max-num-batched-tokens=" + values["batched"]])
    build = _with(plan.build, id=values["id"], repo="org/" + values["repo"])
    return dataclasses.replace(plan, recipe=recipe, build=build)


def vllm_config_argv(text: str) -> list[str]:
    """What `vllm serve --config file.yaml` parses, after vLLM expands the file."""
    argv: list[str] = []
    for key, value in yaml.load(text, LOADER).items():
        if isinstance(value, bool):
            if value:
                argv.append("--" + key)
            elif f"--no-{key}" in accepted_options():
                argv.append(f"--no-{key}")
        elif isinstance(value, list):
            argv += ["--" + key, *map(str, value)] if value else []
        elif isinstance(value, dict):
            argv += ["--" + key, json.dumps(value)]
        else:
            argv += ["--" + key, str(value)]
    return argv


def semantics(argv: list[str]) -> tuple[str | None, list[tuple[str, tuple[str, ...]]]]:
    """(model, [(long flag, values)]) as argparse sees an argument list: `--f=v` is `--f v`, `-tp` is
    `--tensor-parallel-size`, `--model X` is the model."""
    model, options = None, []
    if argv and not argv[0].startswith("-"):
        model, argv = argv[0], argv[1:]
    for token in argv:
        if token.startswith("-") and token != "-" and not NEGATIVE_NUMBER.fullmatch(token):
            flag, eq, value = token.partition("=")
            options.append([long_name(flag).replace("_", "-"), *([value] if eq else [])])
        else:
            options[-1].append(token)
    result = []
    for flag, *values in options:
        if flag == "--model":
            model = values[0]
        else:
            result.append((flag, tuple(values)))
    return model, result


def bash_words(script: str, *names: str) -> list[list[str]]:
    """Each named bash array (or variable) as the script's settings block defines it."""
    settings_block = script[script.index("set -euo pipefail"):script.index("say() {")]
    # Each array's length, then its words: a value may hold any character but NUL, so no marker
    # between arrays is safe (hypothesis found a '\x01' parser name splitting a '\1' marker's groups).
    prints = "".join(f'w=("${{{n}[@]}}"); printf "%s\\0" "${{#w[@]}}" "${{w[@]}}";' for n in names)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "HEAD_ADDR": PLACEHOLDER_HOST, "NODE_ADDR": "node-address"}
    out = subprocess.run(["bash", "-c", settings_block + prints], capture_output=True, timeout=20,
                         env=env, check=True).stdout
    words = out.decode("utf-8", "surrogateescape").split("\0")[:-1]
    groups = []
    while words:
        count, words = int(words[0]), words[1:]
        groups.append(words[:count])
        words = words[count:]
    return groups


def uncompose(value: str) -> str:
    """A compose string as compose interpolates it: `$$` is `$`, `${NAME:-default}` is the default and a required
    `${HEAD_ADDR:?...}` the address the JSON plan names."""
    value = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)
    value = re.sub(r"\$\{HEAD_ADDR:\?[^}]*\}", PLACEHOLDER_HOST, value)
    assert "${" not in value.replace("$$", ""), f"an unescaped interpolation in {value!r}"
    return value.replace("$$", "$")


def check_all_formats(plan, expect_refusal: bool | None = None) -> None:  # type: ignore[no-untyped-def]
    """Every format of `plan` carries its arguments exactly, or every format refuses."""
    outcomes = {}
    for fmt in ("json", "yaml", "compose", "sh", "claude", "md"):
        try:
            outcomes[fmt] = render(fmt, plan)
        except ExportError as error:
            outcomes[fmt] = error
    refused = {fmt for fmt, out in outcomes.items() if isinstance(out, ExportError)}
    assert refused in (set(), set(outcomes)), f"only {refused} refused: {outcomes}"
    if expect_refusal is not None:
        assert bool(refused) == expect_refusal, outcomes
    if refused:
        assert all("catalog value" in str(e) for e in outcomes.values())
        return
    nodes = json.loads(outcomes["json"][0].text)["nodes"]
    head = nodes[0]["vllm_argv"]
    assert head[0] == plan.build.repo
    assert semantics(vllm_config_argv(outcomes["yaml"][0].text)) == semantics(head)
    command = yaml.load(outcomes["compose"][0].text, LOADER)["services"]["vllm"]["command"]
    assert [uncompose(word) for word in command] == ["serve", *head]
    for node, script in zip(nodes, outcomes["sh"], strict=True):
        argv, image = bash_words(script.text, "VLLM_ARGS", "IMAGE")
        assert argv == node["vllm_argv"] and image == [plan.recipe.image]
    served = json.loads(outcomes["claude"][0].text)["env"]["ANTHROPIC_DEFAULT_OPUS_MODEL"]
    assert served == plan.build.id.replace("/", "-")


FIELDS = ("tool", "reasoning", "title", "image", "draft", "seqs", "batched", "id", "repo")


ROUND_TRIP = HOSTILE.map(lambda v: "x" + v if v.startswith(("-", "/")) else v)
"""Hostile values an export must carry (a leading '-' is refused, tested below; a build id's leading '/'
becomes the served name's leading '-')."""


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.fixed_dictionaries({name: ROUND_TRIP for name in FIELDS}))
def test_hostile_values_round_trip_through_every_format(values):
    check_all_formats(hostile_plan(glm_plan(), values), expect_refusal=False)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.fixed_dictionaries({name: HOSTILE for name in FIELDS}))
def test_every_format_refuses_together_or_carries_the_values(values):
    check_all_formats(hostile_plan(glm_plan(), values))


@pytest.mark.parametrize("value", NASTY)
def test_each_known_injection_round_trips_or_is_refused_everywhere(value):
    check_all_formats(hostile_plan(glm_plan(), dict.fromkeys(FIELDS, value)))


def test_a_control_character_in_a_value_stays_inside_its_word():
    """The case hypothesis found: a parser name of '\\x01' beside values of '-'."""
    values = dict.fromkeys(FIELDS, "-") | {"reasoning": "\x01"}
    check_all_formats(hostile_plan(glm_plan(), values))


def test_the_reported_injection_cannot_add_keys():
    value = "x\nmodel: attacker/evil-model\ntrust-remote-code: true"
    plan = hostile_plan(glm_plan(), dict.fromkeys(FIELDS, value))
    config = yaml.safe_load(render("yaml", plan)[0].text)
    assert config["model"] == "org/" + value and config["tool-call-parser"] == value
    assert "trust-remote-code" not in config


def test_a_value_vllm_would_read_as_an_option_is_refused_in_one_sentence():
    plan = hostile_plan(glm_plan(), dict.fromkeys(FIELDS, "ok"))
    plan = dataclasses.replace(plan, recipe=_with(plan.recipe, tool_call_parser="--trust-remote-code"))
    with pytest.raises(ExportError, match="'--trust-remote-code' for --tool-call-parser starts with '-'"):
        render("yaml", plan)


@pytest.mark.parametrize("value", NASTY[:12])
def test_a_custom_images_own_flag_carries_a_hostile_value_or_is_refused_everywhere(value):
    """GLM's recipe runs its own image (a custom-image caveat), so a flag vLLM 0.33 does not know passes: its
    value round-trips through every format like any other, or every format refuses it."""
    plan = hostile_plan(glm_plan(), dict.fromkeys(FIELDS, "ok"))
    recipe = _with(plan.recipe, extra_args=["--fork-only-flag", value])
    plan = dataclasses.replace(plan, recipe=recipe)
    check_all_formats(plan)
    if not value.startswith("-"):
        argv = json.loads(render("json", plan)[0].text)["nodes"][0]["vllm_argv"]
        assert argv[argv.index("--fork-only-flag") + 1] == value
