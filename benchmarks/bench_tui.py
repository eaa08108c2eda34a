"""How fast the terminal app starts and re-ranks. Prints figures; not a timed test.

    python benchmarks/bench_tui.py [--builds 5000] [--toggles 10]

1. Start-up (after compiling the package's bytecode, as bench_core does): a fresh interpreter
   imports the app, reads the bundled catalog and runs until the main screen's first frame
   has been composed (headless driver), measured from just
   before the process is spawned. Target < 0.5 s. With tmux installed, also the time until
   the ranked table is visible in a real terminal (polled every 10 ms).
2. Key to frame: on the bundled catalog and on the bundled builds plus N synthetic ones
   (`synthetic_index`), the time from a key press (Pilot, as the terminal would send it) until
   its frame is composed, for w (workload), 1-4 (nodes), Down, Enter (the build full-screen)
   and e (the export dialog, with its recipe rendered). Between keys the bench waits as a
   person does, so the screen's precompute of the likely next scenarios has run. Target < 100 ms.
3. Re-rank on the N-build catalog: the workload toggle (update changed cells, sort by the
   core's positions) plus the redraw, timed from the key's action to the composed frame.
   "warm" is the normal case (the other workload was ranked in a worker right after start-up);
   "cold" drops that cache first, so it includes the core evaluating every build.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHILD = """
import os, sys, time
from sparkadvisor.catalogs import load_index
from sparkadvisor.tui.app import SparkAdvisorApp
from sparkadvisor.tui.screens.main import MainScreen

class FirstFrame(SparkAdvisorApp):
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(self.painted)

    def painted(self):
        if not (isinstance(self.screen, MainScreen) and self.screen.table.row_count):
            self.call_after_refresh(self.painted)
            return
        print(time.time() - float(os.environ["BENCH_T0"]))
        self.exit()

FirstFrame(load_index([]), []).run(headless=True, size=(160, 45))
"""


def startup_headless() -> float:
    """Seconds from spawning the process to the main screen's first composed frame."""
    env = {**os.environ, "BENCH_T0": repr(time.time())}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def startup_tmux(home: str) -> float | None:
    """Seconds from starting `sparkadvisor` in tmux to the ranked table on screen."""
    script = Path(sys.executable).parent / "sparkadvisor"
    if shutil.which("tmux") is None or not script.exists():
        return None
    socket = f"sparkadvisor-bench-{os.getpid()}"
    tmux = ["tmux", "-L", socket]
    start = time.perf_counter()
    subprocess.run(tmux + ["new-session", "-d", "-x", "160", "-y", "45", "-s", "b",
                           f"env -u COLUMNS -u LINES SPARKADVISOR_HOME={home} TERM=xterm-256color {script}"],
                   check=True)
    try:
        while time.perf_counter() - start < 10:
            screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", "b"], capture_output=True, text=True).stdout
            if "Candidates (" in screen and "GLM-5.3-Flash" in screen:
                return time.perf_counter() - start
            time.sleep(0.01)
        return None
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)


