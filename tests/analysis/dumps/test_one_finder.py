"""One way to find an op's dumps and one way to lay a dump tensor out, shared by `dc`, `pt`, `ni` and the
overflow check: `dc NAME` never decodes another op without saying so, `dc FILE` keeps the note of the
file it chose, `ni` finds the numbered dumps (mapping.csv) that `pt` and `ls dump` find, and `pt` and `ni`
show the same shape and statistics of a tensor. Through the real CLI."""

from __future__ import annotations

import re
from pathlib import Path

from precision_tool.analysis.dumps.decode import record_mapping
from precision_tool.formats.ge.ge_graph import Graph, Model, Op, TensorDesc, attr_str, write_graph_text

from .conftest import DUMP_SUBDIR

PANEL_ROW = re.compile(r"^│ (shape|max|min|mean|zeros)\s+(.+?)\s*│$")


def _pt_facts(out: str) -> dict[str, str]:
    """shape, max, min, mean and the zero count from `pt`'s panel."""
    facts = {}
    for line in out.splitlines():
        match = PANEL_ROW.match(line.strip())
        if match:
            facts[match.group(1)] = match.group(2).strip()
    facts["shape"] = facts["shape"].replace(" ", "")
    facts["zeros"] = facts["zeros"].split()[0]
    return facts


def _ni_facts(out: str, label: str, run: str = "debug_0") -> tuple[str, dict[str, str]]:
    """(the tensor's heading line, shape/max/min/mean/zeros of `run`'s row) from `ni`'s Tensors table."""
    lines = out.splitlines()
    tensors = lines[next(n for n, line in enumerate(lines) if line.startswith("  Tensors")):]
    start = next(n for n, line in enumerate(tensors) if line.strip().startswith(f"{label} "))
    for line in tensors[start + 1:]:
        if not line.startswith("      "):  # the next tensor's heading: `run` has no row
            break
        if line.strip().startswith(run):
            shape, top, bottom, mean, _, _, zeros = line.split()[-7:]
            return tensors[start], {"shape": shape, "max": top, "min": bottom, "mean": mean, "zeros": zeros}
    raise AssertionError(f"no {run} row under {label}: {tensors}")


