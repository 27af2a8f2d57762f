"""`fuseopt schema`: print the JSON Schema generated from the pydantic models."""

from __future__ import annotations

import json

import click

from fuseopt.cli.commands import SUMMARIES
from fuseopt.cli.main import cli
from fuseopt.ir.models import Graph


def graph_schema_text() -> str:
    schema = Graph.model_json_schema(mode="validation")
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


@cli.command("schema", short_help=SUMMARIES["schema"])
def schema() -> None:
    """Print the graph format's JSON Schema (the committed copy is schemas/graph.schema.json)."""
    click.echo(graph_schema_text(), nl=False)