async def rerank(builds: int, toggles: int) -> tuple[float, list[float], list[float]]:
    """(first-frame seconds, warm toggle seconds, cold toggle seconds) on a generated catalog."""
    from benchmarks.synthetic import synthetic_index
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.state import AppState
    from sparkadvisor.tui.app import SparkAdvisorApp

    index = synthetic_index(load_index([], include_user=False).catalog, builds)
    app = SparkAdvisorApp(index, [], AppState(), remember_choices=False)
    start = time.perf_counter()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        first = time.perf_counter() - start
        await app.workers.wait_for_complete()
        warm, cold = [], []
        for _ in range(toggles):
            await app.workers.wait_for_complete()
            warm.append(await timed_toggle(app, pilot))
        for _ in range(max(2, toggles // 5)):
            await app.workers.wait_for_complete()
            app.screen.cache._items.clear()
            cold.append(await timed_toggle(app, pilot))
    return first, warm, cold


KEYS = (("w", "w (workload)"), ("1", "1 (nodes)"), ("3", "3 (nodes)"), ("4", "4 (nodes)"), ("2", "2 (nodes)"),
        ("down", "Down"), ("enter", "Enter (build full-screen)"), ("e", "e (export dialog)"))
"""The keys timed, in the order pressed each round (Enter and e are followed by an untimed Esc)."""


class FrameClock:
    """When the app last put a frame out: the compositor's update rendered to terminal text, as a real
    terminal driver would write it (the headless driver skips the writing, not the composing)."""

    def __init__(self, app) -> None:
        self.stamps: list[float] = []
        self.cpu: list[float] = []
        """The process's CPU time (all threads) at each frame."""
        show = app._display

        def display(screen, update) -> None:
            show(screen, update)
            if update is not None and hasattr(update, "render_segments"):
                update.render_segments(app.console)
            self.stamps.append(time.perf_counter())
            self.cpu.append(time.process_time())

        app._display = display

    async def settled(self, since: float, cpu_since: float, quiet_s: float = 0.15,
                      limit_s: float = 10.0) -> tuple[float, float, float]:
        """Seconds from `since` to the first frame, and to the last one before the screen stays still
        for `quiet_s` (layout settling, the footer, a scroll bar appearing); and the CPU seconds the
        process spent until that last frame (what the key costs, whatever else shares the cores)."""
        while True:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            after = [n for n, t in enumerate(self.stamps) if t > since]
            if after and now - self.stamps[after[-1]] >= quiet_s:
                return (self.stamps[after[0]] - since, self.stamps[after[-1]] - since,
                        self.cpu[after[-1]] - cpu_since)
            if now - since > limit_s:
                raise RuntimeError("no frame within the limit")


async def key_latencies(index, rounds: int) -> dict[str, list[tuple[float, float, float]]]:
    """(wall to the first frame, wall to the settled frame, CPU to it) per press, `rounds` times each key."""
    from sparkadvisor.state import AppState
    from sparkadvisor.tui.app import SparkAdvisorApp
    from sparkadvisor.tui.screens.main import PRECOMPUTE_DELAY_S

    times: dict[str, list[tuple[float, float, float]]] = {label: [] for _, label in KEYS}
    app = SparkAdvisorApp(index, [], AppState(), remember_choices=False)
    async with app.run_test(size=(160, 45)) as pilot:
        clock = FrameClock(app)
        await pilot.pause()
        for _ in range(rounds):
            for key, label in KEYS:
                await asyncio.sleep(PRECOMPUTE_DELAY_S + 0.05)  # a person's pause: the precompute runs
                await app.workers.wait_for_complete()
                start, cpu = time.perf_counter(), time.process_time()
                await app._press_keys([key])
                times[label].append(await clock.settled(start, cpu))
                if key in ("enter", "e"):
                    back, cpu = time.perf_counter(), time.process_time()
                    await app._press_keys(["escape"])
                    await clock.settled(back, cpu)
    return times


def print_latencies(what: str, times: dict[str, list[tuple[float, float, float]]]) -> None:
    presses = len(next(iter(times.values())))
    print(f"key to frame, {what}, median (max) over {presses} presses: wall to the first frame, wall to the "
          "settled frame, CPU to the settled frame")
    for label, values in times.items():
        first, last, cpu = ([v[i] * 1000 for v in values] for i in range(3))
        print("  " + label.ljust(26) + "  ".join(f"{statistics.median(v):6.0f} ms ({max(v):4.0f})"
                                                for v in (first, last, cpu)))


async def timed_toggle(app, pilot) -> float:
    """One workload toggle through the screen's action, to the composed frame."""
    start = time.perf_counter()
    app.screen.action_toggle_workload()
    await pilot.pause()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=5000)
    parser.add_argument("--toggles", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5, help="start-up runs")
    parser.add_argument("--rounds", type=int, default=5, help="presses of each key")
    args = parser.parse_args()
    # As bench_core: an installed wheel ships the bytecode; with PYTHONDONTWRITEBYTECODE every edited
    # module would otherwise be compiled again in each start-up run.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src")], check=True,
                   stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as home:
        os.environ["SPARKADVISOR_HOME"] = home
        os.environ["SPARKADVISOR_PROBE"] = "off"  # no service: its line would repaint between keys
        runs = sorted(startup_headless() for _ in range(args.runs))
        print(f"start-up to first frame (headless, bundled catalog): median {statistics.median(runs):.3f} s, "
              f"min {runs[0]:.3f} s, max {runs[-1]:.3f} s over {args.runs} runs (target < 0.5 s)")
        real = startup_tmux(home)
        if real is not None:
            print(f"start-up to the ranked table in a real terminal (tmux, 10 ms polling): {real:.3f} s")
        from benchmarks.synthetic import synthetic_index
        from sparkadvisor.catalogs import load_index

        bundled = load_index([], include_user=False)
        print_latencies(f"bundled catalog ({len(bundled.catalog.builds)} builds)",
                        asyncio.run(key_latencies(bundled, args.rounds)))
        big = synthetic_index(bundled.catalog, args.builds)
        print_latencies(f"{args.builds} synthetic builds + the bundled ones",
                        asyncio.run(key_latencies(big, args.rounds)))
        first, warm, cold = asyncio.run(rerank(args.builds, args.toggles))
    print(f"{args.builds} synthetic builds: first frame {first:.3f} s in-process")
    print(f"workload toggle re-rank + redraw, warm (precomputed): median {statistics.median(warm) * 1000:.0f} ms, "
          f"max {max(warm) * 1000:.0f} ms over {len(warm)} toggles (target < 100 ms)")
    print(f"workload toggle re-rank + redraw, cold (core evaluates all builds): median "
          f"{statistics.median(cold) * 1000:.0f} ms over {len(cold)} toggles")


if __name__ == "__main__":
    main()
