"""The app's bench action: runs on the cluster and workload on screen, records on request,
and the app re-ranks with the recorded run at once."""

from __future__ import annotations

from bench_fakes import bench_server
from textual.widgets import Button, Static

from sparkadvisor import paths
from sparkadvisor.catalogs import load_index
from sparkadvisor.state import AppState
from sparkadvisor.tui.app import SparkAdvisorApp
from sparkadvisor.tui.screens.bench import BenchScreen
from sparkadvisor.tui.widgets.footer import KeyFooter

BUILD = "glm-5.3-flash-nvfp4-redhat"


async def until(pilot, condition, seconds: float = 20.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("the bench dialog never got there")


def two_spark_app() -> SparkAdvisorApp:
    """The app on two Sparks, agentic, not remembering choices."""
    return SparkAdvisorApp(load_index(), [], AppState(workload="agentic", hardware="dgx-spark", nodes=2),
                           remember_choices=False)


async def open_short_bench(app, pilot) -> BenchScreen:
    """Shorten the workload (4,000 tokens in, 20 out) so a run is quick, then press b for the dialog."""
    main = app.screen
    main.set_assumptions(main.scenario.workload.changed(context_tokens=4000, output_tokens=20),
                         main.scenario.settings, None)
    await pilot.press("b")
    await until(pilot, lambda: isinstance(app.screen, BenchScreen))
    return app.screen


async def test_b_benches_the_served_build_and_record_re_ranks_with_it(monkeypatch):
    server = bench_server(overhead_s=0.05, prefill_tok_s=40_000.0, decode_tok_s=50.0)
    monkeypatch.setenv("SPARKADVISOR_VLLM_URL", server.url)
    app = two_spark_app()
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            main = app.screen
            dialog = await open_short_bench(app, pilot)
            assert "4,000 tokens" in str(dialog.query_one("#bench-what", Static).render())
            await pilot.click("#bench-run")
            await until(pilot, lambda: not dialog.query_one("#bench-record", Button).disabled)
            results = str(dialog.query_one("#bench-results", Static).render())
            assert "cold first token [measured]" in results and "decode, 8 streams [measured]" in results
            await pilot.click("#bench-record")
            await until(pilot, lambda: app.screen is main)
            plan = main.ranking.by_id[BUILD].plan
            assert plan.recipe.id == f"bench-{BUILD}-2x-dgx-spark"
            assert plan.decode_measured is not None and "sparkadvisor bench" in plan.decode_measured.note
    finally:
        server.close()
    assert paths.user_catalog_path().is_file()


async def test_a_server_that_is_down_says_so_in_the_dialog(monkeypatch):
    from probe_fakes import closed_port_url

    monkeypatch.setenv("SPARKADVISOR_VLLM_URL", closed_port_url())
    app = SparkAdvisorApp(load_index(), [], AppState(), remember_choices=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, BenchScreen))
        # The footer names the dialog's own key, not the table's (w, s, / ... do nothing here).
        footer = app.screen.query_one(KeyFooter)
        await until(pilot, lambda: bool(footer.items()))
        assert [k.description for k in footer.items()] == ["Close"]
        await pilot.click("#bench-run")
        status = app.screen.query_one("#bench-status", Static)
        await until(pilot, lambda: "the model server is down" in str(status.render()))
        said = " ".join(str(status.render()).split())
        # The app has no --vllm: it says how its own user points it at another address.
        assert "set SPARKADVISOR_VLLM_URL to its address and start sparkadvisor again" in said and "--vllm" not in said
        assert app.screen.query_one("#bench-record", Button).disabled
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, BenchScreen))
    assert not paths.user_catalog_path().exists()


async def test_a_served_build_that_does_not_fit_the_screens_cluster_is_named_in_the_dialog(monkeypatch):
    server = bench_server(overhead_s=0.05, prefill_tok_s=40_000.0, decode_tok_s=50.0)
    monkeypatch.setenv("SPARKADVISOR_VLLM_URL", server.url)
    app = SparkAdvisorApp(load_index(), [], AppState(workload="agentic", hardware="dgx-spark", nodes=1),
                          remember_choices=False)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("b")
            await until(pilot, lambda: isinstance(app.screen, BenchScreen))
            await pilot.click("#bench-run")
            status = app.screen.query_one("#bench-status", Static)
            await until(pilot, lambda: "does not fit" in str(status.render()))
            assert str(status.render()) == (
                "vLLM serves glm-5.3-flash-nvfp4-redhat, which by the plan does not fit on 1 x DGX Spark (it needs "
                "2 nodes): close this and pick the cluster it runs on (1-8 nodes, h hardware)")
            assert app.screen.query_one("#bench-record", Button).disabled and server.state.completions == 0
    finally:
        server.close()


async def test_credentials_in_the_vllm_address_never_reach_the_dialog(monkeypatch):
    server = bench_server(overhead_s=0.05, prefill_tok_s=40_000.0, decode_tok_s=50.0)
    monkeypatch.setenv("SPARKADVISOR_VLLM_URL", server.url.replace("http://", "http://user:s3cret@"))
    app = two_spark_app()
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            dialog = await open_short_bench(app, pilot)
            await pilot.click("#bench-run")
            await until(pilot, lambda: not dialog.query_one("#bench-record", Button).disabled)
            shown = " ".join(str(dialog.query_one(f"#bench-{part}", Static).render())
                             for part in ("what", "status", "results"))
            assert "s3cret" not in shown and "http://***@127.0.0.1" in shown
    finally:
        server.close()
