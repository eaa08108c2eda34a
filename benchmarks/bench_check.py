"""`check` on pathological catalogs of growing size: the time must grow with the size, no faster.

Run: python benchmarks/bench_check.py [--sizes 4,16,64,256]   (KiB)
Each shape is one a backtracking pattern choked on (a 4 KB file once took 57 s): a line of
spaces after `[` inside a multi-line string, thousands of tables, one long array. Prints
seconds per size and the ratio to the smallest; linear means the ratio tracks the size.
Not a timed test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def shapes(size: int) -> dict[str, str]:
    """Valid TOML of about `size` bytes, one text per shape."""
    spaces = " \t" * (size // 4)
    return {
        "bracket-and-spaces": f'[[models]]\nid = "x"\nnotes = """\n[{spaces}x{spaces}\n"""\n',
        "many-tables": "".join(f'[[sources_{i}]]\nid = "s{i}"\n' for i in range(size // 24)),
        "long-array": "x = [" + ", ".join('"a"' for _ in range(size // 5)) + "]\n",
        "unclosed-string": 'a = 1\nnotes = """\n' + ("[ x\n" * (size // 4)),
    }


def time_check(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sparkadvisor", "check", str(path)], capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="4,16,64,256", help="file sizes in KiB, comma-separated")
    args = parser.parse_args()
    sizes = [int(s) * 1024 for s in args.sizes.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="sparkadvisor-bench-check-"))
    os.environ["SPARKADVISOR_HOME"] = str(scratch / "home")
    baseline = time_check(scratch / "missing.toml")
    print(f"start-up of `check` (no file): {baseline:.2f} s; figures below are minus that")
    for name in shapes(1024):
        times = []
        for size in sizes:
            path = scratch / f"{name}-{size}.toml"
            path.write_text(shapes(size)[name], encoding="utf-8")
            times.append(max(0.0, time_check(path) - baseline))
        row = "  ".join(f"{size // 1024:>4} KiB {t:6.3f} s" for size, t in zip(sizes, times, strict=True))
        print(f"{name:<20} {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
