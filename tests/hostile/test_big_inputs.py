"""Input too big, or silently wrong, at scale (issue 28, item 4): a big tensor is streamed or refused in one
line before it is read; a tfdbg record TensorFlow refuses and a dump whose header length is 0 are named as
damaged. The inputs are small or sparse (holes cost no disk); the 10 GB figures are
benchmarks/bench_hostile_big.py's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.dumps.tensor_stats import tensor_stats
from tests.hostile.big_inputs import NC1HWC0, sparse_dump, sparse_npy, tfdbg_overfull_record, zero_header_dump

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ("npu", "debug_0", "dump", "20240613143502", "0", "g", "1", "0")


def _limited_cli(root: Path, *args: str, address_space: int) -> subprocess.CompletedProcess:
    """The one-shot CLI under an address-space limit (RLIMIT_AS): what a smaller machine leaves it."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    return subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(root), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, preexec_fn=limit, timeout=300)


# --- statistics a step at a time ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int64", "bool", "complex64",
                                   "bfloat16"])
def test_statistics_in_steps_equal_the_one_shot_ones(dtype: str) -> None:
    import ml_dtypes

    rng = np.random.default_rng(4)
    values = rng.standard_normal(5000) * 40
    if dtype == "complex64":
        values = values + 1j * rng.standard_normal(5000)
    if dtype in ("float16", "float32", "float64", "complex64", "bfloat16"):
        values[[7, 900]] = np.nan
        values[[11, 4001]] = [np.inf, -np.inf]
    values[100:300] = 0
    array = values.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype).reshape(50, 100)
    whole = tensor_stats(array)
    for chunk in (64, 999, 4999):
        stepped = tensor_stats(array, chunk=chunk)
        assert (stepped.max, stepped.min, stepped.nan_count, stepped.inf_count, stepped.zero_count, stepped.shape,
                stepped.dtype, stepped.count, stepped.magnitudes) == (
            whole.max, whole.min, whole.nan_count, whole.inf_count, whole.zero_count, whole.shape, whole.dtype,
            whole.count, whole.magnitudes)
        assert stepped.mean == pytest.approx(whole.mean, rel=1e-12)


def test_a_mapped_tensor_is_read_from_its_file_in_steps(tmp_path: Path) -> None:
    """A big .npy is memory-mapped: its statistics read the file (pread), views and Fortran order included."""
    rng = np.random.default_rng(5)
    array = rng.standard_normal((300, 7)).astype(np.float32)
    array[3, 2], array[5, 1], array[9] = np.nan, np.inf, 0
    np.save(tmp_path / "a.npy", array)
    np.save(tmp_path / "f.npy", np.asfortranarray(array))
    mapped = np.load(tmp_path / "a.npy", mmap_mode="r")
    fortran = np.load(tmp_path / "f.npy", mmap_mode="r")
    for view in (mapped, mapped[5:], mapped[100:200], mapped[:, 2:], mapped.T, fortran, fortran[:, 3:]):
        stepped, whole = tensor_stats(view, chunk=64), tensor_stats(np.array(view))
        assert (stepped.max, stepped.min, stepped.nan_count, stepped.inf_count, stepped.zero_count) == (
            whole.max, whole.min, whole.nan_count, whole.inf_count, whole.zero_count)
        assert stepped.mean == pytest.approx(whole.mean, rel=1e-12)


# --- big tensors through the commands -------------------------------------------------------------------------
def test_a_big_plain_dump_and_npy_are_streamed_in_bounded_memory(tmp_path: Path) -> None:
    """A 128 MiB float16 ND dump and a 512 MiB .npy under a 1.5 GB address-space limit: pt shows their
    statistics (mapped, read in steps); dc -f writes the ND tensor as dumped, copied by the kernel."""
    root = tmp_path / "ws"
    dump = sparse_dump(root.joinpath(*FOLDER), "net/big/Relu", 1 << 26)
    npy = sparse_npy(root / "tf" / "dump" / "net_big_Relu.0.1718260502000001.npy", 1 << 27)
    limit = 1_500_000_000
    shown = _limited_cli(root, "pt", f"{dump}:output:0", address_space=limit)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "zeros  67108864 of 67108864" in " ".join(shown.stdout.split("│"))
    shown = _limited_cli(root, "pt", str(npy), address_space=limit)
    assert shown.returncode == 0 and "134217728 of 134217728" in shown.stdout, shown.stdout + shown.stderr
    decoded = _limited_cli(root, "dc", dump.name, "-f", "NCHW", "-o", str(tmp_path / "out"), address_space=limit)
    assert decoded.returncode == 0, decoded.stdout + decoded.stderr
    written = tmp_path / "out" / f"{dump.name}.output.0.67108864.npy"
    assert "an ND tensor has no axis names" in decoded.stdout and written.stat().st_size == 128 + (1 << 27)
    assert np.load(written, mmap_mode="r").shape == (1 << 26,)


