"""The HTML report: layout invariants of the SVG picture, self-containment, escaping, the
`optimize --html` and `ci --html` pages, and a real render in headless Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from fuseopt.cli.main import _register, cli
from fuseopt.io.load import load_graph, load_text, parse_text
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.report.html import graph_svg, kernel_source, plan_page

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CHROMIUM = "/usr/bin/chromium"
SVG = "{http://www.w3.org/2000/svg}"
_register()


def _rect(el: ET.Element) -> tuple[int, int, int, int]:
    return tuple(int(el.get(k, "0")) for k in ("x", "y", "width", "height"))  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("sample", "opts"),
    [
        ("layernorm_t.yaml", Options(max_fusion_size=2)),
        ("jit_aot.yaml", Options(max_fusion_size=1)),
        ("apbt.yaml", Options(loop_order=False)),
        ("softmax_bias_t.yaml", Options()),
    ],
)
def test_picture_layout_invariants(sample: str, opts: Options) -> None:
    """Every node inside its kernel's box, boxes disjoint, every edge pointing down, one cluster per kernel."""
    g = load_graph(SAMPLES / sample)
    stage = optimize(g, opts)
    svg = ET.fromstring(graph_svg(g, stage.plan, "g0", stage.graph))
    kernels = svg.findall(f"{SVG}g[@class]")
    kernels = [k for k in kernels if "kernel" in (k.get("class") or "").split()]
    assert [k.get("data-kernel") for k in kernels] == [k.name for k in stage.plan.kernels]
    boxes = {}
    node_boxes = {}
    for kg, kernel in zip(kernels, stage.plan.kernels, strict=True):
        rect = kg.find(f"{SVG}rect")
        assert rect is not None
        kx, ky, kw, kh = boxes[kernel.name] = _rect(rect)
        nodes = kg.findall(f"{SVG}g[@data-node]")
        assert [n.get("data-node") for n in nodes] == list(kernel.nodes)
        for n in nodes:
            r = n.find(f"{SVG}rect")
            assert r is not None
            x, y, w, h = node_boxes[n.get("data-node")] = _rect(r)
            assert kx <= x and x + w <= kx + kw and ky <= y and y + h <= ky + kh
    items = list(boxes.values())
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            assert a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1]
    edges = svg.findall(f"{SVG}g[@class='edges']/{SVG}path")
    writer = g.writer()
    expected = {(writer[b], n.name) for n in g.nodes for b in n.read_buffers() if b in writer}
    assert {(e.get("data-from"), e.get("data-to")) for e in edges} == expected
    for e in edges:
        nums = [int(v) for v in re.findall(r"-?\d+", e.get("d", ""))]
        assert nums[-1] > nums[1]  # ends below where it starts
        src, dst = node_boxes[e.get("data-from")], node_boxes[e.get("data-to")]
        assert src[1] + src[3] <= dst[1]


def test_page_is_self_contained_deterministic_and_escaped(tmp_path: Path) -> None:
    text = (
        (SAMPLES / "apbt.yaml")
        .read_text()
        .replace("description: |\n", "description: |\n  <script>alert('x')</script> & <b>bold</b>\n", 1)
    )
    g = load_text(text, "apbt.yaml")
    stage = optimize(g, Options())
    page = plan_page("apbt.yaml", g, stage)
    assert page == plan_page("apbt.yaml", g, stage)
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp;" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # Nothing is fetched: no external scripts, styles, images or fonts.
    assert not re.search(r"<(link|img|iframe|object|embed)\b", page)
    assert not re.search(r"\b(src|href)\s*=\s*[\"']?(https?:|//)", page)
    assert "@import" not in page and "url(http" not in page
    assert page.count("<script>") == 1 and page.count("<style>") == 1
    for table in ("kernels", "decisions", "reorders"):
        assert f'<table class="{table}">' in page
    no_order = plan_page("apbt.yaml", g, optimize(g, Options(loop_order=False)))
    assert '<table class="rejected">' in no_order and "index_mismatch" in no_order


def test_triton_source_is_shown_when_codegen_is_available() -> None:
    g = load_graph(SAMPLES / "apbt.yaml")
    stage = optimize(g, Options())
    src, why = kernel_source(stage.graph, stage.plan)
    page = plan_page("apbt.yaml", g, stage)
    if src is None:
        assert why in page
    else:
        assert "@triton.jit" in src and "@triton.jit" in page and "kernels.py (" in page


