"""Prometheus text and histograms, as vLLM writes them: pure, milliseconds."""

from __future__ import annotations

import math

import pytest
from probe_fakes import VllmState

from sparkadvisor.core.metrics import (
    MetricsFormatError,
    counter_delta,
    histogram_quantile,
    parse_prometheus,
    window,
)


def test_labels_with_commas_and_escaped_quotes_are_read() -> None:
    scrape = parse_prometheus('vllm:num_requests_running{model_name="a,\\"b\\"",engine="0"} 2.0\n'
                              'vllm:num_requests_running{model_name="c",engine="1"} 3\n')
    assert scrape.total("vllm:num_requests_running") == 5.0


def test_gauges_take_the_fullest_engine() -> None:
    scrape = parse_prometheus('vllm:kv_cache_usage_perc{engine="0"} 0.2\nvllm:kv_cache_usage_perc{engine="1"} 0.7\n')
    assert scrape.highest("vllm:kv_cache_usage_perc") == 0.7


@pytest.mark.parametrize("text, words", [
    ("<html><body>Welcome to nginx!</body></html>", "no line in Prometheus text format"),
    ('{"detail": "Not Found"}', "no line in Prometheus text format"),
    ("# only comments\n\n", "is empty"),
])
def test_garbage_is_a_format_error_with_a_sentence(text: str, words: str) -> None:
    with pytest.raises(MetricsFormatError, match=words):
        parse_prometheus(text)


def test_quantile_interpolates_inside_the_bucket_like_prometheus() -> None:
    buckets = {1.0: 0.0, 2.0: 10.0, 4.0: 20.0, math.inf: 20.0}
    assert histogram_quantile(0.5, buckets) == pytest.approx(2.0)
    assert histogram_quantile(0.75, buckets) == pytest.approx(3.0)
    assert histogram_quantile(0.25, buckets) == pytest.approx(1.5)


def test_quantile_in_the_inf_bucket_is_the_highest_finite_bound() -> None:
    assert histogram_quantile(0.99, {1.0: 1.0, 5.0: 2.0, math.inf: 10.0}) == 5.0


def test_quantile_of_an_empty_histogram_is_unknown() -> None:
    assert histogram_quantile(0.5, {1.0: 0.0, math.inf: 0.0}) is None


def test_a_counter_that_went_down_restarted() -> None:
    assert counter_delta(500.0, 120.0) == 120.0
    assert counter_delta(100.0, 160.0) == 60.0


def test_hit_rate_is_over_the_interval_not_the_lifetime() -> None:
    fake = VllmState(hits=100, queries=1000, hits_per_scrape=120, queries_per_scrape=1000)
    before, after = parse_prometheus(fake.metrics_text()), parse_prometheus(fake.metrics_text())
    w = window(before, after, 5.0)
    assert w.prefix_cache_hit_rate == pytest.approx(0.12)
    assert w.prefix_cache_hit_rate_lifetime == pytest.approx((100 + 240) / 3000)


def test_latency_percentiles_come_from_what_moved_between_scrapes() -> None:
    fake = VllmState(ttft_per_scrape=(0, 0, 0, 0, 0, 0, 4, 0, 0))  # 4 new first tokens in 20-40 s each scrape
    before, after = parse_prometheus(fake.metrics_text()), parse_prometheus(fake.metrics_text())
    w = window(before, after, 5.0)
    assert w.ttft.basis == "interval"
    assert 20 < w.ttft.p50_s <= 40
    assert w.ttft.observations == 4


def test_no_traffic_leaves_the_hit_rate_unknown_and_says_why() -> None:
    fake = VllmState(hits_per_scrape=0, queries_per_scrape=0, ttft_per_scrape=(0,) * 9, running=0)
    before, after = parse_prometheus(fake.metrics_text()), parse_prometheus(fake.metrics_text())
    w = window(before, after, 5.0)
    assert w.prefix_cache_hit_rate is None
    assert w.ttft.basis == "since start"
    assert w.generation_tok_s is None
    assert any("no prompt reached vLLM during the interval" in n for n in w.notes)


def test_generation_speed_per_request_and_spec_acceptance() -> None:
    fake = VllmState(generation_per_scrape=205, running=1)
    before, after = parse_prometheus(fake.metrics_text()), parse_prometheus(fake.metrics_text())
    w = window(before, after, 5.0)
    assert w.generation_tok_s == pytest.approx(41.0)
    assert w.single_stream
    assert w.spec_acceptance == pytest.approx(52 / 70)
