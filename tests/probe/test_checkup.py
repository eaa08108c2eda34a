"""The running service held against the plan: pure, against the bundled catalog."""

from __future__ import annotations

import pytest

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.checkup import ServedModel, build_findings, claude_target, match_build, workload_findings
from sparkadvisor.core.metrics import Latency, MetricsWindow
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.units import fmt_seconds
from sparkadvisor.core.workload import AGENTIC


def _metrics(hit_rate: float | None = 0.95, tok_s: float | None = None, single: bool = True,
             acceptance: float | None = None) -> MetricsWindow:
    none = Latency(None, None, None, 0, "none")
    return MetricsWindow(5.0, hit_rate, 0.5, 1000.0, 0.3, 1.0, 0.0, none, none, acceptance, None, tok_s, single)


def _plan_and_replan(index, build_id: str):
    build, cluster = index.builds[build_id], Cluster(index.hardware["dgx-spark"], 2)

    def replan(rate: float):
        return evaluate_build(index, build, cluster, AGENTIC.changed(prefix_reuse=rate))
    return evaluate_build(index, build, cluster, AGENTIC), replan


def plan_findings(plan, served, metrics, replan):
    """Every finding against one plan: the workload's and the build's."""
    return (workload_findings(plan.workload, served, metrics, [plan], lambda _, rate: replan(rate))
            + build_findings([plan], metrics))


def _texts(findings, severity: str) -> list[str]:
    return [f.text for f in findings if f.severity == severity]


@pytest.mark.parametrize("served, build_id", [
    (ServedModel("RedHatAI/GLM-5.3-Flash-NVFP4", "RedHatAI/GLM-5.3-Flash-NVFP4", 262144), "glm-5.3-flash-nvfp4-redhat"),
    (ServedModel("glm", "/models/RedHatAI/GLM-5.3-Flash-NVFP4/", 262144), "glm-5.3-flash-nvfp4-redhat"),
    (ServedModel("qwen3.8-flash-next-nvfp4", None, 262144), "qwen3.8-flash-next-nvfp4"),
    (ServedModel("gpt-oss-120b", "/data/gpt-oss-120b", 131072), "gpt-oss-120b-mxfp4"),
])
def test_the_served_model_finds_its_build(index, served: ServedModel, build_id: str) -> None:
    assert match_build(index, [served]).build.id == build_id


def test_an_ambiguous_served_name_asks_for_build(index) -> None:
    match = match_build(index, [ServedModel("GLM-5.3-Flash-NVFP4", "/models/GLM-5.3-Flash-NVFP4", None)])
    assert match.build is None and len(match.builds) == 3
    assert "fits 3 builds" in match.how and "glm-5.3-flash-nvfp4-redhat" in match.how


def test_an_unknown_model_says_so(index) -> None:
    match = match_build(index, [ServedModel("my-finetune", "/models/my-finetune", None)])
    assert match.build is None and "no catalog build matches" in match.how and "my-finetune" in match.how


@pytest.mark.parametrize("base, target", [
    (None, "cloud"), ("https://api.anthropic.com", "cloud"),
    ("http://localhost:8000", "vllm"), ("http://[::1]:8000/", "vllm"),
    ("http://127.0.0.1:8082", "gateway"), ("http://10.0.0.5:4000", "other"),
])
def test_claude_code_target(base: str | None, target: str) -> None:
    assert claude_target(base, "http://127.0.0.1:8000", "http://localhost:8082") == target


def test_low_hit_rate_gives_the_first_token_from_the_plans_prefill_rate(index) -> None:
    plan, replan = _plan_and_replan(index, "glm-5.3-flash-nvfp4-redhat")
    findings = plan_findings(plan, None, _metrics(hit_rate=0.12), replan)
    # 88,000 uncached tokens attend to the 12,000 cached plus half of themselves: the measured rate
    # (a 262K-token cold prompt) is scaled by the model to that depth, not the warm turn's.
    at_hit_rate = replan(0.12)
    assert at_hit_rate.prefill_basis == "scaled" and at_hit_rate.prefill_tok_s != plan.prefill_tok_s
    expected_s = 100_000 * (1 - 0.12) / at_hit_rate.prefill_tok_s
    [warning] = _texts(findings, "warning")
    assert warning.startswith("prefix-cache hit rate 12% where an agent should see ~95%: "
                              f"first tokens take ~{fmt_seconds(expected_s)} at 100k context; the plan expects")
    assert 60 < expected_s < 70


