"""Stand-in of npu_bridge.estimator.npu.npu_scope.keep_dtype_scope: ops built inside get `_keep_dtype` = i:1."""

import contextlib


@contextlib.contextmanager
def keep_dtype_scope():
    from tensorflow.core.framework import attr_value_pb2
    from tensorflow.python.framework import ops

    with ops.get_default_graph()._attr_scope({"_keep_dtype": attr_value_pb2.AttrValue(i=1)}):
        yield
