"""The per-cluster stages of a plan, in the order the arithmetic runs them, one module each.

Each stage is a small frozen record made by one function from the build's facts, the
cluster and the stages before it, passed by keyword:

    fit.fit_on                 -> Fit         parallelism, the node's memory budget, does it fit
    kv_pool.kv_pool_for        -> KvPool      KV bytes per token, the pool, sessions at the context
    decode.decode_speed        -> DecodeSpeed ceiling, expected speed and range, or the measurement
    first_token.first_token    -> FirstToken  prefix caching, uncached tokens, prefill rate, TTFT

`recipe` holds what they all read from the recipe and the caveats; a stage imports only the
stages before it. `core.plan.evaluate` runs them and keeps their records in the `Plan`.
"""
