"""The help screen's legend says what the table's figures are, as `show` computes them."""

from __future__ import annotations

from sparkadvisor.tui.screens.help import marks_content


def test_the_fit_legend_says_the_room_is_what_the_weights_leave(index):
    """`fits +11.2 GiB` is gpu-memory-utilization x memory - weights (show's fit line: '11.2 GiB is
    left for the KV cache and activations'), not what is left beyond the KV cache too."""
    from sparkadvisor.core.advisor import advise
    from sparkadvisor.core.explain import explain
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC

    legend = next(str(row) for row in marks_content() if "fits +X GiB" in str(row))
    assert "after the weights" in legend and "beyond the weights, KV cache" not in legend
    glm = next(r for r in advise(index, Cluster(index.hardware["dgx-spark"], 2), AGENTIC)
               if r.plan.build.id == "glm-5.3-flash-nvfp4-redhat")
    left = f"{glm.plan.budget.left_bytes / 2**30:.1f} GiB"
    fit_line = next(s for s in explain(glm.plan) if s.key == "budget").text
    assert f"{left} is left for the KV cache and activations" in fit_line
