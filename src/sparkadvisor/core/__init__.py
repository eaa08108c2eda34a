"""The pure core: no UI, no network, no file access."""
