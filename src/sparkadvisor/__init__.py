"""sparkadvisor: the memory arithmetic for serving open LLMs on DGX Spark clusters.

The package root stays import-light: the TUI, the hub client and the HTTP probe
are imported only where they are used.
"""

__version__ = "0.1.0"
