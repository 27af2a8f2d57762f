"""Words for people: counts with the right noun form, flags and lists in plain English.

>>> plural(1, "kernel"), plural(3, "kernel"), plural(2, "candidate graph")
('1 kernel', '3 kernels', '2 candidate graphs')
"""

from __future__ import annotations

# Nouns whose plural is not the singular plus "s".
_IRREGULAR = {"index": "indices", "process": "processes", "match": "matches", "mismatch": "mismatches"}


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n noun`, the noun's last word in the plural unless n is 1 (`many` overrides the form)."""
    if n == 1:
        return f"{n} {noun}"
    if many is None:
        head, _, last = noun.rpartition(" ")
        many = (head + " " if head else "") + _IRREGULAR.get(last, last + "s")
    return f"{n} {many}"


def on_off(flag: object) -> str:
    return "on" if flag else "off"


def order_difference(reference: list[str] | tuple[str, ...], variant: list[str] | tuple[str, ...]) -> str:
    """Where a permuted order first leaves the reference order, in one short line:
    `3 names; first difference at position 2: c (the graph has b)`."""
    n = len(variant)
    first = next((i for i, (a, b) in enumerate(zip(reference, variant, strict=False)) if a != b), None)
    if first is None:
        if len(reference) == n:
            return f"{plural(n, 'name')}, the graph's order"
        first = min(len(reference), n)
    ours = variant[first] if first < n else "(end)"
    theirs = reference[first] if first < len(reference) else "(end)"
    return f"{plural(n, 'name')}; first difference at position {first}: {ours} (the graph has {theirs})"


# Characters of one line of a finding printed for people (the JSON report has the whole line).
LINE_CHARS = 300


def clip(line: str, limit: int = LINE_CHARS) -> str:
    """The line, or its first `limit` characters and how many more there are."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]} ... ({len(line) - limit:,} more characters in the JSON report)"