def test_dc_op_fused_away_is_refused_naming_the_op_that_took_it(cli, demo_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = cli("dc", "conv1/BiasAdd", "-o", str(out), data=demo_data)
    text = result.out + result.err
    assert result.status == 1, text
    assert len(text.strip().splitlines()) == 1, text
    assert text.startswith("dc: conv1/BiasAdd: no dump of op conv1_BiasAdd in debug_0 ("), text
    assert "the Build graph fused it into conv1/Conv2D" in text and "`dc conv1/Conv2D` decodes them" in text
    assert "BiasAddGrad" not in text and not out.exists()  # gradients/conv1/BiasAdd_grad is another op


def test_dc_part_of_a_name_says_which_ops_it_took(cli, dump_workspace, tmp_path: Path) -> None:
    root = dump_workspace(("net/conv1", "net/conv2", "head/dense"))
    result = cli("dc", "net/conv", "-o", str(tmp_path / "out"), data=root)
    assert result.status == 0, result.out + result.err
    assert ("no op is named net/conv; taking the 2 dump file(s) of the 2 op(s) whose name contains it: "
            "net_conv1, net_conv2") in result.out.splitlines(), result.out
    assert len(list((tmp_path / "out").glob("*.npy"))) == 6
    exact = cli("dc", "net/conv1", "-o", str(tmp_path / "exact"), data=root)
    assert exact.status == 0 and "no op is named" not in exact.out, exact.out + exact.err
    assert len(list((tmp_path / "exact").glob("*.npy"))) == 3


def test_dc_file_name_in_two_runs_decodes_one_and_says_which(cli, conv_dump, tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    made = []
    for run in (0, 1):
        folder = root / f"npu/debug_{run}/dump/20240613143502/0/ge_default_1/1/0"
        folder.mkdir(parents=True)
        made.append(conv_dump(folder, "net/conv1", seed=run))
    assert made[0].name == made[1].name
    result = cli("dc", made[0].name, "-o", str(tmp_path / "out"), data=root)
    assert result.status == 0, result.out + result.err
    lines = result.out.splitlines()
    assert (f"{made[0].name}: using the one in debug_0 ({made[0].parent}); also in {made[1].parent}"
            in lines), result.out
    assert lines[1].startswith(f"decoded 1 of 1 dump file(s): 3 .npy in {tmp_path / 'out'}"), result.out


def _numbered_workspace(tmp_path: Path, conv_dump) -> tuple[Path, Path, str]:
    """A run whose only dump carries a numbered name, its real name in mapping.csv (as msaccucmp leaves
    long names), and a Build graph naming the op's origin layouts (ND for input 0, as GE writes for a
    tensor whose framework layout it does not know)."""
    root = tmp_path / "precision_data"
    folder = root / DUMP_SUBDIR
    folder.mkdir(parents=True)
    real = conv_dump(folder, "net/conv1", channels=20)
    numbered = real.rename(folder / "1234567")
    record_mapping(folder, [(numbered.name, real.name)])

    def desc(layout: str, shape: tuple[int, ...], origin: str) -> TensorDesc:
        return TensorDesc(dtype="DT_FLOAT16", layout=layout, shape=shape, attrs={"origin_format": attr_str(origin)})

    op = Op(name="net/conv1", type="Conv2D", id=1, inputs=["x:0", "w:0"],
            input_descs=[desc("NC1HWC0", (2, 2, 5, 7, 16), "ND"), desc("FRACTAL_Z", (18, 1, 16, 16), "NCHW")],
            output_descs=[desc("NC1HWC0", (2, 2, 5, 7, 16), "NCHW")])
    graph_dir = root / "npu/debug_0/graph"
    graph_dir.mkdir(parents=True)
    write_graph_text(Model(path=Path("g.txt"), name="graph_1", graphs=[Graph(name="graph_1", ops=[op])]),
                     graph_dir / "ge_proto_00000001_graph_1_Build.txt")
    return root, numbered, real.name


def test_ni_finds_a_numbered_dump_through_mapping_csv_as_pt_and_ls_dump_do(cli, conv_dump, tmp_path: Path) -> None:
    root, numbered, real = _numbered_workspace(tmp_path, conv_dump)
    listing = cli("ls", "dump", data=root)
    assert listing.status == 0 and real in listing.out.split(), listing.out + listing.err
    shown = cli("pt", "net/conv1:output:0", data=root)
    assert shown.status == 0 and f"output:0 of {numbered} (mapping.csv: {real})" in shown.out, shown.out + shown.err
    info = cli("ni", "net/conv1", data=root)
    assert info.status == 0, info.out + info.err
    assert f"    debug_0: {numbered}" in info.out.splitlines(), info.out
    for tensor in ("output 0", "input 0"):  # (ND names no axes: both show the usual NCHW)
        heading, row = _ni_facts(info.out, tensor)
        assert "NCHW  (from NC1HWC0 [2,2,5,7,16], padding cut)" in heading, heading
        printed = cli("pt", f"net/conv1:{tensor.replace(' ', ':')}", data=root)
        assert row == _pt_facts(printed.out), (row, printed.out)


def test_pt_and_ni_show_the_same_tensor_for_fractal_nz_and_nc1hwc0(cli, demo_data: Path) -> None:
    for op, kind, index, device in (("fc1/MatMul", "input", 0, "FRACTAL_NZ [24,1,16,16]"),
                                    ("fc2/MatMul", "output", 0, "FRACTAL_NZ"),
                                    ("conv1/Conv2D", "output", 0, "NC1HWC0 [8,1,16,16,16]")):
        printed = cli("pt", f"{op}:{kind}:{index}", data=demo_data)
        info = cli("ni", op, data=demo_data)
        assert printed.status == 0 and info.status == 0, printed.out + printed.err + info.out + info.err
        heading, row = _ni_facts(info.out, f"{kind} {index}")
        assert row == _pt_facts(printed.out), (op, row, printed.out)
        layout = next(line for line in printed.out.splitlines() if line.startswith("layout "))
        assert f"layout {device}" in layout and f"from {device}" in heading, (layout, heading)
        shown_as = layout.split(" → ")[1].split()[0]  # the layout pt shows: ND, NHWC
        assert heading.split()[2:4] == ["FLOAT16", shown_as], (heading, layout)
