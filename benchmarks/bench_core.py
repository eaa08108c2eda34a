"""Benchmark the CLI and the core: `python benchmarks/bench_core.py`.

Reports (median of several runs):
- wall time of `sparkadvisor rank --json` on the bundled catalog, cold cache and warm;
- the core's ranking time (CPU seconds of this process, so other load on the machine does not
  count) for a generated catalog of 10,000 builds on 1, 2 and 4 nodes.
Targets on a 2-core machine: rank --json under 0.3 s; 10,000 builds ranked under 0.5 s.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cli_seconds(runs: int, cold: bool) -> float:
    home = tempfile.mkdtemp(prefix="sparkadvisor-bench-")
    env = {**os.environ, "SPARKADVISOR_HOME": home}
    command = [sys.executable, "-m", "sparkadvisor", "rank", "--json"]
    subprocess.run(command, env=env, check=True, capture_output=True)
    times = []
    for _ in range(runs):
        if cold:
            shutil.rmtree(Path(home) / "cache", ignore_errors=True)
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    shutil.rmtree(home, ignore_errors=True)
    return statistics.median(times)


def _rank_seconds(builds: int, nodes: int, runs: int) -> tuple[float, int]:
    from benchmarks.synthetic import synthetic_index
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.advisor import advise
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC

    index = synthetic_index(load_index(include_user=False).catalog, builds)
    cluster = Cluster(index.hardware["dgx-spark"], nodes)
    advise(index, cluster, AGENTIC)  # calibrate once, as the app does at start-up
    times = []
    for _ in range(runs):
        start = time.process_time()
        ranked = advise(index, cluster, AGENTIC)
        times.append(time.process_time() - start)
    return statistics.median(times), len(ranked)


def main() -> None:
    print(f"rank --json, warm cache: {_cli_seconds(7, cold=False):.3f} s (target < 0.3 s)")
    print(f"rank --json, cold cache: {_cli_seconds(3, cold=True):.3f} s")
    for nodes in (1, 2, 4):
        seconds, count = _rank_seconds(10_000, nodes, 5)
        print(f"rank {count:,} builds on {nodes} node(s): {seconds:.3f} s of CPU (target < 0.5 s)")


if __name__ == "__main__":
    main()
