"""The terminal app: `sparkadvisor` with no command. Imports textual; the core never does."""
