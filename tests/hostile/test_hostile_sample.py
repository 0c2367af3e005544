"""A representative sample of the hostile corpus (tests/hostile/corpus.py) through the real CLI.

Every run must end in a result or one line naming the file: no traceback, hang, memory blow-up, silent
exit 0 or unnamed file. The full corpus (1,000 files per kind) is benchmarks/hostile_corpus.py.
"""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from precision_tool.errors import FormatError
from precision_tool.formats.tf.golden import load_npy, read_npy_header
from precision_tool.formats.npu.npu_dump import (
    dump_file_name, read_dump_header,
)
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump
from precision_tool.formats.tf.tfdbg_v2 import _crc32c
from tests.hostile import corpus, harness

SAMPLE_STEP = 50  # of 1,000 per kind: 20 files each, spread over every mutation the generator makes


@pytest.fixture(scope="session")
def tf_seeds(tmp_path_factory) -> Path:
    """tfdbg v1 and v2 dumps from a real TensorFlow run (the tests/analysis/golden_extract scripts), made once per session."""
    return corpus.make_tf_seeds(tmp_path_factory.mktemp("hostile_seeds"))


def _bad(verdicts: list[harness.Verdict]) -> list[str]:
    return [f"{v.case} [{v.command}] {v.outcome}: {v.detail}" for v in verdicts if v.outcome != "RESULT"]


@pytest.mark.parametrize("kind", corpus.KINDS)
def test_sample_of_each_kind_ends_in_a_result_or_one_named_line(kind: str, tf_seeds: Path, tmp_path: Path) -> None:
    verdicts = harness.run_corpus([kind], tmp_path, tf_seeds, 1000, every=SAMPLE_STEP, timeout=60)
    assert len({v.case for v in verdicts}) == 1000 // SAMPLE_STEP
    assert not _bad(verdicts), "\n".join(_bad(verdicts))
    # the sample did reach the readers: some files were refused with a named line, some read
    assert any(v.command in ("pt", "ac", "tf_dump") for v in verdicts)


def test_corpus_is_seeded_and_large(tf_seeds: Path) -> None:
    for kind in corpus.KINDS:
        first = [(c.name, c.data) for c in corpus.generate(kind, tf_seeds, 30)]
        again = [(c.name, c.data) for c in corpus.generate(kind, tf_seeds, 30)]
        assert first == again
        mutations = {c.mutation.split("=")[0].split("@")[0] for c in corpus.generate(kind, tf_seeds, 1000)}
        assert len(mutations) >= 20, (kind, sorted(mutations))


# --- the harness itself tells the outcomes apart -----------------------------------------------------------
def test_harness_tells_the_outcomes_apart() -> None:
    run = harness.Run("pt", [])
    assert harness.classify(run, {"x.npy"}, None, 1, "", "unexpected error: ValueError: boom")[0] == "TRACEBACK"
    assert harness.classify(run, {"x.npy"}, None, 1, "", "MemoryError: Unable to allocate")[0] == "MEMORY"
    assert harness.classify(run, {"x.npy"}, None, 1, "", "y.npy: damaged")[0] == "UNNAMED"
    assert harness.classify(run, {"x.npy"}, None, 1, "", "/a/x.npy: damaged")[0] == "RESULT"
    assert harness.classify(run, {"x.npy"}, None, 0, "", "")[0] == "SILENT"
    assert harness.classify(run, {"x.npy"}, "HANG", -1, "", "")[0] == "HANG"