def test_the_first_token_follows_each_builds_own_prefill_rate(index) -> None:
    glm, glm_replan = _plan_and_replan(index, "glm-5.3-flash-nvfp4-redhat")
    oss, oss_replan = _plan_and_replan(index, "gpt-oss-120b-mxfp4")
    glm_text = _texts(plan_findings(glm, None, _metrics(0.12), glm_replan), "warning")[0]
    oss_text = _texts(plan_findings(oss, None, _metrics(0.12), oss_replan), "warning")[0]
    assert glm.prefill_tok_s != oss.prefill_tok_s
    assert glm_text.split(":")[1] != oss_text.split(":")[1]


def test_a_healthy_hit_rate_is_ok(index) -> None:
    plan, replan = _plan_and_replan(index, "glm-5.3-flash-nvfp4-redhat")
    findings = plan_findings(plan, None, _metrics(hit_rate=0.94), replan)
    assert not _texts(findings, "warning")
    assert any(t.startswith("prefix-cache hit rate 94% over the last 5 s") for t in _texts(findings, "ok"))


def test_short_max_model_len_is_critical(index) -> None:
    plan, replan = _plan_and_replan(index, "glm-5.3-flash-nvfp4-redhat")
    findings = plan_findings(plan, ServedModel("glm", None, 32768), None, replan)
    assert _texts(findings, "critical") == [
        "max_model_len 32,768 but the agentic workload needs 100,000: longer prompts are refused; "
        "restart vLLM with --max-model-len 100000 or more"]


def test_slow_decode_is_compared_with_the_plan(index) -> None:
    plan, replan = _plan_and_replan(index, "glm-5.3-flash-nvfp4-redhat")
    assert plan.decode_tok_s == pytest.approx(46.9)
    slow = plan_findings(plan, None, _metrics(tok_s=38.0), replan)
    assert "38 tok/s measured against 47 expected (81%) for one stream" in _texts(slow, "warning")
    near = plan_findings(plan, None, _metrics(tok_s=41.0), replan)
    assert "41 tok/s measured against 47 expected (87%) for one stream" in _texts(near, "ok")


def test_decode_with_several_requests_is_not_compared(index) -> None:
    plan, replan = _plan_and_replan(index, "glm-5.3-flash-nvfp4-redhat")
    findings = plan_findings(plan, None, _metrics(tok_s=20.0, single=False), replan)
    assert any("not compared" in t for t in _texts(findings, "info"))
    assert not _texts(findings, "warning")


def test_low_speculative_acceptance_is_a_warning(index) -> None:
    plan, replan = _plan_and_replan(index, "glm-5.3-flash-nvfp4-redhat")
    findings = plan_findings(plan, None, _metrics(acceptance=0.3), replan)
    [warning] = _texts(findings, "warning")
    assert "speculative decoding accepts 30% of drafted tokens against the recipe's 74%" in warning
    # What it costs, from the same step at the counted acceptance.
    assert warning.endswith("decode will fall short of the plan (23 tok/s for one stream where the recipe's "
                            "acceptance gives 47)")


def test_decode_is_held_against_the_plan_at_the_acceptance_vllm_counts(index) -> None:
    """A drafter accepts less on prose than on code: the plan's decode is scaled to the counted acceptance, so a
    server that is only drafting worse text is not called slow, and one slow at its own acceptance is."""
    plan, replan = _plan_and_replan(index, "glm-5.3-flash-nvfp4-redhat")
    findings = plan_findings(plan, None, _metrics(tok_s=38.0, acceptance=0.55), replan)
    [decode] = [f.text for f in findings if f.text.endswith("at the recipe's acceptance, 47")]
    expected = int(decode.split(" against ")[1].split()[0])
    # 1 + 7 x 0.55 tokens a pass against the recipe's 1 + 7 x 0.741, at nearly the same step time.
    assert 36 <= expected <= 40 and expected / 46.9 == pytest.approx((1 + 7 * 0.55) / (1 + 7 * 0.741), abs=0.03)
    assert decode == (f"38 tok/s measured against {expected} expected at the 55% acceptance vLLM counts "
                      f"({38 / expected:.0%}) for one stream; at the recipe's acceptance, 47")
    assert decode in _texts(findings, "ok")
    slow = plan_findings(plan, None, _metrics(tok_s=28.0, acceptance=0.55), replan)
    assert any(t.startswith("28 tok/s measured against") for t in _texts(slow, "warning"))
    # At the recipe's own acceptance nothing moves.
    same = plan_findings(plan, None, _metrics(tok_s=41.0, acceptance=0.741), replan)
    assert "41 tok/s measured against 47 expected (87%) for one stream" in _texts(same, "ok")
