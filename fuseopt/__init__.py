"""fuseopt: a kernel-graph fusion optimizer with explained decisions (see README.md)."""

__version__ = "0.1.0"
