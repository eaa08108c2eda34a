"""`python -m sparkadvisor` runs the same entry point as the `sparkadvisor` script."""

from sparkadvisor.cli import main

raise SystemExit(main())
