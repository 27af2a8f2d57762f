"""tests/filecheck.py: every directive, holding and failing, and what its errors say."""

from __future__ import annotations

import pytest

from tests.filecheck import FileCheckError, check, compile_pattern, parse

KERNEL = """\
@triton.jit
def triton_poi_fused_add_0(x_ptr, out_ptr, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    tmp0 = tl.load(x_ptr + xindex, xmask, other=0.0)
    tmp1 = tmp0 + 1.0
    tl.store(out_ptr + xindex, tmp1, xmask)


@triton.jit
def triton_red_fused_sum_1(x_ptr, out_ptr, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        tmp0 = tl.load(x_ptr + (64 * xindex + r0_index))
        tmp1 = tl.load(x_ptr + (64 * xindex + r0_index + 1))
    tmp2 = tl.sum(_acc0, 1)[:, None]
    tl.store(out_ptr + xindex, tmp2)
"""


def fails(checks: str, text: str = KERNEL) -> str:
    with pytest.raises(FileCheckError) as e:
        check(checks, text, checks_name="k.check", input_name="k.py")
    return str(e.value)


def test_check_finds_the_pattern_after_the_previous_match() -> None:
    check("# CHECK: tl.load(x_ptr\n# CHECK: tl.store(out_ptr", KERNEL)
    check("# CHECK: xindex = xoffset\n# CHECK: xindex", KERNEL)  # on the same line, after it
    msg = fails("# CHECK: tl.store(out_ptr\n# CHECK: xmask = xindex")  # before, not after
    assert msg.splitlines()[0] == "k.check:2: error: CHECK: expected string not found in input"
    assert "  CHECK: xmask = xindex" in msg and "k.py:8: scanning from here" in msg
    assert ">     8 |     tl.store(out_ptr + xindex, tmp1, xmask)" in msg


def test_check_next_is_on_the_following_line() -> None:
    check("# CHECK: xoffset =\n# CHECK-NEXT: xindex =\n# CHECK-NEXT: xmask =", KERNEL)
    msg = fails("# CHECK: xoffset =\n# CHECK-NEXT: tl.load(x_ptr")
    assert (
        "k.check:2: error: CHECK-NEXT: found, but not on the line after the previous match (input line 3)"
        in msg
    )
    assert "k.py:6: found here" in msg
    msg = fails("# CHECK: xoffset =\n# CHECK-NEXT: xmask")  # skips a line
    assert "k.py:5: found here" in msg
    msg = fails("# CHECK: xindex = \n# CHECK-NEXT: tl.arange")  # on the same line
    assert "on the same line as the previous match" in msg


def test_check_same_stays_on_the_line() -> None:
    check("# CHECK: tl.load(\n# CHECK-SAME: xmask\n# CHECK-SAME: other=0.0)", KERNEL)
    msg = fails("# CHECK: tl.load(\n# CHECK-SAME: tmp1")  # only on a later line
    assert "k.check:2: error: CHECK-SAME: expected string not found on the line of the previous match" in msg
    fails("# CHECK: other=0.0\n# CHECK-SAME: xmask")  # before the match on its line


def test_check_not_holds_between_the_matches_around_it() -> None:
    check("# CHECK: xindex = \n# CHECK-NOT: tl.store\n# CHECK: tl.load(", KERNEL)
    check("# CHECK: tl.store(\n# CHECK-NOT: tl.load(\n# CHECK-LABEL: def triton_red", KERNEL)
    msg = fails("# CHECK: xoffset\n# CHECK-NOT: xmask\n# CHECK: tl.store(")
    assert (
        "k.check:2: error: CHECK-NOT: excluded string found in input" in msg and "k.py:5: found here" in msg
    )
    fails("# CHECK: tl.store(out_ptr + xindex,\n# CHECK-NOT: tmp2")  # up to the end, from within a line
    fails("# CHECK-NOT: tl.sum")  # no match before it: from the start


