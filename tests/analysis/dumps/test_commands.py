"""`dc`, `pt`, `ls dump` and dump-name completion, driven through the one-shot CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from precision_tool.formats.npu.layouts import from_device
from precision_tool.formats.npu.npu_dump import read_dump_header, read_tensor

DECODE_DIR = Path("temp/decode/dump_convert")


def dump_folder(root: Path) -> Path:
    return next((root / "npu" / "debug_0" / "dump").rglob("Conv2D.*")).parent


def test_dc_file_writes_every_tensor_as_the_dump_holds_it(cli, dump_workspace) -> None:
    root = dump_workspace()
    dump_path = sorted(dump_folder(root).iterdir())[0]
    result = cli("dc", str(dump_path), data=root)
    assert result.status == 0, result.err + result.out
    out = root / DECODE_DIR
    names = sorted(p.name for p in out.iterdir())
    assert names == [f"{dump_path.name}.input.0.npy", f"{dump_path.name}.input.1.npy", f"{dump_path.name}.output.0.npy"]
    dump = read_dump_header(dump_path)
    for tensor in dump.tensors:
        saved = np.load(out / f"{dump_path.name}.{tensor.kind}.{tensor.index}.npy")
        np.testing.assert_array_equal(saved, read_tensor(dump, tensor))


def test_dc_with_format_names_files_by_shape(cli, dump_workspace, tmp_path: Path) -> None:
    root = dump_workspace()
    result = cli("dc", "net/conv2", "-f", "nchw", "-o", str(tmp_path / "out"), data=root)
    assert result.status == 0, result.err + result.out
    dump_path = next(dump_folder(root).glob("Conv2D.net_conv2.*"))
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [f"{dump_path.name}.input.0.2x20x5x7.npy", f"{dump_path.name}.input.1.6x20x3x3.npy",
                     f"{dump_path.name}.output.0.2x20x5x7.npy"]
    dump = read_dump_header(dump_path)
    expected = from_device(read_tensor(dump, dump.inputs[1]), "FRACTAL_Z", "NCHW", dump.inputs[1].original_shape)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / names[1]), expected)


def test_dc_by_file_name_and_unknown_target(cli, dump_workspace) -> None:
    root = dump_workspace()
    dump_path = sorted(dump_folder(root).iterdir())[1]
    assert cli("dc", dump_path.name, "-f", "NHWC", data=root).status == 0
    assert (root / DECODE_DIR / f"{dump_path.name}.output.0.2x5x7x20.npy").is_file()
    missing = cli("dc", "no_such_op", data=root)
    assert missing.status == 1
    assert ("dc: no_such_op is not a file, a folder, or an op with dumps (`ls dump` lists the dump files and "
            f"their ops); looked in {dump_folder(root).parents[3]}") in missing.out + missing.err
    bad_format = cli("dc", str(dump_path), "-f", "NC1HWC0", data=root)
    assert bad_format.status == 1 and "is not one of" in bad_format.out + bad_format.err


def test_dc_folder_with_bad_files_decodes_the_good_and_lists_the_bad(cli, dump_workspace, bad_corpus,
                                                                     tmp_path: Path) -> None:
    root = dump_workspace()
    folder = dump_folder(root)
    bad = bad_corpus(folder)
    (folder / "notes.txt").write_text("not a dump")
    out = tmp_path / "decoded"
    result = cli("dc", str(folder), "-o", str(out), data=root)
    text = result.out + result.err
    assert result.status == 1
    for path, _fragment in bad.values():
        assert f"{path}: " in text
    # the two good dumps are decoded in full; of the bad ones nothing at all, and no temporary files remain
    good = [p.name for p in folder.glob("Conv2D.*")]
    written = sorted(p.name for p in out.iterdir() if p.suffix == ".npy")
    assert written == sorted(f"{g}.{k}" for g in good for k in ("input.0.npy", "input.1.npy", "output.0.npy"))
    assert "ignored 1 file(s) that are not dumps" in text
    # every failure is also kept in a file, beside the decoded data, one line per failure
    listed = (out / "decode_failures.tsv").read_text().splitlines()
    assert listed[0] == "file\ttensor\treason" and len(listed) == 1 + len(bad)
    assert {line.split("\t")[0] for line in listed[1:]} == {str(path) for path, _ in bad.values()}
    assert f"tab-separated): {out / 'decode_failures.tsv'}" in text


def test_dc_format_writes_tensors_without_that_layout_as_dumped_and_says_so(cli, tmp_path: Path) -> None:
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    path = tmp_path / "Add.x.1.1.1"
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    write_dump(path, op_name="x", inputs=[TensorSpec(values)], outputs=[])
    (tmp_path / "ws").mkdir()
    result = cli("dc", str(path), "-f", "NCHW", "-o", str(tmp_path / "o"), data=tmp_path / "ws")
    assert result.status == 0, result.out + result.err
    assert result.out.splitlines()[0] == f"decoded 1 of 1 dump file(s) as NCHW: 1 .npy in {tmp_path / 'o'}"
    assert ("1 tensor(s) of 1 file(s) written in their own layout, not converted (an ND tensor has no axis names; "
            "cannot convert it to NCHW), e.g. Add.x.1.1.1 input:0") in result.out.splitlines()
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "Add.x.1.1.1.input.0.3x4.npy"), values)


def test_pt_npy_and_dump_tensor(cli, dump_workspace, tmp_path: Path) -> None:
    root = dump_workspace()
    array = np.array([[1.0, np.nan], [np.inf, -2.0]], np.float32)
    np.save(tmp_path / "a.npy", array)
    result = cli("pt", str(tmp_path / "a.npy"), "-c", data=root)
    assert result.status == 0, result.err
    for expected in ("shape  [2, 2]", "dtype  float32", "max    1", "min    -2", "NaN    1", "Inf    1"):
        assert expected in result.out
    assert (tmp_path / "a.txt").read_text().splitlines()[0] == "# shape [2, 2] dtype float32"
    dump_path = sorted(dump_folder(root).iterdir())[0]
    by_option = cli("pt", "-n", f"{dump_path.name}:output:0", data=root)
    assert by_option.status == 0, by_option.err
    assert "shape  [2, 20, 5, 7]" in by_option.out
    assert "layout NC1HWC0 [2,2,5,7,16] → NCHW [2,20,5,7] (the usual host layout: no Build graph" in by_option.out
    # A whole dump file is its output:0, said as cp says it.
    whole = cli("pt", str(dump_path), data=root)
    assert whole.status == 0, whole.out + whole.err
    assert whole.out.splitlines()[0] == (f"{dump_path} is a dump file: showing its output:0 (name another as "
                                         f"{dump_path}:output:N or :input:N)")
    assert f"output:0 of {dump_path}" in whole.out.splitlines() and "shape  [2, 20, 5, 7]" in whole.out
    wrong_index = cli("pt", f"{dump_path}:output:3", data=root)
    assert wrong_index.status == 1 and (wrong_index.out + wrong_index.err).strip() == (
        f"pt: {dump_path}:output:3: {dump_path.name} has no output 3; it has 2 inputs and 1 output; its only "
        f"output is {dump_path}:output:0")


def test_pt_refuses_pickled_npy(cli, tmp_path: Path) -> None:
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    result = cli("pt", str(tmp_path / "objects.npy"), data=tmp_path)
    text = result.out + result.err
    assert result.status == 1
    assert f"{tmp_path / 'objects.npy'}: holds Python objects (needs pickle)" in text
    assert "Traceback" not in text


def test_ls_dump_lists_and_filters(cli, dump_workspace) -> None:
    root = dump_workspace(("net/conv1", "net/conv2", "head/matmul"))
    result = cli("ls", "dump", data=root)
    assert result.status == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"debug_0: 3 dump file(s) in {dump_folder(root).parents[3]}"
    assert lines[1] == "in  out  dump file (pt, cp and dc take this name)"
    assert lines[2] == " 2    1  Conv2D.net_conv1.1.1.1718260502000000"
    filtered = cli("ls", "dump", "-n", "CONV2", data=root)
    assert "net_conv2" in filtered.out and "net_conv1" not in filtered.out and "1 dump file(s)" in filtered.out
    assert "no NPU dump files match" in cli("ls", "dump", "-t", "MatMul", data=root).out


def test_ls_dump_without_dumps(cli, tmp_path: Path) -> None:
    result = cli("ls", "dump", data=tmp_path)
    assert result.status == 0 and "no NPU dumps" in result.out


def test_dump_file_completion(dump_workspace) -> None:
    from precision_tool.shell.command import CompletionRequest
    from precision_tool.shell.commands.dumps import complete_dump_files
    from precision_tool.workspace import Workspace

    root = dump_workspace()
    workspace = Workspace(root)
    names = complete_dump_files(CompletionRequest(["dc"], "Conv2D.net_conv", None, workspace))
    assert sorted(names) == sorted(p.name for p in dump_folder(root).iterdir())
    first = sorted(names)[0]
    tensors = complete_dump_files(CompletionRequest(["pt"], first + ":", None, workspace))
    assert tensors == [f"{first}:input:0", f"{first}:input:1", f"{first}:output:0"]
    assert complete_dump_files(CompletionRequest(["dc", "x", "-f"], "nh", "-f", workspace)) == ["NHWC"]
    # an op name (graph or dump spelling) completes to the tensors of its dump
    for op in ("net/conv2", "net_conv2"):
        assert complete_dump_files(CompletionRequest(["pt"], f"{op}:o", None, workspace)) == [f"{op}:output:0"]
    # and to its golden tensors (OP:N) for pt and cp, when tf/dump holds them; dc decodes dumps only
    (root / "tf" / "dump").mkdir(parents=True)
    np.save(root / "tf" / "dump" / "net_conv2.0.1718260501000000.npy", np.zeros(3, np.float32))
    np.save(root / "tf" / "dump" / "net_only_golden.0.1718260501000000.npy", np.zeros(3, np.float32))
    for command in ("pt", "cp"):
        assert complete_dump_files(CompletionRequest([command], "net/conv2:", None, workspace)) == [
            "net/conv2:input:0", "net/conv2:input:1", "net/conv2:output:0", "net/conv2:0"]
        assert complete_dump_files(CompletionRequest([command], "net/only_golden:", None, workspace)) == [
            "net/only_golden:0"]
    assert complete_dump_files(CompletionRequest(["dc"], "net/conv2:", None, workspace)) == [
        "net/conv2:input:0", "net/conv2:input:1", "net/conv2:output:0"]


def test_dc_empty_folder_and_unwritable_output(cli, tmp_path: Path, dump_workspace) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "x.npy").write_bytes(b"")
    result = cli("dc", str(tmp_path / "empty"), data=tmp_path / "ws")
    assert result.status == 1 and "holds no dump files (ignored 1 file(s)" in result.out + result.err
    root = dump_workspace()
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    result = cli("dc", "net/conv1", "-o", str(blocker / "sub"), data=root)
    text = result.out + result.err
    assert result.status == 1 and f"cannot write the output folder (-o DIR) {blocker / 'sub'}: " in text
    assert "choose another with `dc net/conv1 -o DIR`" in text and len(text.strip().splitlines()) == 1


def test_pt_on_an_npz_archive_under_its_own_name(tmp_path, cli):
    import numpy as np

    np.savez(tmp_path / "pair.npz", a=np.zeros(3), b=np.ones(2))
    result = cli("pt", str(tmp_path / "pair.npz"), data=tmp_path)
    assert result.status == 1
    assert f"pt: {tmp_path / 'pair.npz'} is an .npz archive (several arrays), not one tensor; unpack one array" \
        in result.out + result.err
