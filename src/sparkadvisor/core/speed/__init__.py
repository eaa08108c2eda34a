"""Decode and prefill speed: what the kernels read and compute, at rates calibrated by measurements.

    constants  SpeedConstants, the free constants of both models, and their assumed starting values
    decode     one decode step: the ceiling, the expected time of a pass term by term, the range
    prefill    one prompt token: its GEMMs, attention, indexer, K/V and weight streams, link share

The stages (`core.stages.decode`, `core.stages.first_token`) apply them to a build under its recipe.
"""
