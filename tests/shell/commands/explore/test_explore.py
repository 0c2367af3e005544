"""`explore` on the demo workspace: the files it writes (checked against the Build graph and the result CSV,
read here independently), its one line without Model Explorer, and the page it serves opened in headless
Chromium: one node per Build-graph op, the first divergent op selected and coloured abnormal, a click shows
its metrics from the CSV, the mapping reveals a fused op's TF ops, no console error, nothing fetched from
another machine."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[4]
OP = "bn2/FusedBatchNormV3"  # the demo's planted kernel fault: its first divergent op
FUSED = "conv1/Conv2D"  # Conv2D + BiasAdd + Relu fused on the NPU side
ABNORMAL_RGB = "rgb(229, 57, 53)"  # #e53935, the cosine node data's colour at or below the threshold


def _build_graph_ops(workspace: Path) -> list[str]:
    from precision_tool.formats.ge.ge_graph import load_graph

    names: list[str] = []
    for path in sorted((workspace / "npu" / "debug_0" / "graph").glob("*_Build.txt")):
        for _, op in load_graph(path).iter_ops():
            if op.name not in names:
                names.append(op.name)
    return names


def _csv_outputs(workspace: Path, op: str) -> list[dict[str, str]]:
    newest = sorted((workspace / "temp" / "vector_compare").iterdir())[-1]
    path = next(p for p in newest.glob("result_*.csv") if "npu_vs_npu" not in p.name)
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        rows = [dict(zip(header, row)) for row in reader]
    return [r for r in rows if r["TensorIndex"].startswith(op + ":output:")]


def _newest_explore(workspace: Path) -> Path:
    return sorted((workspace / "temp" / "explore").iterdir())[-1]


def test_no_serve_writes_what_model_explorer_opens(explore_workspace):
    result = run_cli("explore", "--no-serve", data=explore_workspace)
    assert result.status == 0, result.out + result.err
    folder = _newest_explore(explore_workspace)
    assert f"files: {folder}" in result.out and f"first divergent op {OP}" in result.out
    npu = json.loads((folder / "npu_graph.json").read_text())
    nodes = npu["graphs"][0]["nodes"]
    assert [n["id"] for n in nodes] == _build_graph_ops(explore_workspace)
    by_id = {n["id"]: n for n in nodes}
    assert by_id[OP]["namespace"] == "bn2"  # the TF name scope of its original op
    cosine = json.loads((folder / "cosine.json").read_text())["NPU Build graph"]
    csv_cos = min(float(r["CosineSimilarity"]) for r in _csv_outputs(explore_workspace, OP))
    assert cosine["results"][OP]["value"] == pytest.approx(csv_cos, abs=1e-6)
    assert cosine["thresholds"][0]["value"] == 0.98  # vcs's COSINE_THRESHOLD
    verdict = json.loads((folder / "verdict.json").read_text())["NPU Build graph"]["results"]
    assert verdict[OP]["value"] == "kernel"
    mapping = json.loads((folder / "mapping.json").read_text())["mappingEntries"]
    fused = next(e for e in mapping if e["leftNodeIds"] == [FUSED])
    assert fused["rightNodeIds"] == ["conv1/Conv2D", "conv1/BiasAdd", "conv1/Relu"]
    tf = json.loads((folder / "tf_graph.json").read_text())["graphs"][0]["nodes"]
    assert {"conv1/Conv2D", "conv1/BiasAdd", "conv1/Relu", OP} <= {n["id"] for n in tf}
    assert not any(n["id"].startswith("__copy_") for n in tf)  # tfdbg's debug copies are taken out


def test_without_model_explorer_one_line_says_how_to_install(explore_workspace):
    # the interpreter as it is without the package: its finder refuses `model_explorer`
    code = ("import sys, importlib.abc\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'model_explorer':\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Hide())\n"
            "from precision_tool.shell.main import run\n"
            f"sys.argv = ['precision-tool', '--data', {str(explore_workspace)!r}, 'explore', '--no-open']\n"
            "sys.exit(run())\n")
    env = {**os.environ, "COLUMNS": "300", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    out = (proc.stdout + proc.stderr).strip()
    assert proc.returncode != 0
    assert "pip install ai-edge-model-explorer" in out and "Traceback" not in out
    assert len(out.splitlines()) == 1, out


def _open(browser, served):
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    # anything asked of another machine is recorded and refused
    page.route(lambda url: not url.startswith(("http://127.0.0.1", "data:", "blob:")),
               lambda route: (problems.append(f"fetched {route.request.url}"), route.abort()))
    page.goto(served.address)
    page.wait_for_selector("body[data-explore-ready=yes]", timeout=120_000)
    page.wait_for_function(f"() => window.me_test.renderers[0].selectedNodeId === {OP!r}", timeout=120_000)
    return context, page, problems


def _click_op(page, name: str) -> None:
    """Find the op with the NPU pane's search box (its result listed), then select it as a click on the canvas
    does: Model Explorer's selectNode with the navigation sync (a click at the node's place on the WebGL canvas
    was not made reliable here; a search's Alt+click selects without the sync)."""
    box = page.locator("input[placeholder*='Search nodes']").first
    box.fill(f"^{name}$")
    page.locator("io-tree").get_by_text(name, exact=True).first.wait_for(timeout=30_000)
    box.fill("")
    page.evaluate("""(id) => { const r = window.me_test.renderers[0];
        r.appService.selectNode(r.paneId, {nodeId: id, rendererId: r.rendererId, isGroupNode: false,
                                           triggerNavigationSync: true}); }""", name)
    page.wait_for_function(f"() => window.me_test.renderers[0].selectedNodeId === {name!r}", timeout=30_000)


