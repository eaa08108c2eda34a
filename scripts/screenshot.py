"""Render the README's screenshot with the app itself: `python scripts/screenshot.py`.

Runs the TUI headless on the bundled catalog (2 x DGX Spark, agentic workload, dark theme,
no service probe) and saves the first settled frame as docs/screenshot.svg.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


async def main() -> None:
    os.environ["SPARKADVISOR_HOME"] = tempfile.mkdtemp(prefix="sparkadvisor-shot-")
    os.environ["SPARKADVISOR_PROBE"] = "off"
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.tui.app import SparkAdvisorApp

    app = SparkAdvisorApp(load_index(include_user=False), [])
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        app.save_screenshot(filename="screenshot.svg", path=str(ROOT / "docs"))


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
