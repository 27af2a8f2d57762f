"""JIT/AOT divergence tools: template finalization, plan comparison, determinism checks, reduction.

`finalize` simulates AOT compilation's rewrite between its two scheduler passes, `compare` says
how two plans differ (and which score term flipped), `diff` runs both passes, `determinism` plans
a graph under permutations and fresh processes, `reduce` shrinks a graph that keeps a property.
"""
