"""Imports every command module so that each registers itself on the `cli` group."""

from fuseopt.cli import explain_cmd, optimize_cmd, schema_cmd, validate_cmd  # noqa: F401
