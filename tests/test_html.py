"""The HTML report: layout invariants of the SVG picture, self-containment, escaping, the
`optimize --html` and `ci --html` pages, and a real render in headless Chromium."""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fuseopt.cli.main import _register, cli
from fuseopt.io.load import load_graph, load_text, parse_text
from fuseopt.ir.graph import Graph
from fuseopt.passes.options import Options
from fuseopt.passes.pipeline import optimize
from fuseopt.plan import Plan
from fuseopt.report.escaping import html_text
from fuseopt.report.html import graph_svg, kernel_source, plan_page

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CHROMIUM = "/usr/bin/chromium"
SVG = "{http://www.w3.org/2000/svg}"
_register()


def _rect(el: ET.Element) -> tuple[int, int, int, int]:
    return tuple(int(el.get(k, "0")) for k in ("x", "y", "width", "height"))  # type: ignore[return-value]


def _expected_edges(g: Graph, plan: Plan) -> set[tuple[str, str, str]]:
    """What the picture must draw, from the graph and plan alone: (from box, to box, buffer)."""
    where = {m: k.name for k in plan.kernels for m in k.nodes}
    writer = g.writer()
    out = set()
    for n in g.nodes:
        for b in n.read_buffers():
            w = writer.get(b)
            if w is None:
                out.add((f"i-{b}", f"k-{where[n.name]}", b))
            elif where[w] != where[n.name]:
                out.add((f"k-{where[w]}", f"k-{where[n.name]}", b))
            elif w != n.name:
                out.add((f"n-{w}", f"n-{n.name}", b))
    out |= {(f"k-{where[writer[b.name]]}", f"o-{b.name}", b.name) for b in g.outputs if b.name in writer}
    return out


def _path_points(d: str) -> list[tuple[float, float]]:
    """Points along an SVG path of M, L and C commands (what the picture draws)."""
    toks = re.findall(r"[MLC]|-?[0-9.]+", d)
    pts: list[tuple[float, float]] = []
    i = 0
    while i < len(toks):
        cmd, i = toks[i], i + 1
        n = {"M": 1, "L": 1, "C": 3}[cmd]
        xy = [(float(toks[i + 2 * j]), float(toks[i + 2 * j + 1])) for j in range(n)]
        i += 2 * n
        if cmd == "M":
            pts.append(xy[0])
            continue
        p0 = pts[-1]
        ctrl = [p0, *xy] if cmd == "C" else [p0, p0, xy[0], xy[0]]
        for k in range(1, 41):
            t = k / 40
            r = 1 - t
            pts.append(
                tuple(  # type: ignore[arg-type]
                    r**3 * ctrl[0][c]
                    + 3 * r * r * t * ctrl[1][c]
                    + 3 * r * t * t * ctrl[2][c]
                    + t**3 * ctrl[3][c]
                    for c in (0, 1)
                )
            )
    return pts


