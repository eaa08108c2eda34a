"""I/O at the edges: everything that reaches a network or a file outside the catalog.

Each module turns every failure into one typed error or finding with a sentence a person
can act on; the pure core judges what they fetch.
"""
