"""Start-up and ranking speed, side by side with llmfit: `python benchmarks/bench_core.py`.

Each figure is the median of several runs, the two tools run in turn (A B A B ...) so a
change in the machine's load hits both. CPU time (user + system of the child, from the
kernel's accounting) is the figure to quote on a shared machine; wall time is printed too.

| figure | sparkadvisor | llmfit (Rust), the peer it is measured against |
|---|---|---|
| --help | `sparkadvisor --help` | `llmfit --help` |
| one answer as JSON | `sparkadvisor rank --json`, warm cache | `llmfit --json info MODEL` |
| rank --json, cold cache | after the cache is removed (parse and validate) | - |
| 10,000 builds ranked | `advise` on a generated catalog (this process's CPU) | `llmfit --json fit`, ~10,400 models |
| TUI first paint | tmux 160x45 until the ranked table shows | tmux 160x45 until its model table shows |

llmfit is looked for at $LLMFIT, else /tmp/llmfit-venv/bin/llmfit, and installed there with
pip (`python -m venv /tmp/llmfit-venv && /tmp/llmfit-venv/bin/pip install llmfit`) if absent.
Targets: --help <= 60 ms CPU; rank --json <= llmfit info; 10,000 builds <= 0.3 s; first
paint <= llmfit's.

The package's bytecode is compiled first (`compileall`): an installed wheel ships it, and an
environment with PYTHONDONTWRITEBYTECODE would otherwise recompile every edited module on
every run, which is not start-up a user sees.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LLMFIT_VENV = Path("/tmp/llmfit-venv")
LLMFIT_MODEL = "Qwen/Qwen3-8B"
"""A model llmfit's own database holds, so `info` answers rather than listing matches."""


def run_once(command: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of `command`, output discarded."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {process.returncode}")
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - start


def side_by_side(runs: int, *commands: Callable[[], tuple[float, float]]) -> list[tuple[float, float]]:
    """Median (CPU, wall) of each command, run in turn after one warm-up each."""
    for command in commands:
        command()
    samples: list[list[tuple[float, float]]] = [[] for _ in commands]
    for _ in range(runs):
        for position, command in enumerate(commands):
            samples[position].append(command())
    return [(statistics.median(s[0] for s in runs_of), statistics.median(s[1] for s in runs_of))
            for runs_of in samples]


def llmfit() -> Path | None:
    """The llmfit binary, installed into a scratch venv when it is not there yet."""
    found = os.environ.get("LLMFIT") or (LLMFIT_VENV / "bin" / "llmfit")
    if Path(found).exists():
        return Path(found)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(LLMFIT_VENV)], check=True, capture_output=True)
        subprocess.run([str(LLMFIT_VENV / "bin" / "pip"), "install", "-q", "llmfit"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return LLMFIT_VENV / "bin" / "llmfit" if (LLMFIT_VENV / "bin" / "llmfit").exists() else None


def sparkadvisor_command(*args: str) -> list[str]:
    script = Path(sys.executable).parent / "sparkadvisor"
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "sparkadvisor", *args]


def rank_in_process(builds: int, runs: int) -> float:
    """Median CPU seconds to evaluate and rank `builds` generated builds on two Sparks."""
    from benchmarks.synthetic import synthetic_index
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.advisor import advise
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC, CHAT

    index = synthetic_index(load_index(include_user=False).catalog, builds)
    cluster = Cluster(index.hardware["dgx-spark"], 2)
    times = []
    for number in range(runs):
        start = time.process_time()
        advise(index, cluster, AGENTIC if number % 2 else CHAT)
        times.append(time.process_time() - start)
    return statistics.median(times)


def tmux_first_paint(command: str, ready: Callable[[str], bool], timeout_s: float = 15) -> float | None:
    """Seconds from starting `command` in a 160x45 tmux window until `ready(screen)`."""
    if shutil.which("tmux") is None:
        return None
    tmux = ["tmux", "-L", f"bench-core-{os.getpid()}-{time.monotonic_ns()}"]
    start = time.perf_counter()
    subprocess.run(tmux + ["new-session", "-d", "-x", "160", "-y", "45", "-s", "b",
                           f"env -u COLUMNS -u LINES TERM=xterm-256color {command}"], check=True)
    try:
        while time.perf_counter() - start < timeout_s:
            screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", "b"], capture_output=True, text=True).stdout
            if ready(screen):
                return time.perf_counter() - start
            time.sleep(0.01)
        return None
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)


def first_paints(home: str, peer: Path | None, runs: int) -> tuple[float | None, float | None]:
    """Median first paint of sparkadvisor's TUI and of llmfit's, run in turn."""
    ours = " ".join(sparkadvisor_command())
    mine, theirs = [], []
    for _ in range(runs):
        mine.append(tmux_first_paint(f"env SPARKADVISOR_HOME={home} {ours}",
                                     lambda s: "Candidates (" in s and "GLM-5.3-Flash" in s))
        if peer is not None:
            theirs.append(tmux_first_paint(str(peer), lambda s: "Models (" in s and "Score" in s))
    return _median(mine), _median(theirs)


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="counted runs of each command (default 7)")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], check=True,
                   stdout=subprocess.DEVNULL)
    home = tempfile.mkdtemp(prefix="sparkadvisor-bench-")
    env = {**os.environ, "SPARKADVISOR_HOME": home}
    peer = llmfit()
    if peer is None:
        print("llmfit could not be installed: its column stays empty")

    def ours(*words: str) -> Callable[[], tuple[float, float]]:
        return lambda: run_once(sparkadvisor_command(*words), env)

    def theirs(*words: str) -> Callable[[], tuple[float, float]]:
        return lambda: run_once([str(peer), *words])

    rows: list[tuple[str, tuple[float, float], tuple[float, float] | None]] = []
    for label, mine, peers in (("--help", ours("--help"), theirs("--help")),
                               (f"rank --json (warm) | llmfit --json info {LLMFIT_MODEL}", ours("rank", "--json"),
                                theirs("--json", "info", LLMFIT_MODEL))):
        figures = side_by_side(args.runs, mine, *([peers] if peer else []))
        rows.append((label, figures[0], figures[1] if peer else None))

    def cold() -> tuple[float, float]:
        shutil.rmtree(Path(home) / "cache", ignore_errors=True)
        return run_once(sparkadvisor_command("rank", "--json"), env)

    rows.append(("rank --json (cold cache)", side_by_side(3, cold)[0], None))
    fit_peer = side_by_side(3, theirs("--json", "fit"))[0] if peer else None
    ranked = rank_in_process(10_000, args.runs)
    mine_paint, peer_paint = first_paints(home, peer, max(3, args.runs // 2))
    print(f"{'figure':<58} {'sparkadvisor cpu / wall':>24} {'llmfit cpu / wall':>22}")
    for label, (cpu, wall), other in rows:
        peer_text = f"{_ms(other[0])} / {_ms(other[1])}" if other else "-"
        print(f"{label:<58} {_ms(cpu) + ' / ' + _ms(wall):>24} {peer_text:>22}")
    fit_text = f"{_ms(fit_peer[0])} / {_ms(fit_peer[1])} (fit)" if fit_peer else "-"
    print(f"{'10,000 builds ranked (in process) | llmfit --json fit':<58} {_ms(ranked) + ' cpu':>24} {fit_text:>22}")
    print(f"{'TUI first paint, tmux 160x45 (wall)':<58} {_ms(mine_paint):>24} {_ms(peer_paint):>22}")
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