@pytest.mark.parametrize(
    ("sample", "opts"),
    [
        ("layernorm_t.yaml", Options(max_fusion_size=2)),
        ("jit_aot.yaml", Options(max_fusion_size=1)),
        ("apbt.yaml", Options(loop_order=False)),
        ("softmax_bias_t.yaml", Options()),
        ("captured/attention_block.json", Options()),
        ("captured/mlp_block.json", Options()),
        ("extern_mm.yaml", Options()),
    ],
)
def test_picture_layout_invariants(sample: str, opts: Options) -> None:
    """One cluster per kernel holding its nodes; every box disjoint from the others of its level;
    every plan edge drawn once, from box border to box border, labelled with its buffer, never
    entering a box it does not join; graph inputs and outputs drawn."""
    g = load_graph(SAMPLES / sample)
    stage = optimize(g, opts)
    svg = ET.fromstring(graph_svg(g, stage.plan, "g0", stage.graph))
    kernels = [k for k in svg.findall(f"{SVG}g[@class]") if "kernel" in (k.get("class") or "").split()]
    assert [k.get("data-kernel") for k in kernels] == [k.name for k in stage.plan.kernels]
    boxes: dict[str, tuple[int, int, int, int]] = {}
    level: dict[str, str] = {}
    for el in svg.iter(f"{SVG}rect"):
        if el.get("data-box"):
            boxes[el.get("id", "")] = _rect(el)
            level[el.get("id", "")] = el.get("data-in", "")
    for kg, kernel in zip(kernels, stage.plan.kernels, strict=True):
        kid = f"g0-k-{kernel.name}"
        kx, ky, kw, kh = boxes[kid]
        nodes = kg.findall(f"{SVG}g[@data-node]")
        assert [n.get("data-node") for n in nodes] == list(kernel.nodes)
        for bid, where in level.items():
            if where == kid:
                x, y, w, h = boxes[bid]
                assert kx <= x and x + w <= kx + kw and ky <= y and y + h <= ky + kh
    ids = list(boxes)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if level[a] == level[b]:
                (ax, ay, aw, ah), (bx, by, bw, bh) = boxes[a], boxes[b]
                assert ax + aw <= bx or bx + bw <= ax or ay + ah <= by or by + bh <= ay, (a, b)
    inputs = {b for n in g.nodes for b in n.read_buffers() if b not in g.writer()}
    assert {i for i in ids if i.startswith("g0-i-")} == {f"g0-i-{b}" for b in inputs}
    assert {i for i in ids if i.startswith("g0-o-")} == {f"g0-o-{b.name}" for b in g.outputs}
    drawn = []
    for e in svg.iter(f"{SVG}path"):
        if "edge" not in (e.get("class") or "").split():
            continue
        src, dst, buf = e.get("data-from", ""), e.get("data-to", ""), e.get("data-buffer", "")
        drawn.append((src[3:], dst[3:], buf))
        label = svg.find(f".//*[@id='{e.get('data-label')}']/..")
        assert label is not None and buf in re.split(r"[^A-Za-z0-9_]+", "".join(label.itertext()))
        pts = _path_points(e.get("d", ""))
        (sx, sy, sw, sh), (tx, ty, tw, _) = boxes[src], boxes[dst]
        assert sx <= pts[0][0] <= sx + sw and pts[0][1] == sy + sh  # leaves the bottom border
        assert tx <= pts[-1][0] <= tx + tw and pts[-1][1] == ty  # the arrow ends on the top border
        for bid, (x, y, w, h) in boxes.items():
            if bid in (e.get("data-in"), e.get("data-label")):
                continue
            assert not any(x + 1 < px < x + w - 1 and y + 1 < py < y + h - 1 for px, py in pts), (
                src,
                dst,
                bid,
            )
    assert sorted(drawn) == sorted(_expected_edges(g, stage.plan))


def test_picture_does_not_depend_on_the_input_order() -> None:
    """Buffers and nodes listed in another (valid) order: the same plan, the same picture."""
    doc = parse_text((SAMPLES / "captured" / "mlp_block.json").read_text(), "mlp_block.json")
    g = load_text(json.dumps(doc), "a.json")
    doc["buffers"] = dict(reversed(list(doc["buffers"].items())))
    g2 = load_text(json.dumps(doc), "b.json")
    s1, s2 = optimize(g, Options()), optimize(g2, Options())
    assert s1.plan.kernels == s2.plan.kernels
    assert graph_svg(g, s1.plan, "g0", s1.graph) == graph_svg(g2, s2.plan, "g0", s2.graph)


def test_kernel_details_show_nodes_reasons_and_source() -> None:
    g = load_graph(SAMPLES / "captured" / "mlp_block.json")
    stage = optimize(g, Options())
    page = plan_page("mlp_block.json", g, stage)
    blocks = dict(re.findall(r'<div class="kdetail" data-detail="(k\d+)" hidden>(.*?)</div>', page, re.S))
    assert list(blocks) == [k.name for k in stage.plan.kernels]
    for k in stage.plan.kernels:
        body = blocks[k.name]
        for m in k.nodes:
            assert f"<td><code>{m}</code></td>" in body
        assert f"{k.bytes:,} bytes moved" in body
    # k2 (op5) sits between two extern kernels: both refusals are shown with their reasons.
    k2 = blocks[stage.plan.kernel_of("op5").name]
    assert k2.count('<span class="reason">extern</span>') == 2 and "(neighbour)" in k2
    assert "def triton_poi" in k2 and "# in call():" in k2
    k1 = blocks[stage.plan.kernel_of("op4").name]  # an extern call: its torch call, no Triton kernel
    assert "torch.mm(" in k1 and "@triton.jit" not in k1
    for r in stage.plan.rejected:
        ka, kb = stage.plan.kernel_of(r.pair[0]).name, stage.plan.kernel_of(r.pair[1]).name
        if ka != kb:
            assert html_text(r.detail) in blocks[ka] and html_text(r.detail) in blocks[kb]


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
    rows = len(re.findall(r'<tr data-kernel="', page))  # the kernels table: one row per planned kernel
    assert rows >= 3 and page.count('class="kernel kind-') == rows and "<svg" in page
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


