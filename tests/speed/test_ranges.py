"""The predicted ranges: sized from signed held-out errors, each side on its own."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.calibration import BAND_QUANTILE, band_from
from sparkadvisor.core.speed.constants import MIN_BAND, default_constants
from sparkadvisor.core.speed.decode import DecodeInputs, estimate_decode
from sparkadvisor.core.speed.prefill import prefill_range


def _outside(errors: list[float], below: float, above: float) -> tuple[int, int]:
    """How many of the errors log(predicted / measured) put the measured figure below, above the range."""
    return (sum(1 for e in errors if e > math.log(1 + below) + 1e-12),
            sum(1 for e in errors if -e > math.log(1 + above) + 1e-12))


@pytest.mark.parametrize("n", [5, 9, 10, 19, 20, 32, 33, 85])
def test_no_more_than_a_tenth_of_the_errors_fall_on_either_side(n):
    rng = random.Random(n)
    errors = [rng.gauss(0.1, 0.3) for _ in range(n)]
    band = band_from(errors)
    below, above = _outside(errors, band.below, band.above)
    tail = (1 - BAND_QUANTILE) / 2
    assert below <= tail * n and above <= tail * n


def test_a_model_that_predicts_too_high_gets_a_range_reaching_further_below():
    over = [math.log(1 + x / 100) for x in range(5, 55, 2)]  # predicted 5-53% too high
    band = band_from(over + [math.log(0.95)])
    assert band.below > 0.45
    assert band.above == pytest.approx(MIN_BAND)


def test_decode_and_prefill_ranges_use_each_side(index):
    spark_like = default_constants(index.hardware["dgx-spark"])
    c = replace(spark_like, aggregate_band=0.1, aggregate_band_below=0.5, prefill_band=0.2, prefill_band_below=0.6)
    inputs = DecodeInputs(active_params=3e9, total_params=30e9, routed_experts=128, experts_per_token=8,
                          nominal_bits=4, stored_bits=4.5, tp=1, pp=1, kv_bytes_read=1e8, layers=48, eager=False,
                          streams=4)
    d = estimate_decode(inputs, 273, c)
    assert d.low_tok_s == pytest.approx(d.expected_tok_s / 1.5)
    assert d.high_tok_s == pytest.approx(d.expected_tok_s * 1.1)
    assert prefill_range(1000.0, c) == pytest.approx((1000 / 1.6, 1200.0))


def test_show_and_rank_say_what_the_range_covers(capsys, isolated_home):
    assert main(["show", "glm-5.3-flash-nvfp4-redhat", "--nodes", "2"]) == 0
    shown = capsys.readouterr().out
    assert "an 80% range: split-conformal from the errors on" in " ".join(shown.split())
    assert main(["rank", "--nodes", "2"]) == 0
    assert "tok/s (low-high): an 80% range" in capsys.readouterr().out

