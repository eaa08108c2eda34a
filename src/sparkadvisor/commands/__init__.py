"""Subcommands of `sparkadvisor`, listed with their help in `cli.COMMANDS`. Each module
defines add_arguments(parser) and run(args) -> exit code, imports only argparse-level code
at the top, and imports what it needs inside run(), so building the parser stays cheap."""