def _verdict(dom: str) -> dict[str, Any]:
    m = re.search(r'<pre id="layout-verdict">(.*?)</pre>', dom, re.S)
    assert m is not None, "the page's #verify check did not run"
    return json.loads(html.unescape(m.group(1)))  # type: ignore[no-any-return]


def _synthetic_200() -> Graph:
    from tests.fixtures.graphgen import make_graph

    return load_text(json.dumps(make_graph(200, seed=3)), "synthetic_200.json")


@needs_chromium
@pytest.mark.parametrize("which", ["sample", "captured", pytest.param("synthetic", marks=pytest.mark.slow)])
def test_chromium_draws_every_edge_and_no_box_overlaps(tmp_path: Path, which: str) -> None:
    """As the browser draws it (getBBox of every box, the path of every edge): no two boxes of a
    level meet, no edge enters a box it does not join, every plan edge is drawn from border to
    border with its buffer's label. A screenshot of each is kept in tmp_path."""
    g = {
        "sample": lambda: load_graph(SAMPLES / "softmax_bias_t.yaml"),
        "captured": lambda: load_graph(SAMPLES / "captured" / "attention_block.json"),
        "synthetic": _synthetic_200,
    }[which]()
    stage = optimize(g, Options())
    page = tmp_path / "plan.html"
    page.write_text(plan_page(f"{which}.json", g, stage), encoding="utf-8")
    shot = tmp_path / f"{which}.png"
    run = _chromium(tmp_path, page.as_uri() + "#verify", "--dump-dom", f"--screenshot={shot}")
    assert run.returncode == 0, run.stderr[-2000:]
    assert _png_size(shot) == (1400, 1000) and shot.stat().st_size > 20_000
    (v,) = _verdict(run.stdout)["graphs"]
    assert v["overlaps"] == [] and v["crossings"] == [] and v["outside"] == []
    n_io = len({b for n in g.nodes for b in n.read_buffers() if b not in g.writer()}) + len(g.outputs)
    kinds = [k for _, k in v["boxes"]]
    assert kinds.count("kernel") == len(stage.plan.kernels) and kinds.count("node") == len(g.nodes)
    assert kinds.count("input") + kinds.count("output") == n_io
    drawn = {(e["from"][3:], e["to"][3:], e["buffer"]) for e in v["edges"]}
    assert len(drawn) == len(v["edges"]) and drawn == _expected_edges(g, stage.plan)
    assert all(e["label"] and e["starts"] and e["ends"] and e["length"] > 1 for e in v["edges"])


@needs_chromium
def test_chromium_self_check_catches_a_broken_picture_and_a_click_shows_a_kernel(tmp_path: Path) -> None:
    g = load_graph(SAMPLES / "captured" / "mlp_block.json")
    stage = optimize(g, Options())
    page = plan_page("mlp_block.json", g, stage)
    # Move one kernel box onto another and one edge through a box: the page must say so.
    k0 = re.search(r'id="g0-k-k0" data-box="kernel" x="(\d+)" y="(\d+)"', page)
    assert k0 is not None
    broken = re.sub(r'(id="g0-k-k1" data-box="kernel") x="\d+" y="\d+"', rf'\1 x="{k0[1]}" y="{k0[2]}"', page)
    broken = re.sub(
        r'(data-to="g0-k-k2"[^>]*? d=")M', rf"\1M{int(k0[1]) + 20},{int(k0[2]) + 20} L", broken, count=1
    )
    bad = tmp_path / "broken.html"
    bad.write_text(broken, encoding="utf-8")
    (v,) = _verdict(_chromium(tmp_path, bad.as_uri() + "#verify", "--dump-dom").stdout)["graphs"]
    assert ["g0-k-k0", "g0-k-k1"] in v["overlaps"] and any(c[3] == "g0-k-k0" for c in v["crossings"])
    assert not all(e["starts"] for e in v["edges"])
    # #kernel=NAME opens that kernel's details, as a click on its box does.
    good = tmp_path / "plan.html"
    good.write_text(page, encoding="utf-8")
    k = stage.plan.kernel_of("op5").name
    dom = _chromium(tmp_path, good.as_uri() + f"#kernel={k}", "--dump-dom").stdout
    shown = re.findall(r'<div class="kdetail" data-detail="(k\d+)"( hidden="")?>', dom)
    assert [name for name, hidden in shown if not hidden] == [k]
    assert re.search(rf'<g class="kernel kind-pointwise sel[^"]*" id="g0-{k}"', dom)


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
