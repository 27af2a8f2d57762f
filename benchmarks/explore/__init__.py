"""Exploration rounds behind fuseopt's launch choices (run through benchmarks/explore_gpu.py)."""
