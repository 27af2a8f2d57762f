"""Imports every command module so that each registers itself on the `cli` group."""

from fuseopt.cli import schema_cmd, validate_cmd  # noqa: F401