def test_optimize_html_option(tmp_path: Path) -> None:
    out = tmp_path / "report" / "plan.html"
    res = CliRunner().invoke(cli, ["optimize", str(SAMPLES / "jit_aot.yaml"), "--html", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert page.count('class="kernel kind-') == 3 and "<svg" in page
    assert oct(out.stat().st_mode & 0o777) != oct(0o600)  # an ordinary file, not a temp file's mode
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: fuseopt-graph/1\nname: b\nbuffers: {}\nnodes: []\nextra: 1\n")
    res = CliRunner().invoke(cli, ["optimize", str(bad), "--html", str(tmp_path / "bad.html")])
    assert res.exit_code == 2 and not (tmp_path / "bad.html").exists()


# -- a real browser ---------------------------------------------------------------------------------
def _chromium(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        "--window-size=1400,1000",
        *extra,
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    return int(w), int(h)


needs_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason=f"{CHROMIUM} is missing: apt-get install -y chromium (the HTML is still checked without a browser)",
)


@needs_chromium
def test_chromium_renders_the_optimize_page(tmp_path: Path) -> None:
    page = tmp_path / "plan.html"
    res = CliRunner().invoke(
        cli, ["optimize", str(SAMPLES / "layernorm_t.yaml"), "--max-fusion-size", "2", "--html", str(page)]
    )
    assert res.exit_code == 0
    url = page.resolve().as_uri()
    dom = _chromium(tmp_path, url, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-ready="1"' in html  # the inline script ran
    assert re.search(r"<svg[^>]*class=\"dag\"", html)
    assert len(re.findall(r'<g class="kernel kind-reduction"', html)) == 2  # the two kernels as clusters
    assert len(re.findall(r'<g class="node" data-node=', html)) == 3
    assert len(re.findall(r'<tr data-kernel="k\d+"', html)) == 2
    for table in ("kernels", "decisions", "rejected"):
        assert f'<table class="{table}">' in html
    shot = tmp_path / "plan.png"  # kept in tmp_path as the test's artifact
    run = _chromium(tmp_path, url, f"--screenshot={shot}")
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    assert _png_size(shot) == (1400, 1000) and shot.stat().st_size > 20_000


@needs_chromium
def test_chromium_renders_the_ci_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    for name in ("apbt.yaml", "jit_aot.yaml"):
        shutil.copy(SAMPLES / name, graphs / name)
    (graphs / "broken.yaml").write_text("format: fuseopt-graph/1\nname: broken\nbuffers: {}\nnodes: [1]\n")
    res = CliRunner().invoke(cli, ["ci", "graphs", "--jobs", "1", "--html", "ci.html"])
    assert res.exit_code == 1
    dom = _chromium(tmp_path, (tmp_path / "ci.html").as_uri(), "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-ready="1"' in html and '<table class="summary">' in html
    assert len(re.findall(r'<section class="graph"', html)) == 3
    assert len(re.findall(r'<svg[^>]*class="dag"', html)) == 2  # none for the broken graph
    assert 'data-graph="broken" data-status="failed"' in html and "graphs/broken.yaml:4:" in html
    shot = tmp_path / "ci.png"
    run = _chromium(tmp_path, (tmp_path / "ci.html").as_uri(), f"--screenshot={shot}")
    assert run.returncode == 0 and _png_size(shot) == (1400, 1000)


# -- input text is text (issue #21) -----------------------------------------------------------------
HOSTILE = "</script><script>alert(1)</script>\"'><img src=x onerror=alert(2)>&amp;[/bold]\u2028<!--"


def _no_markup_from(page: str, text: str) -> None:
    """`text` is on the page only escaped: the page keeps its one script and style block, and no
    element or attribute comes from the input."""
    assert text not in page
    assert page.count("<script>") == page.count("</script>") == 1 and page.count("<style>") == 1
    assert "<img" not in page and "<!--" not in page and "\u2028" not in page


def test_hostile_text_is_escaped_on_the_plan_page() -> None:
    from fuseopt.report.escaping import html_text

    doc = parse_text((SAMPLES / "apbt.yaml").read_text(), "apbt.yaml")
    doc["description"] = HOSTILE
    g = load_text(json.dumps(doc), "apbt.json")
    page = plan_page(f"graphs/{HOSTILE}.yaml", g, optimize(g, Options()))
    _no_markup_from(page, HOSTILE)
    assert html_text(HOSTILE) in page and "&lt;/script&gt;&lt;script&gt;alert(1)" in page
    assert "\\u2028" in page  # shown as its escape
    assert "CSS.escape(k)" in page  # kernel names reach selectors only escaped


def test_hostile_paths_and_messages_are_escaped_on_the_ci_page(tmp_path: Path) -> None:
    """A graph file under a folder named with markup, one whose error quotes the input, and a
    file name that is not UTF-8 (a surrogate in Python): the page is written, all of it escaped."""
    folder = tmp_path / "corpus" / HOSTILE.replace("/", "_")
    folder.mkdir(parents=True)
    shutil.copy(SAMPLES / "apbt.yaml", folder / "apbt.yaml")
    bad = (
        (SAMPLES / "apbt.yaml").read_text().replace("2 * x[2048*i0 + i1]", "2 * x[2048*i0 + i1] <img src=x>")
    )
    (folder / "bad.yaml").write_text(bad)
    with contextlib.suppress(OSError, UnicodeEncodeError):  # where the file system takes the name
        (folder / os.fsdecode(b"odd\xff.yaml")).write_text((SAMPLES / "apbt.yaml").read_text())
    out = tmp_path / "ci.html"
    res = CliRunner().invoke(
        cli,
        ["ci", str(tmp_path / "corpus"), "--jobs", "1", "--permutations", "1", "--html", str(out)]
        + ["--junit", str(tmp_path / "j.xml"), "--sarif", str(tmp_path / "s.sarif"), "--github"],
    )
    assert res.exit_code == 1, res.output  # bad.yaml is invalid
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)
    assert "::error file=" in res.output and (tmp_path / "j.xml").exists() and (tmp_path / "s.sarif").exists()
    page = out.read_text(encoding="utf-8")
    _no_markup_from(page, HOSTILE.replace("/", "_"))
    assert "&lt;img src=x&gt;" in page  # the error's excerpt of the input, escaped
    assert page.count('<section class="graph"') >= 2