# --- the cases the issue measured, one-shot through the CLI ----------------------------------------------
def _one_line(result) -> str:
    lines = [line for line in (result.out + result.err).strip().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in result.err and "unexpected" not in result.err
    return lines[0]


def test_pt_refuses_a_declared_4_tib_npy_without_allocating_it(cli, tmp_path: Path) -> None:
    for label, elements in (("4TiB", corpus.TB4 // 4), ("10GB", corpus.GB10 // 4)):
        path = tmp_path / f"huge_{label}.npy"
        path.write_bytes(corpus.npy_with_header(f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({elements},), }}",
                                                b"\0" * 64))
        result = cli("pt", str(path), data=tmp_path)
        line = _one_line(result)
        assert result.status == 1 and line.startswith(f"{path}: ")
        assert f"shape [{elements}]" in line and "truncated" in line


def test_pt_and_cp_refuse_an_npz_and_a_cut_header_in_one_line(cli, tmp_path: Path) -> None:
    npz = tmp_path / "arrays.0.1700000000000000.npy"
    buffer = io.BytesIO()
    np.savez(buffer, a=np.arange(3.0))
    npz.write_bytes(buffer.getvalue())
    cut = tmp_path / "cut.npy"
    np.save(cut, np.arange(4.0))
    cut.write_bytes(cut.read_bytes()[:20])
    good = tmp_path / "good.npy"
    np.save(good, np.arange(3.0))
    for path, fragment in ((npz, ".npz archive"), (cut, "truncated")):
        for args in (("pt", str(path)), ("cp", str(path), str(good)), ("cp", str(good), str(path))):
            result = cli(*args, data=tmp_path)
            line = _one_line(result)
            assert result.status == 1 and str(path) in line and fragment in line, line


def test_a_non_numeric_golden_is_named_as_the_golden_file(cli, tmp_path: Path) -> None:
    golden = tmp_path / "tf" / "dump"
    golden.mkdir(parents=True)
    path = golden / "conv1_Relu.0.1700000000000000.npy"
    np.save(path, np.array(["a", "b"]))
    result = cli("cp", "conv1/Relu:0", str(path), data=tmp_path)
    line = _one_line(result)
    assert result.status == 1 and line.startswith(f"{path}: ") and "golden tensor" in line and "not numeric" in line


def test_ac_fails_when_the_only_opdebug_record_is_unreadable(cli, tmp_path: Path) -> None:
    folder = tmp_path / harness.OVERFLOW_DIR
    folder.mkdir(parents=True)
    corpus.opdebug_neighbour(folder)
    _, name, data = corpus.opdebug_seeds()[0]
    record = folder / name
    record.write_bytes(data[:60])  # the header says more than the file holds
    result = cli("ac", data=tmp_path)
    assert result.status == 1, result.out
    text = result.out + result.err
    assert f"overflow: 1 of 1 overflow record file(s) could not be read (named above): {record}" in text
    assert "Traceback" not in result.err and "unexpected" not in result.err


def _v2_folder(tf_seeds: Path, tmp_path: Path, traces: bytes) -> tuple[Path, Path]:
    folder = tmp_path / "tf" / "tf_debug"
    folder.mkdir(parents=True)
    for meta in corpus.v2_dir(tf_seeds).glob("*.metadata"):
        (folder / meta.name).write_bytes(meta.read_bytes())
    path = folder / corpus.v2_seeds(tf_seeds)[0][1]
    path.write_bytes(traces)
    return folder, path


def test_tf_dump_writes_nothing_from_a_damaged_v2_record_and_names_the_traces_file(cli, tf_seeds, tmp_path) -> None:
    _, _, data = corpus.v2_seeds(tf_seeds)[0]
    records = corpus.tfrecords(data)
    # flip a byte inside the 3rd record's data and keep its old checksum: only the data CRC can tell
    pos = sum(16 + len(r) for r in records[:2]) + 12 + len(records[2]) // 2
    damaged = bytearray(data)
    damaged[pos] ^= 0x40
    _, path = _v2_folder(tf_seeds, tmp_path, bytes(damaged))
    out = tmp_path / "golden"
    result = cli("tf_dump", "--run", "all", "--out", str(out), data=tmp_path)
    assert result.status == 1, result.out
    text = result.out + result.err
    assert f"{path}: the record at byte" in text and "data checksum" in text
    assert "Traceback" not in text and "unexpected" not in text
    written = sorted(p.name for p in out.glob("*.npy"))
    clean = tmp_path / "clean"
    _v2_folder(tf_seeds, clean, data)
    reference = cli("tf_dump", "--run", "all", "--out", str(clean / "golden"), data=clean)
    assert reference.status == 0, reference.out
    good = {p.name: p.read_bytes() for p in (clean / "golden").glob("*.npy")}
    assert set(written) < set(good)  # the records before the damage, byte for byte, and nothing after it
    assert all((out / name).read_bytes() == good[name] for name in written)


def test_tf_dump_names_a_v2_tensor_shorter_than_its_shape(cli, tf_seeds, tmp_path) -> None:
    from precision_tool.formats.tf.tf_protos import parse_debug_event

    _, _, data = corpus.v2_seeds(tf_seeds)[0]
    records = corpus.tfrecords(data)
    for index, record in enumerate(records):
        event = parse_debug_event(record)
        proto = event.graph_execution_trace.tensor_proto
        if event.HasField("graph_execution_trace") and len(proto.tensor_content) >= 8:
            proto.tensor_content = proto.tensor_content[:4]
            records[index] = event.SerializeToString()
            op = event.graph_execution_trace.op_name
            break
    _, path = _v2_folder(tf_seeds, tmp_path, b"".join(corpus.tfrecord(r) for r in records))
    result = cli("tf_dump", "--run", "all", "--out", str(tmp_path / "golden"), data=tmp_path)
    assert result.status == 1, result.out
    text = result.out + result.err
    assert f"{path}: {op}:" in text and "the file holds 4" in text and "Traceback" not in text
    assert "damaged files    1 (skipped, listed below)" in text


# --- readers: msaccucmp's own edge cases for big and nano dumps (facts, not code) ---------------------------
def _dump(tmp_path: Path, variant: str) -> Path:
    path = tmp_path / dump_file_name("Add", f"add_{variant}", 1, 0, 1_700_000_000_000_000)
    write_dump(path, op_name="add", inputs=[TensorSpec(np.arange(4, dtype=np.float32))],
               outputs=[TensorSpec(np.arange(6, dtype=np.float16).reshape(2, 3))], variant=variant)
    return path


@pytest.mark.parametrize("variant", ["protobuf", "nano"])
def test_big_and_nano_dump_edge_cases_are_one_line_naming_the_file(tmp_path: Path, variant: str) -> None:
    path = _dump(tmp_path, variant)
    data = path.read_bytes()
    (header_length,) = struct.unpack_from("<Q", data, 0)
    cases = {
        "shorter than the length field": (data[:3], "shorter than the 8-byte header length"),
        "header longer than the file": (struct.pack("<Q", len(data)) + data[8:], "runs past the end"),
        "truncated header": (data[:8 + header_length // 2], "runs past the end"),
        "size-sum mismatch (cut data)": (data[:-2], "truncated" if variant == "protobuf" else "is truncated"),
    }
    if variant == "nano":
        cases["size-sum mismatch (extra data)"] = (data + b"\0" * 4, "bytes after the last block")
    for label, (raw, fragment) in cases.items():
        path.write_bytes(raw)
        with pytest.raises(FormatError) as info:
            read_dump_header(path)
        message = str(info.value)
        assert str(path) in message and fragment in message and "\n" not in message, (label, message)


def test_nano_tags_nested_missing_or_unknown(tmp_path: Path) -> None:
    from precision_tool.formats.npu.nano_dump import NANO_MAGIC, TAG_INPUTS, TAG_OUTPUTS

    path = _dump(tmp_path, "nano")
    data = path.read_bytes()
    (n,) = struct.unpack_from("<Q", data, 0)
    header, blocks = data[8:8 + n], data[8 + n:]
    tlvs, pos = [], 8
    while pos < len(header):
        tag, length = struct.unpack_from("<II", header, pos)
        tlvs.append((tag, header[pos + 8:pos + 8 + length]))
        pos += 8 + length
    pack = lambda items: b"".join(struct.pack("<II", t, len(v)) + v for t, v in items)

    def write(items: list, body: bytes) -> None:
        head = struct.pack("<II", NANO_MAGIC, 1) + pack(items)
        path.write_bytes(struct.pack("<Q", len(head)) + head + body)

    inputs = dict(tlvs)[TAG_INPUTS]
    # the outputs tag missing, and only the input's block there: a file with no outputs, read as such
    write([(TAG_INPUTS, inputs)], blocks[:16])
    dump = read_dump_header(path)
    assert len(dump.inputs) == 1 and not dump.outputs
    # an unknown tag is skipped with a warning
    write([(9, b"\x01\x02"), *tlvs], blocks)
    assert any("unknown TLV tag 9" in w for w in read_dump_header(path).warnings)
    # the tensors nested inside an unknown tag: none is described, so the blocks are left over
    write([(9, pack(tlvs))], blocks)
    with pytest.raises(FormatError, match="bytes after the last block"):
        read_dump_header(path)
    # a tag nested inside the inputs tag: the input list does not parse
    write([(TAG_INPUTS, pack(tlvs)), (TAG_OUTPUTS, dict(tlvs)[TAG_OUTPUTS])], blocks)
    with pytest.raises(FormatError) as info:
        read_dump_header(path)
    assert str(path) in str(info.value)


# --- .npy reading and the CRC ---------------------------------------------------------------------------
@pytest.mark.parametrize("array", [np.arange(6.0).reshape(2, 3), np.asfortranarray(np.arange(12).reshape(3, 4)),
                                   np.float32(2.5), np.zeros((0, 3), np.float16), np.ones((2, 2), bool),
                                   np.array(["a", "bc"]), np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")])])
def test_load_npy_reads_what_numpy_writes(tmp_path: Path, array) -> None:
    path = tmp_path / "a.npy"
    np.save(path, array)
    loaded = load_npy(path)
    assert loaded.dtype == np.asarray(array).dtype and loaded.shape == np.shape(array)
    assert np.array_equal(loaded, np.load(path, allow_pickle=False))


def test_read_npy_header_refuses_objects_deep_nesting_and_huge_numbers(tmp_path: Path) -> None:
    path = tmp_path / "x.npy"
    cases = {
        "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }": "needs pickle",
        "(" * 5000 + ")" * 5000: "too deeply nested",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "9" * 5000 + ",), }": "does not parse",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "9" * 4000 + ",), }": "dimensions no array can have",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }": "truncated",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }": "impossible",
        "{'descr': 'bogus', 'fortran_order': False, 'shape': (2,), }": "not a numpy dtype",
        "{'descr': '<f4', 'fortran_order': 1, 'shape': (2,), }": "fortran_order",
        "__import__('os').system('true')": "does not parse",
    }
    for text, fragment in cases.items():
        path.write_bytes(corpus.npy_with_header(text, b"\0" * 64))
        with pytest.raises(FormatError) as info:
            read_npy_header(path)
        assert str(path) in str(info.value) and fragment in str(info.value), (text[:40], str(info.value))


@pytest.mark.parametrize("size", [0, 1, 9, 8191, 8192, 8193, 70_001])
def test_crc32c_matches_the_bitwise_definition(size: int) -> None:
    data = os.urandom(size)
    assert _crc32c(data) == corpus._crc32c(data)
    assert _crc32c(b"123456789") == 0xE3069283  # the standard check value of CRC-32C
