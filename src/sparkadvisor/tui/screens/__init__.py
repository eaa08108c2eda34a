"""Screens of the terminal app; each has its stylesheet beside it."""
