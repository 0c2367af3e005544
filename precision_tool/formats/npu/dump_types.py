"""The numbers in NPU dump headers: data types (`OutputDataType`) and layouts (`Format`), and how each data
type's elements are stored and decoded (formats.md §2). Shared by the dump readers (npu_dump.py,
nano_dump.py), the writer (npu_dump_write.py) and the layout converters.
"""

from __future__ import annotations

from enum import IntEnum
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


class DataType(IntEnum):
    """`OutputDataType` numbers as written in dump headers."""

    UNDEFINED = 0
    FLOAT = 1
    FLOAT16 = 2
    INT8 = 3
    UINT8 = 4
    INT16 = 5
    UINT16 = 6
    INT32 = 7
    INT64 = 8
    UINT32 = 9
    UINT64 = 10
    BOOL = 11
    DOUBLE = 12
    STRING = 13
    DUAL_SUB_INT8 = 14
    DUAL_SUB_UINT8 = 15
    COMPLEX64 = 16
    COMPLEX128 = 17
    QINT8 = 18
    QINT16 = 19
    QINT32 = 20
    QUINT8 = 21
    QUINT16 = 22
    RESOURCE = 23
    STRING_REF = 24
    DUAL = 25
    BF16 = 27
    UINT1 = 29
    COMPLEX32 = 32
    HIFLOAT8 = 33
    FLOAT8_E5M2 = 34
    FLOAT8_E4M3FN = 35
    FLOAT8_E8M0 = 36
    FLOAT6_E3M2 = 37
    FLOAT6_E2M3 = 38
    FLOAT4_E2M1 = 39
    FLOAT4_E1M2 = 40


class Format(IntEnum):
    """`OutputFormat` numbers (the low byte of a header's format field)."""

    NCHW = 0
    NHWC = 1
    ND = 2
    NC1HWC0 = 3
    FRACTAL_Z = 4
    NC1C0HWPAD = 5
    NHWC1C0 = 6
    FSR_NCHW = 7
    FRACTAL_DECONV = 8
    C1HWNC0 = 9
    FRACTAL_DECONV_TRANSPOSE = 10
    FRACTAL_DECONV_SP_STRIDE_TRANS = 11
    NC1HWC0_C04 = 12
    FRACTAL_Z_C04 = 13
    CHWN = 14
    FRACTAL_DECONV_SP_STRIDE8_TRANS = 15
    HWCN = 16
    NC1KHKWHWC0 = 17
    BN_WEIGHT = 18
    FILTER_HWCK = 19
    HASHTABLE_LOOKUP_LOOKUPS = 20
    HASHTABLE_LOOKUP_KEYS = 21
    HASHTABLE_LOOKUP_VALUE = 22
    HASHTABLE_LOOKUP_OUTPUT = 23
    HASHTABLE_LOOKUP_HITS = 24
    C1HWNCoC0 = 25
    MD = 26
    NDHWC = 27
    FRACTAL_ZZ = 28
    FRACTAL_NZ = 29
    NCDHW = 30
    DHWCN = 31
    NDC1HWC0 = 32
    FRACTAL_Z_3D = 33
    CN = 34
    NC = 35
    DHWNC = 36
    FRACTAL_Z_3D_TRANSPOSE = 37
    FRACTAL_ZN_LSTM = 38
    FRACTAL_Z_G = 39
    RESERVED = 40
    ALL = 41
    NULL = 42
    ND_RNN_BIAS = 43
    FRACTAL_ZN_RNN = 44
    YUV = 45
    YUV_A = 46
    MAX = 255


def data_type_name(data_type: int) -> str:
    try:
        return DataType(data_type).name
    except ValueError:
        return f"unknown data type {data_type}"


def format_name(fmt: int) -> str:
    name = _FORMAT_NAMES.get(fmt)
    if name is None:
        try:
            name = Format(fmt).name
        except ValueError:
            name = f"unknown format {fmt}"
        if len(_FORMAT_NAMES) < 4096:
            _FORMAT_NAMES[fmt] = name
    return name


_FORMAT_NAMES: dict[int, str] = {}
"""Format(fmt).name, once per format number (an Enum call per tensor cost more than its comparison)."""


