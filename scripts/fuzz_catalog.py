"""The fuzz test's property for as long as you like: mutated catalogs through check, rank and show.

Run: python scripts/fuzz_catalog.py [--runs 2000] [--bundled] [--random-seed 1]
Prints how many catalogs `check` refused, how many problems had no line number, and every
failure kind (a traceback, `check` ok but `rank`/`show` failing, JSON that is not strict)
with one mutation list that produces it. --bundled mutates the bundled catalog (slower,
about a second a run) instead of the small seed in tests/data/catalogs/fuzz_seed.toml.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))


def run(main, argv: list[str]) -> tuple[int | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_info:
            code = int(exit_info.code or 0)
        except Exception as error:  # noqa: BLE001  (what the fuzz is looking for)
            frame = traceback.extract_tb(error.__traceback__)[-1]
            return None, f"{type(error).__name__} at {Path(frame.filename).name}:{frame.lineno}", ""
    return code, err.getvalue(), out.getvalue()


def strict(text: str) -> bool:
    try:
        json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
    except ValueError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--bundled", action="store_true", help="mutate the bundled catalog")
    parser.add_argument("--random-seed", type=int, default=1)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="sparkadvisor-fuzz-"))
    os.environ.update(SPARKADVISOR_HOME=str(scratch / "home"), SPARKADVISOR_PROBE="off")
    from mutate import KINDS, Mutation, mutate

    from sparkadvisor.cli import main as cli

    seed = (ROOT / "catalog.toml") if args.bundled else (ROOT / "tests" / "data" / "catalogs" / "fuzz_seed.toml")
    build = "glm-5.3-flash-nvfp4-redhat" if args.bundled else "b"
    text, rng = seed.read_text(encoding="utf-8"), random.Random(args.random_seed)
    failures: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[Mutation]] = {}
    refused = problems = without_line = 0
    start = time.monotonic()
    for _ in range(args.runs):
        chosen = [Mutation(rng.choice(KINDS), rng.randrange(10_000), rng.randrange(100))
                  for _ in range(rng.randint(1, 3))]
        path = scratch / "mutated.toml"
        path.write_text(mutate(text, chosen), encoding="utf-8")
        code, err, _ = run(cli, ["check", str(path)])
        found = []
        if code is None:
            found.append(f"check: {err}")
        elif code != 0:
            refused += 1
            for line in err.splitlines()[1:]:
                problems += 1
                without_line += not line.split(str(path), 1)[-1].split(":")[1].strip().isdigit()
        else:
            for argv in (["rank", "--json"], ["show", build, "--json"], ["show", build]):
                code, err, out = run(cli, [*argv, "--catalog", str(path)])
                if code is None or code != 0 and "unknown build" not in err:
                    found.append(f"{argv[0]} after check ok: {err.strip()[:120]}")
                elif code == 0 and "--json" in argv and not strict(out):
                    found.append(f"{argv[0]} printed JSON that is not strict")
        for kind in found:
            failures[kind] += 1
            examples.setdefault(kind, chosen)
    print(f"{args.runs} mutated catalogs in {time.monotonic() - start:.0f} s: {refused} refused by check with "
          f"{problems} problems, {without_line} of them without a line; {sum(failures.values())} failures")
    for kind, count in failures.most_common():
        print(f"  {count:5d}  {kind}\n         e.g. {examples[kind]}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