def test_the_page_opens_on_the_first_divergent_op_with_the_tf_graph_beside_it(explore_browser, served,
                                                                               explore_workspace):
    explore_browser(lambda browser: _check_page(browser, served, explore_workspace))


def _check_page(browser, served, explore_workspace) -> None:
    # the address printed is short enough to copy: the server sends it on to the page with both graphs
    assert served.address.endswith("/") and "?" not in served.address, served.address
    context, page, problems = _open(browser, served)
    try:
        graphs = page.evaluate("""() => [0, 1].map(i => { const g = window.me_test.renderers[i].curModelGraph;
            return [g.id, g.nodes.filter(n => n.nodeType === 0).map(n => n.id)]; })""")
        assert graphs[0][0] == "NPU Build graph" and graphs[1][0] == "TensorFlow golden graph"
        assert sorted(graphs[0][1]) == sorted(_build_graph_ops(explore_workspace))  # one node per op
        # coloured abnormal: its cosine node data is drawn in the abnormal colour
        value = f"{min(float(r['CosineSimilarity']) for r in _csv_outputs(explore_workspace, OP)):.6f}"
        chips = page.locator(".has-bg-color").filter(has_text=value)  # the side panel's node-data values
        assert chips.count() >= 1
        assert {chips.nth(i).evaluate("e => getComputedStyle(e).backgroundColor") for i in range(chips.count())} \
            == {ABNORMAL_RGB}
        # the mapping: a fused NPU op reveals the TF ops it was made from
        _click_op(page, FUSED)
        page.wait_for_function("""() => { const h = window.me_test.renderers[1].syncNavigationRelatedNodesHighlights.highlights();
            return h && ['conv1/Conv2D', 'conv1/BiasAdd', 'conv1/Relu'].every(id => id in h); }""", timeout=30_000)
        # the find box (explore's own: Model Explorer's search is slow at 20,000 ops) reveals an op by name on
        # the NPU side, and the Sync its TF op
        page.fill("#precision-find input", "bn2/Relu")
        page.press("#precision-find input", "Enter")
        page.wait_for_function("() => window.me_test.renderers[0].selectedNodeId === 'bn2/Relu' && "
                               "'bn2/Relu' in window.me_test.renderers[1].syncNavigationRelatedNodesHighlights.highlights()"
                               " || window.me_test.renderers[1].selectedNodeId === 'bn2/Relu'", timeout=30_000)
        assert page.locator("#precision-find .found").inner_text() == "bn2/Relu (NPU graph)"
        # clicking the first divergent op shows its metrics as the CSV has them
        _click_op(page, OP)
        text = page.locator("body").inner_text()
        for row in _csv_outputs(explore_workspace, OP):
            assert row["CosineSimilarity"] in text and row["MaxAbsoluteError"] in text
        assert "kernel: on the NPU's own inputs" in text  # the replay verdict
        assert "network.py:" in text  # the source line
        # the server: files of the explore folder only; the version question answered here, not by PyPI
        outside = page.evaluate("async () => (await fetch('/api/v1/read_text_file?path=/etc/hostname')).json()")
        assert "content" not in outside and "not a file of this explore folder" in outside["error"]
        version = page.evaluate("async () => (await fetch('/api/v1/check_new_version')).json()")
        assert version["version"] == "" and version["runningVersion"]
        assert problems == []
    finally:
        context.close()


def test_the_report_links_to_the_newest_explore_folder(explore_workspace):
    assert run_cli("explore", "--no-serve", data=explore_workspace).status == 0
    folder = _newest_explore(explore_workspace)
    result = run_cli("report", data=explore_workspace)
    assert result.status == 0, result.out + result.err
    page = sorted((explore_workspace / "temp" / "report").glob("*/report.html"))[-1]
    assert f'href="../../explore/{folder.name}/"' in page.read_text(encoding="utf-8")


def test_a_wide_layer_is_split_into_groups_of_consecutive_children():
    """Model Explorer lays out every child of a layer it opens: in a big graph a stage of 1,000 blocks
    (benchmarks/big_workspace.py) gets a level of groups, each named after its first and last child; ids
    stay."""
    from precision_tool.analysis.explore.explore_graphs import split_wide_layers

    blocks = [{"id": f"net/stage/block{i}/add", "namespace": f"net/stage/block{i}"} for i in range(100)]
    loose = [{"id": f"op{i}", "namespace": ""} for i in range(25)]
    small = [{"id": "net/head/fc", "namespace": "net/head"}]
    nodes = split_wide_layers(blocks + loose + small, limit=10, grouped_from=100)
    spaces = {n["id"]: n["namespace"] for n in nodes}
    # the root holds 'net' and 25 ops: 26 children, in groups of 10 (net and op0..op8, then op9..op18, ...)
    assert spaces["op0"] == "net…op8" and spaces["op20"] == "op19…op24"
    assert spaces["net/stage/block0/add"] == "net…op8/net/stage/block0…block9/block0"
    assert spaces["net/stage/block57/add"] == "net…op8/net/stage/block50…block59/block57"
    assert len({s.split("/")[3] for s in spaces.values() if s.startswith("net…op8/net/stage/")}) == 10
    assert spaces["net/head/fc"] == "net…op8/net/head"
    assert [n["id"] for n in nodes] == [n["id"] for n in blocks + loose + small]
    narrow = [{"id": "net/head/fc", "namespace": "net/head"}]
    assert split_wide_layers(narrow, limit=10, grouped_from=1) == [{"id": "net/head/fc", "namespace": "net/head"}]
    # a small graph (the demo's 94 ops) keeps its plain layers, however wide
    few = [{"id": f"op{i}", "namespace": ""} for i in range(60)]
    assert {n["namespace"] for n in split_wide_layers(few)} == {""}
