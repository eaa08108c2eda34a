"""The main screen's status line judged against the screen's own plans."""

from __future__ import annotations

from sparkadvisor.core.checkup import ServedModel
from sparkadvisor.core.metrics import Latency, MetricsWindow, ServedConfig
from sparkadvisor.core.units import fmt_seconds
from sparkadvisor.sources.probe import QuickCheck
from sparkadvisor.tui.widgets.probe_status import status_line


def _low_hit_rate(rate: float = 0.15, config: ServedConfig | None = None) -> MetricsWindow:
    none = Latency(None, None, None, 0, "none")
    return MetricsWindow(5.0, rate, 0.5, 1000.0, 0.3, 1.0, 0.0, none, none, None, None, None, True,
                         config=config or ServedConfig())


async def test_the_screens_plans_give_the_first_token_cost_of_a_low_hit_rate(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)):
        served = ServedModel("RedHatAI/GLM-5.3-Flash-NVFP4", None, 262144)
        up = QuickCheck("http://x", True, None, served, None, 0.0, "vllm", True)
        line = status_line(up, _low_hit_rate(), app.screen.scenario.workload, app.screen.served_plans)
        plan, replan, _ = app.screen.served_plans(served, ServedConfig())
        cold = fmt_seconds(replan(plan[0], 0.15).ttft_s)
        assert line.parts[0].text == f"prefix hits 15% (agent: ~95%) -> 1st token ~{cold}"
        assert line.parts[0].severity == "warning" and cold != fmt_seconds(plan[0].ttft_s)


async def test_a_served_build_that_does_not_fit_the_screens_cluster_gives_no_first_token(make_app) -> None:
    # GLM-5.3-Flash needs two Sparks; on a one-node screen its plan has no first token to quote.
    app = make_app(nodes=1)
    async with app.run_test(size=(120, 40)):
        served = ServedModel("RedHatAI/GLM-5.3-Flash-NVFP4", None, 262144)
        up = QuickCheck("http://x", True, None, served, None, 0.0, "vllm", True)
        line = status_line(up, _low_hit_rate(), app.screen.scenario.workload, app.screen.served_plans)
        texts = [p.text for p in line.parts]
        assert "prefix hits 15% (agent: ~95%)" in texts and "does not fit 1 x DGX Spark?" in texts, texts


async def test_a_kv_cache_much_smaller_than_the_screens_plan_is_a_warning_on_the_line(make_app) -> None:
    # vLLM sized half the blocks the plan's KV memory holds, at the plan's own utilization.
    app = make_app(nodes=1)
    async with app.run_test(size=(120, 40)):
        served = ServedModel("openai/gpt-oss-120b", None, 131072)
        up = QuickCheck("http://x", True, None, served, None, 0.0, "vllm", True)
        [plan], _, _ = app.screen.served_plans(served, ServedConfig())
        shape, budget = plan.pool.shape, plan.fit.budget
        assert budget.kv_pinned_bytes is None
        blocks = int(budget.kv_bytes // shape.block_id_bytes(plan.pool.inputs.block_tokens)) // 2
        config = ServedConfig(block_size=plan.pool.inputs.block_tokens, gpu_memory_utilization=budget.utilization,
                              kv_cache_memory_bytes=budget.kv_pinned_bytes, num_gpu_blocks=blocks)
        line = status_line(up, _low_hit_rate(0.95, config), app.screen.scenario.workload, app.screen.served_plans)
        [small] = [p for p in line.parts if p.text.startswith("small KV cache")]
        half = budget.kv_bytes / 2 / 2**30
        assert small.severity == "warning" and small.text.startswith(f"small KV cache {half:.0f} GiB/rank"), small
        assert small.short == small.text.split(" (")[0]


async def test_a_server_running_no_drafter_is_held_against_the_screens_plan_without_one(make_app) -> None:
    # vLLM registers its spec_decode counters only with a drafter: none seen, the recipe's DFlash2 is left off.
    app = make_app()
    async with app.run_test(size=(120, 40)):
        served = ServedModel("RedHatAI/GLM-5.3-Flash-NVFP4", None, 262144)
        on = app.screen.ranking.by_id["glm-5.3-flash-nvfp4-redhat"].plan
        [with_drafter], _, _ = app.screen.served_plans(served, ServedConfig(speculating=True))
        [without], replan, _ = app.screen.served_plans(served, ServedConfig(speculating=False))
        assert with_drafter is on and not on.drafter_off
        assert without.drafter_off and without.decode_tok_s < on.decode_tok_s / 2
        assert replan(without, 0.5).drafter_off  # the first-token cost at the hit rate keeps the server's setup