def test_a_big_tensor_that_must_be_held_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """An NC1HWC0 dump of 2 GiB must be held to be converted (about three times over): under a 2.5 GB
    address-space limit pt and dc -f say so in one line naming the file (ni and the overflow check read it
    through the same shown_tensor)."""
    root = tmp_path / "ws"
    n, c1, h, w = 256, 64, 32, 128  # x C0 16: 2**30 float16 values
    dump = sparse_dump(root.joinpath(*FOLDER), "net/conv/Conv2D", n * c1 * h * w * 16, fmt=NC1HWC0,
                       shape=(n, c1, h, w, 16), original_shape=(n, c1 * 16, h, w), op_type="Conv2D")
    limit = 2_500_000_000
    for args in (("pt", f"{dump}:output:0"), ("dc", str(dump), "-f", "NCHW", "-o", str(tmp_path / "out"))):
        done = _limited_cli(root, *args, address_space=limit)
        text = done.stdout + done.stderr
        assert done.returncode == 1 and "Traceback" not in text, text
        line = next(line for line in text.splitlines() if "needs about" in line)
        assert str(dump) in line and "output:0 (2.0 GiB of FLOAT16" in line and "is free" in line, line
        assert "dc FILE" in line or "without -f" in line, line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*.npy"))


# --- the two silent cases ------------------------------------------------------------------------------------
def test_tf_dump_names_a_record_tensorflow_refuses(cli, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    good, bad = tfdbg_overfull_record(root / "tf" / "tf_debug" / "run_1718260502000000_0")
    result = cli("tf_dump", data=root)
    text = " ".join(result.out.split())
    assert result.status == 1 and "Traceback" not in text
    assert f"{bad}: float32 tensor of shape [3] lists 5 values for its 3 element(s); TensorFlow refuses it" in text
    assert sorted(p.name for p in (root / "tf" / "dump").iterdir()) == ["good_Relu.0.1718260502000000.npy"]


def test_tensorflow_itself_refuses_that_record(tmp_path: Path) -> None:
    """The oracle: TensorFlow's own make_ndarray refuses the record tf_dump now names (a child process, so
    this one never imports TensorFlow)."""
    pytest.importorskip("tensorflow", reason="TensorFlow is the oracle here")
    _, bad = tfdbg_overfull_record(tmp_path / "run_1718260502000000_0")
    code = ("import sys, tensorflow as tf\n"
            "from tensorflow.core.util import event_pb2\n"
            "event = event_pb2.Event.FromString(open(sys.argv[1], 'rb').read())\n"
            "try:\n    tf.make_ndarray(event.summary.value[0].tensor)\nexcept ValueError:\n    print('refused')\n"
            "else:\n    print('read')\n")
    done = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.stdout.strip().splitlines()[-1] == "refused", done.stdout + done.stderr


def test_complex_values_come_in_pairs() -> None:
    from precision_tool.formats.tf.tf_protos import decode_tensor_proto, message_class

    proto = message_class("TensorProto")()
    proto.dtype = 8  # DT_COMPLEX64
    proto.tensor_shape.dim.add().size = 2
    proto.scomplex_val.extend([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="lists 3 numbers: complex values come in"):
        decode_tensor_proto(proto)
    proto.scomplex_val.append(4.0)
    assert decode_tensor_proto(proto).array.tolist() == [1 + 2j, 3 + 4j]


def test_dc_and_ls_dump_name_a_dump_whose_header_length_is_0(cli, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    path = zero_header_dump(root.joinpath(*FOLDER))
    result = cli("dc", path.name, "-o", str(tmp_path / "out"), data=root)
    assert result.status == 1 and "decoded 0 of 1 dump file(s)" in result.out, result.out
    assert (f"{path}: header length 0: the dump has no header, so the 1580 byte(s) after it cannot be read as "
            "tensors") in result.out
    assert not list((tmp_path / "out").glob("*.npy"))
    listed = cli("ls", "dump", data=root)
    assert listed.status == 1 and f"{path}: header length 0" in listed.out
