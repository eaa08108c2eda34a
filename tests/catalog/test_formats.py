"""Weight formats: every name the schema accepts has its stored bits, and a per-model mix states its size."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.memory import build_weights
from sparkadvisor.core.schema import Build, Format, Model, Params

DATA = Path(__file__).resolve().parents[1] / "data" / "catalogs"


def test_every_format_the_schema_accepts_has_its_bits():
    assert set(typing.get_args(Format)) == set(FORMATS)


@pytest.mark.parametrize(("fmt", "bits"), [
    ("gguf-q4_0", 4.5),  # ggml-common.h block_q4_0: fp16 scale + 32 nibbles = 18 bytes per 32
    ("gguf-q4_k_s", 4.6672), ("gguf-q4_k_m", 4.8944), ("gguf-iq4_xs", 4.4597),  # quantize README, Llama-3.1-8B
    ("gguf-q5_k_m", 5.7036), ("gguf-q6_k", 6.5633), ("gguf-q8_0", 8.5008),
])
def test_a_gguf_build_without_a_size_is_derived_at_its_file_average(fmt, bits):
    model = Model(id="m", name="M", family="F", params=Params(total_b=8, source="x"), source="x")
    build = Build(id="b", model="m", repo="org/m-GGUF", format=fmt, source="x")
    weights = build_weights(build, model)
    assert not weights.stated
    assert weights.total_bytes == pytest.approx(8e9 * bits / 8)


def test_a_dynamic_quant_without_a_size_is_refused_in_one_sentence(capsys):
    assert main(["check", str(DATA / "ud_without_size.toml")]) == 1
    err = capsys.readouterr().err
    assert "ud_without_size.toml:15:" in err and 'builds[0] "b"' in err
    assert "gguf-ud-q4_k_xl picks its types per model" in err and "[builds.size]" in err
    assert "Traceback" not in err
