"""Widgets of the terminal app: each draws figures the core computed."""
