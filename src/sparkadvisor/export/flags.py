"""The `vllm serve` flags vLLM 0.33 accepts, read from package data.

`data/vllm_serve_flags.json` was extracted from the vLLM 0.33.0 wheel's own argument
parser (its "source" field says how); every flag an export emits is checked against it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

FLAGS_FILE = "vllm_serve_flags.json"


@cache
def flag_data() -> dict[str, Any]:
    """The whole flag list, parsed once."""
    text = (resources.files("sparkadvisor") / "data" / FLAGS_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def vllm_version() -> str:
    """The vLLM version the list was taken from, e.g. "0.33.0"."""
    return str(flag_data()["vllm_version"])


@cache
def accepted_options() -> frozenset[str]:
    """Every option string `vllm serve` accepts: flags, aliases and negations."""
    return frozenset(flag_data()["all_accepted_option_strings"])


def option_name(token: str) -> str:
    """The option part of `--flag=value` (or the token itself)."""
    return token.split("=", 1)[0]


def is_known(token: str) -> bool:
    """True when `token` (an option, possibly `--flag=value`) is a vLLM 0.33 serve option."""
    return option_name(token) in accepted_options()


def takes_value(flag: str) -> bool:
    """True when the canonical `flag` expects a value after it."""
    info = flag_data()["flags"].get(option_name(flag))
    return bool(info and info.get("takes_value"))


@cache
def _dests() -> dict[str, str]:
    by_option: dict[str, str] = {}
    for flag, info in flag_data()["flags"].items():
        names = [flag, *info.get("aliases", []), *info.get("also_accepted_negations", [])]
        names += [info["negation"]] if info.get("negation") else []
        by_option.update({name: info["dest"] for name in names})
    return by_option


def dest_of(token: str) -> str:
    """The setting an option changes (its argparse dest), so `-tp` and `--tensor-parallel-size` match."""
    name = option_name(token)
    return _dests().get(name, name)


def unknown_options(argv: list[str] | tuple[str, ...]) -> list[str]:
    """Options in an argument list that vLLM 0.33 does not accept."""
    return [t for t in argv if t.startswith("-") and not is_known(t)]


@cache
def _long_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for flag, info in flag_data()["flags"].items():
        names.update({alias: flag for alias in info.get("aliases", [])})
    return names


def long_name(token: str) -> str:
    """The `--long-form` of an option, so `-tp` becomes `--tensor-parallel-size` (a config key needs it)."""
    name = option_name(token)
    return _long_names().get(name, name)