def test_check_label_cuts_the_input_into_blocks() -> None:
    two = "# CHECK-LABEL: def triton_poi_fused_add_0(\n# CHECK: tl.load(x_ptr + xindex\n"
    two += "# CHECK-LABEL: def triton_red_fused_sum_1(\n# CHECK: tl.load(x_ptr + (64 * xindex"
    check(two, KERNEL)
    # a check finds no match beyond its block, even where one exists in the next
    msg = fails("# CHECK-LABEL: def triton_poi_fused_add_0(\n# CHECK: tl.sum(\n# CHECK-LABEL: def triton_red")
    assert "k.check:2: error: CHECK: expected string not found in input" in msg
    # labels are matched first: a missing one is reported before the checks of the block before it
    msg = fails("# CHECK-LABEL: def triton_poi\n# CHECK: nothing like this\n# CHECK-LABEL: def triton_mm")
    assert msg.splitlines()[0] == "k.check:3: error: CHECK-LABEL: label not found in input"
    # the checks before the first label match before it; a CHECK-NEXT follows a label's line
    check("# CHECK: def triton_poi\n# CHECK-LABEL: def triton_red\n# CHECK-NEXT: xoffset", KERNEL)
    fails("# CHECK: R0_BLOCK\n# CHECK-LABEL: def triton_red")


def test_check_count_matches_n_times_in_a_row() -> None:
    check("# CHECK-COUNT-2: tl.load(x_ptr + (64 * xindex", KERNEL)
    check("# CHECK-COUNT-3: tl.load(", KERNEL)
    msg = fails("# CHECK-COUNT-4: tl.load(")
    assert "k.check:1: error: CHECK-COUNT-4: expected string not found in input" in msg
    check("# CHECK-COUNT-2: tl.load(x_ptr + (64\n# CHECK-SAME: + 1))", KERNEL)  # the second match's line
    # a CHECK-NOT after it rules out more
    msg = fails("# CHECK-LABEL: def triton_red\n# CHECK-COUNT-1: tl.load(\n# CHECK-NOT: tl.load(")
    assert "k.check:3: error: CHECK-NOT: excluded string found in input" in msg


def test_patterns_literal_text_whitespace_and_regex() -> None:
    check("# CHECK: tl.load(x_ptr +   xindex,xmask".replace(",", ", "), KERNEL)  # any whitespace run
    check("# CHECK: tmp0    =    tl.load", KERNEL)
    check("# CHECK: xindex = xoffset\ttl".replace("\t", " + "), KERNEL)
    check("# CHECK: range(0, r0_numel, R0_BLOCK):", KERNEL)  # ( ) , . are literal
    check("# CHECK: tl.load(x_ptr + (64 * xindex + r0_index{{( \\+ [0-9]+)?}}))", KERNEL)
    check("# CHECK: tl.store(out_ptr + xindex, {{tmp[0-9]+}}){{$}}", KERNEL)
    fails("# CHECK: tl.store(out_ptr + xindex, {{tmp[0-9]+}}){{$}}\n# CHECK: {{^}}tmp1")
    fails("# CHECK: tl.load(x_ptr + (xindex")  # a literal `(` is not a group
    assert compile_pattern("a{{b{2}}}c").fullmatch("abbc")  # a regex's own braces before `}}`
    assert compile_pattern("  x  y ").pattern == "x y"


def test_malformed_check_files_are_errors_with_their_line() -> None:
    for checks, what in [
        ("nothing to check", "k.check: error: no check directives found"),
        ("# CHECK:", "k.check:1: error: CHECK has an empty pattern"),
        ("# CHECK-NEXT: a", "k.check:1: error: CHECK-NEXT without a match before it to follow"),
        ("# CHECK-NOT: a\n# CHECK-SAME: b", "k.check:2: error: CHECK-SAME without a match before it"),
        ("# CHECK: a\n# CHECK-DAG: b", "k.check:2: error: unsupported directive CHECK-DAG"),
        ("# CHECK-COUNT-0: a", "k.check:1: error: CHECK-COUNT needs a positive count"),
        ("# CHECK: {{a", "k.check:1: error: '{{' without '}}'"),
        ("# CHECK: {{(}}", "k.check:1: error: bad regex {{(}}"),
    ]:
        with pytest.raises(FileCheckError, match="^" + __import__("re").escape(what)):
            parse(checks, "k.check")


def test_directives_anywhere_on_a_line() -> None:
    d = parse("; CHECK-LABEL: f(\nplain comment, CHECK words without a colon\n// CHECK-COUNT-3: x\n")
    assert [(x.name, x.text, x.line) for x in d] == [("CHECK-LABEL", "f(", 1), ("CHECK-COUNT-3", "x", 3)]
    assert parse("# XCHECK: a\n# CHECK: b")[0].text == "b"  # a directive is a word of its own


def test_the_closest_line_is_shown_when_no_line_matches() -> None:
    msg = fails("# CHECK: tl.sum(_acc0, 0)[:, None]")
    assert "k.py:18: the closest line" in msg and ">    18 |     tmp2 = tl.sum(_acc0, 1)[:, None]" in msg
