"""Imports every command module so that each registers itself on the `cli` group."""

from fuseopt.cli import (  # noqa: F401
    bench_cmd,
    ci_cmd,
    determinism_cmd,
    diff_cmd,
    explain_cmd,
    optimize_cmd,
    reduce_cmd,
    run_cmd,
    schema_cmd,
    validate_cmd,
)
