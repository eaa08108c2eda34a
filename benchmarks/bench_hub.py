"""Import a 100-shard repo from a local fake hub with 50 ms of latency per request; print the time.

Run: python benchmarks/bench_hub.py [--latency-ms 50] [--shards 100]
Target (issue 6): under 3 s. Not a timed test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "hub"))


def main() -> int:
    """Set the environment before huggingface_hub is imported, serve the repo, import it, report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--shards", type=int, default=100)
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="sparkadvisor-bench-hub-")
    os.environ.update(SPARKADVISOR_HOME=f"{scratch}/home", HF_HOME=f"{scratch}/hf", HF_HUB_DISABLE_TELEMETRY="1",
                      HF_HUB_DISABLE_PROGRESS_BARS="1")
    os.environ.pop("HF_TOKEN", None)
    import repos
    from fakehub import FakeHub

    config, _ = repos.llama_8b()
    config["num_hidden_layers"] = args.shards - 1
    repo = repos.make_repo(config, repos.dense_tensors(config, layers=args.shards - 1), shards=args.shards)
    with FakeHub(latency_s=args.latency_ms / 1000) as hub:
        os.environ["HF_ENDPOINT"] = hub.url
        hub.repos["bench/deep"] = repo
        from sparkadvisor.usercatalog import import_repo

        started = time.perf_counter()
        imported = import_repo("bench/deep")
        seconds = time.perf_counter() - started
    print(f"imported {len(imported.files.shards)} shards, {len(hub.requests)} requests at {args.latency_ms:g} ms "
          f"each, at most {hub.max_in_flight} at once: {seconds:.2f} s (target < 3 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
