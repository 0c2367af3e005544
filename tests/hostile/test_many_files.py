"""A folder of very many tensors (issue 28, item 4: 1,000,000 in one folder, benchmarks/bench_hostile_big.py):
a command about one op reads the names of that op only, and `dc` on such a folder refuses in one line before
it writes anything. Here the folders hold a few thousand hard links; the lookups must find exactly what a
full scan finds.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from precision_tool.analysis.dumps.dump_files import list_dump_files, op_needle, scan_dump_folder
from precision_tool.formats.npu.npu_dump import dump_file_name
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump
from precision_tool.formats.tf.golden import golden_file_name, holds_golden, scan_golden_dir

T0_US = 1_718_260_502_000_000


def _dump_folder(root: Path, count: int) -> Path:
    """`count` dumps (hard links of one) of ops net/op<N>, plus net/op7 twice and a numbered file."""
    folder = root / "npu" / "debug_0" / "dump" / "20240613143502" / "0" / "g" / "1" / "0"
    folder.mkdir(parents=True)
    template = root / "template"
    write_dump(template, op_name="net/op", inputs=[TensorSpec(np.ones(4, np.float32))],
               outputs=[TensorSpec(np.ones(4, np.float32))])
    for number in range(count):
        os.link(template, folder / dump_file_name("Relu", f"net/op{number}", number, 0, T0_US + number))
    os.link(template, folder / dump_file_name("Relu", "net/op7", 7, 0, T0_US + 10 ** 6))
    os.link(template, folder / "123")
    (folder / "mapping.csv").write_text(f"123,{dump_file_name('Relu', 'net/op7', 8, 0, T0_US + 2 * 10 ** 6)}\n")
    return folder


def test_an_ops_dumps_are_found_from_its_names_alone(tmp_path: Path) -> None:
    folder = _dump_folder(tmp_path, 3000)
    everything = scan_dump_folder(folder)
    for op in ("net/op7", "net/op70", "net/op2999", "net/nothing"):
        wanted = [e for e in everything if e.name.op_name == op.replace("/", "_")]
        assert scan_dump_folder(folder, op_needle(op)) == wanted  # the numbered file (mapping.csv) included
    assert len(scan_dump_folder(folder, op_needle("net/op7"))) == 3
    runs = [(0, tmp_path / "npu" / "debug_0" / "dump" / "20240613143502")]
    listed = list_dump_files(runs, name="OP29")  # ls dump -n: a part of the name, any case
    assert sorted(r.op_name for r in listed) == sorted(e.name.op_name for e in everything if "op29" in e.name.op_name)
    assert len(listed) == 111


def test_an_ops_golden_tensors_are_found_from_its_names_alone(tmp_path: Path) -> None:
    folder = tmp_path / "golden"
    folder.mkdir()
    np.save(folder / "template.npy", np.ones(3, np.float32))
    for number in range(3000):
        os.link(folder / "template.npy", folder / golden_file_name(f"net/op{number}", number % 3, T0_US + number))
    os.link(folder / "template.npy", folder / golden_file_name("net/op7", 1, T0_US + 10 ** 6))  # a newer one
    everything = scan_golden_dir(folder)
    for prefixes in (("net_op7.",), ("net_op7.", "net_op70."), ("net_op29",), ("nothing.",)):
        assert scan_golden_dir(folder, prefixes) == {k: v for k, v in everything.items() if k.startswith(prefixes)}
    assert scan_golden_dir(folder, ("net_op7.",)) == {"net_op7.1": folder / golden_file_name("net/op7", 1,
                                                                                            T0_US + 10 ** 6)}
    assert holds_golden(folder) and not holds_golden(tmp_path / "nowhere")


def test_dc_refuses_a_folder_of_more_dumps_than_max_files(cli, tmp_path: Path) -> None:
    folder = _dump_folder(tmp_path / "ws", 40)
    out = tmp_path / "out"
    refused = cli("dc", str(folder), "--max-files", "20", "-o", str(out), data=tmp_path / "ws")
    assert refused.status == 1 and "Traceback" not in refused.out + refused.err
    assert (f"dc: {folder} holds 42 dump files, more than --max-files 20; decoding them all writes a .npy per "
            "tensor") in refused.out + refused.err
    assert f"`dc {folder} --max-files 42`" in refused.out + refused.err and not out.exists()
    done = cli("dc", str(folder), "--max-files", "42", "-o", str(out), data=tmp_path / "ws")
    assert done.status == 0 and "decoded 42 of 42 dump file(s)" in done.out, done.out + done.err
    bad = cli("dc", str(folder), "--max-files", "0", data=tmp_path / "ws")
    assert bad.status == 1 and "--max-files takes a number of files (1 or more), not 0" in bad.out + bad.err
