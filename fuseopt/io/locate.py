"""Map a JSON pointer back to a line and column of the file it came from (for error messages).

Only used on the error path, so it may re-read the text. JSON is read with PyYAML's composer too
(JSON is, for this purpose, YAML flow syntax), which keeps start marks for every node.
"""

from __future__ import annotations

from typing import Any

import yaml


def locate_pointer(text: str, pointer: str, yaml_syntax: bool = True) -> tuple[int, int] | None:
    """(line, column), 1-based, of the value at `pointer`; the nearest located ancestor if it is absent."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    if root is None:
        return None
    node: Any = root
    best = node.start_mark
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == part:
                    nxt = v
                    break
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            nxt = node.value[int(part)]
        if nxt is None:
            break
        node = nxt
        best = node.start_mark
    return best.line + 1, best.column + 1
