"""Subcommands of `sparkadvisor`. Each module defines NAME, HELP, add_arguments(parser)
and run(args) -> exit code, imports only argparse-level code at the top, and imports
what it needs inside run(), so building the parser stays cheap."""