# Types stored with one numpy (or ml_dtypes) element per element; the rest are special or unsupported.
_PLAIN_DTYPES: dict[int, str] = {
    DataType.UNDEFINED: "int8",
    DataType.FLOAT: "float32",
    DataType.FLOAT16: "float16",
    DataType.INT8: "int8",
    DataType.UINT8: "uint8",
    DataType.INT16: "int16",
    DataType.UINT16: "uint16",
    DataType.INT32: "int32",
    DataType.INT64: "int64",
    DataType.UINT32: "uint32",
    DataType.UINT64: "uint64",
    DataType.BOOL: "bool",
    DataType.DOUBLE: "float64",
    DataType.DUAL_SUB_INT8: "int8",
    DataType.DUAL_SUB_UINT8: "uint8",
    DataType.COMPLEX64: "complex64",
    DataType.COMPLEX128: "complex128",
    DataType.QINT8: "int8",
    DataType.QINT16: "int16",
    DataType.QINT32: "int32",
    DataType.QUINT8: "uint8",
    DataType.QUINT16: "uint16",
    DataType.RESOURCE: "int64",
}
# .npy `descr` of the plain types, so raw copies need no numpy import (little-endian, as dumps are).
_NPY_DESCR: dict[int, tuple[str, int]] = {
    number: (("|" if name in ("int8", "uint8", "bool") else "<")
             + {"float32": "f4", "float16": "f2", "int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2",
                "int32": "i4", "int64": "i8", "uint32": "u4", "uint64": "u8", "bool": "b1", "float64": "f8",
                "complex64": "c8", "complex128": "c16"}[name],
             {"float32": 4, "float16": 2, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8,
              "uint32": 4, "uint64": 8, "bool": 1, "float64": 8, "complex64": 8, "complex128": 16}[name])
    for number, name in _PLAIN_DTYPES.items()
}


def npy_descr_of(data_type: int) -> tuple[str, int] | None:
    """(.npy descr, itemsize) when the type is stored exactly as numpy stores it, else None."""
    return _NPY_DESCR.get(data_type)


_ML_DTYPES: dict[int, str] = {
    DataType.BF16: "bfloat16",
    DataType.FLOAT8_E5M2: "float8_e5m2",
    DataType.FLOAT8_E4M3FN: "float8_e4m3fn",
    DataType.FLOAT8_E8M0: "float8_e8m0fnu",
}
_SUB_BYTE = ("the element format is known but how the runtime packs these sub-byte elements into a dump "
             "block (elements per byte, nibble/bit order) is documented nowhere this tool could check; "
             "decode the block yourself from the raw bytes")
_UNSUPPORTED = {
    DataType.STRING: "strings have no fixed element size",
    DataType.STRING_REF: "string references have no fixed element size",
    DataType.DUAL: "DUAL tensors have no documented element layout",
    DataType.FLOAT6_E3M2: _SUB_BYTE,
    DataType.FLOAT6_E2M3: _SUB_BYTE,
    DataType.FLOAT4_E2M1: _SUB_BYTE,
    DataType.FLOAT4_E1M2: _SUB_BYTE,
}


def plain_type_name(data_type: int) -> str | None:
    """The numpy type a data type is stored as, element for element (its bytes read as they are); None for
    the types that need decoding (bits, bf16/fp8 and hifloat8, complex32)."""
    return _PLAIN_DTYPES.get(data_type)


@lru_cache(maxsize=None)
def numpy_dtype_of(data_type: int) -> "np.dtype[Any]":
    """The numpy dtype one element of `data_type` decodes to (uint1 → uint8 0/1, complex32 → complex64).

    Raises ValueError for types that have no element decoder.
    """
    import numpy as np

    if data_type in _PLAIN_DTYPES:
        return np.dtype(_PLAIN_DTYPES[data_type])
    if data_type in _ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, _ML_DTYPES[data_type]))
    if data_type == DataType.UINT1:
        return np.dtype("uint8")
    if data_type == DataType.COMPLEX32:
        return np.dtype("complex64")
    if data_type == DataType.HIFLOAT8:
        return np.dtype("float32")  # decoded by hand (formats/npu/hifloat8.py)
    if data_type in _UNSUPPORTED:
        raise ValueError(f"{data_type_name(data_type)}: {_UNSUPPORTED[data_type]}")
    raise ValueError(f"unknown data type number {data_type}")


def stored_bytes(data_type: int, count: int) -> int:
    """Bytes that `count` elements of `data_type` occupy in a dump block."""
    if data_type == DataType.UINT1:
        return (count + 7) // 8
    if data_type == DataType.COMPLEX32:
        return count * 4
    if data_type == DataType.HIFLOAT8:
        return count
    return count * numpy_dtype_of(data_type).itemsize


def is_known_format(fmt: int) -> bool:
    return fmt in Format._value2member_map_
