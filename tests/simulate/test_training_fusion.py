"""The fusion passes of a training graph (`training_fusion`, the batch norm split of `npu_fusion`), on small
real TF1 graphs: which NPU ops they make, named and attributed as GE names them, and that the simulated
kernels of those ops compute what TensorFlow computes (float32 lists: to rounding; mixed precision:
to float16's precision)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytestmark = pytest.mark.tf


def _derive(build, training: bool = True, mode: str = "force_fp32"):
    """(derived graph, simulated values, session, feed dict, TF tensors by name) of the step a graph
    `build(v1)` makes, simulated as `train -d sim` simulates it; `build` returns (feeds by placeholder,
    [loss, train op])."""
    import tensorflow as tf

    from precision_tool.simulate.mix_precision import MixPolicy
    from precision_tool.simulate.sim_step import simulate_session

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(3)
        feeds, fetches = build(v1)
        init = v1.global_variables_initializer()
    session = v1.Session(graph=graph)
    session.run(init)
    derived, computed = simulate_session(graph, session, feeds, [t.name for t in fetches],
                                         policy=MixPolicy(mode=mode), graph_name="g", training_passes=training)
    feed_dict = {graph.get_tensor_by_name(name): value for name, value in feeds.items()}
    everything = {f"{op.name}:{n}": out for op in graph.get_operations() for n, out in enumerate(op.outputs)
                  if out.dtype != tf.resource}
    return derived, computed, session, feed_dict, everything


def _check_outputs(derived, computed, session, feed_dict, everything, types, tolerance: float) -> int:
    """Each output of the ops of `types` that stands for a TF tensor agrees with it; how many were checked."""
    checked = 0
    for op in derived.ops:
        if op.type not in types:
            continue
        for slot, tensor in enumerate(op.outputs):
            if tensor.origin_name is None:
                continue
            golden = session.run(everything[f"{tensor.origin_name}:{tensor.origin_index}"], feed_dict=feed_dict)
            ours = computed[(op.name, slot)].astype(np.float64).reshape(golden.shape)
            scale = max(float(np.abs(golden).max()), 1e-6)
            assert float(np.abs(ours - golden).max()) / scale < tolerance, (op.name, slot, tensor.origin_name)
            checked += 1
    return checked


def _conv_bn_step(v1):
    import tensorflow as tf

    x = v1.placeholder(tf.float32, [4, 8, 8, 16], name="images")
    kernel = v1.get_variable("kernel", [3, 3, 16, 16], initializer=v1.initializers.glorot_uniform(seed=1))
    gamma = v1.get_variable("gamma", [16], initializer=v1.ones_initializer())
    beta = v1.get_variable("beta", [16], initializer=v1.zeros_initializer())
    with v1.variable_scope("block"):
        h = tf.nn.conv2d(x, kernel, 1, "SAME", name="Conv2D")
        h, _, _ = v1.nn.fused_batch_norm(h, gamma, beta, epsilon=1e-3, is_training=True, name="FusedBatchNormV3")
        h = tf.nn.relu(h, name="Relu")
    loss = tf.reduce_mean(tf.square(h))
    train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    images = np.random.RandomState(0).standard_normal((4, 8, 8, 16)).astype(np.float32)
    return {"images:0": images}, [loss, train]


def test_training_batch_norm_is_split_and_fused_with_its_conv_and_relu() -> None:
    derived, computed, session, feed_dict, everything = _derive(_conv_bn_step)
    by_type = {op.type: op for op in derived.ops}
    fused = next(op for op in derived.ops if op.type == "Conv2D")
    # UB fusion names the kernel after both nodes and keeps the first one's type
    assert fused.name == "block/Conv2Dblock/FusedBatchNormV3_Reduce"
    assert fused.original_names == ["block/Conv2D", "block/FusedBatchNormV3"]
    assert (fused.pass_name, fused.pass_name_ub) == ("FusedBatchnormFusionPass", "TbeConvBnreduceFusionPass")
    assert [t.origin_name for t in fused.outputs] == ["block/Conv2D", None, None]  # the sums stand for no TF tensor
    update = by_type["BNTrainingUpdate"]
    assert update.name == "block/FusedBatchNormV3_Updateblock/Relu"
    assert update.original_names == ["block/FusedBatchNormV3", "block/Relu"]
    assert update.pass_name_ub == "BNUpdateEltwiseFusionPass"
    assert update.inputs[1:3] == [(fused.name, 1), (fused.name, 2)]  # the sums come from the fused convolution
    assert by_type["BNTrainingUpdateGrad"].name.endswith("FusedBatchNormGradV3_Update")
    assert by_type["BNTrainingReduceGrad"].name.endswith("FusedBatchNormGradV3_Reduce")
    assert "FusedBatchNormV3" not in by_type and "Relu" not in by_type and "BatchNorm" not in by_type
    assert derived.graph_fusion["FusedBatchnormFusionPass"].effect_times == 1
    assert derived.graph_fusion["FusedBatchNormGradFusionPass"].effect_times == 1
    assert derived.ub_fusion["TbeConvBnreduceFusionPass"].effect_times == 1
    checked = _check_outputs(derived, computed, session, feed_dict, everything,
                             {"Conv2D", "BNTrainingUpdate", "BNTrainingUpdateGrad", "BNTrainingReduceGrad"}, 1e-4)
    assert checked == 1 + 5 + 2 + 1  # every output that stands for a TF tensor
    sums = computed[(fused.name, 1)]
    conv = session.run(everything["block/Conv2D:0"], feed_dict=feed_dict)
    np.testing.assert_allclose(sums, conv.sum(axis=(0, 1, 2)), rtol=1e-3, atol=1e-3)


def test_without_training_passes_the_batch_norm_stays_whole() -> None:
    derived, *_ = _derive(_conv_bn_step, training=False)
    types = {op.type for op in derived.ops}
    assert "BatchNorm" in types and "BatchNormGrad" in types and "BNTrainingUpdate" not in types
    assert "FusedBatchnormFusionPass" not in derived.graph_fusion


def _layer_norm_step(v1, train: bool = True):
    import tensorflow as tf

    x = v1.placeholder(tf.float32, [6, 32], name="x")
    w = v1.get_variable("w", [32, 32], initializer=v1.initializers.glorot_uniform(seed=2))
    h = tf.matmul(x, w)
    with v1.variable_scope("encoder/LayerNorm"):  # tf.contrib.layers.layer_norm's scopes
        gamma = v1.get_variable("gamma", [32], initializer=v1.ones_initializer())
        beta = v1.get_variable("beta", [32], initializer=v1.zeros_initializer())
        mean, variance = tf.nn.moments(h, [-1], keepdims=True)
        y = tf.nn.batch_normalization(h, mean, variance, beta, gamma, 1e-12)
    with v1.variable_scope("ffn"):
        inner = tf.matmul(y, w)
        gelu = inner * (0.5 * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (inner + 0.044715 * tf.pow(inner, 3)))))
    loss = tf.reduce_mean(tf.square(gelu))
    values = np.random.RandomState(1).standard_normal((6, 32)).astype(np.float32) * 3 + 1
    if not train:
        return {"x:0": values}, [gelu]
    return {"x:0": values}, [loss, v1.train.GradientDescentOptimizer(0.1).minimize(loss)]


def test_layer_norm_scopes_become_layer_norm_and_its_grad() -> None:
    derived, computed, session, feed_dict, everything = _derive(_layer_norm_step)
    ops = {op.type: op for op in derived.ops}
    forward, backward = ops["LayerNorm"], ops["LayerNormGrad"]
    assert forward.name == "encoder/LayerNorm" and forward.pass_name == "ScopeLayerNormPass"
    assert [t.origin_name for t in forward.outputs] == [
        "encoder/LayerNorm/batchnorm/add_1", "encoder/LayerNorm/moments/mean", "encoder/LayerNorm/batchnorm/Rsqrt"]
    assert backward.name == "gradients/encoder/LayerNorm" and backward.pass_name == "ScopeLayerNormGradPass"
    assert "encoder/LayerNorm/moments/SquaredDifference" in forward.original_names
    assert all(n.startswith("gradients/") for n in backward.original_names)  # the recomputed forward node is not its
    left = [op.name for op in derived.ops if op.name.startswith(("encoder/LayerNorm/", "gradients/encoder/LayerNorm/"))
            and op.kind == "compute"]
    assert left == []  # of the scopes only their constants and variables stay ops
    # the tanh GELU matches, but TanhGrad reads its Tanh: the pass does not fire in a training graph
    assert derived.graph_fusion["GeluFusionPass"].match_times == 1
    assert derived.graph_fusion["GeluFusionPass"].effect_times == 0 and "Gelu" not in ops
    assert _check_outputs(derived, computed, session, feed_dict, everything, {"LayerNorm", "LayerNormGrad"}, 1e-4) >= 6


def test_layer_norm_in_mixed_precision_keeps_epsilon_and_computes_inside_in_float32() -> None:
    derived, computed, session, feed_dict, everything = _derive(_layer_norm_step, mode="allow_mix_precision")
    forward = next(op for op in derived.ops if op.type == "LayerNorm")
    assert forward.outputs[0].dtype == "float16"  # gray: it follows its float16 input (a MatMulV2's)
    epsilon = next(op for op in derived.ops if op.name == "encoder/LayerNorm/batchnorm/add/y")
    assert epsilon.outputs[0].dtype == "float32"  # 1e-12 would be 0 in float16: the kernel takes it as is
    _check_outputs(derived, computed, session, feed_dict, everything, {"LayerNorm"}, 2e-2)


def test_gelu_fires_where_nothing_else_reads_its_inner_ops() -> None:
    derived, computed, session, feed_dict, everything = _derive(lambda v1: _layer_norm_step(v1, train=False))
    gelu = next(op for op in derived.ops if op.type == "Gelu")
    assert gelu.name == "ffn/Pow/Gelu" and gelu.pass_name == "GeluFusionPass"  # GE: `<pow>/Gelu`
    assert gelu.original_names[0] == "ffn/Pow" and gelu.original_names[-1] == "ffn/mul_3"
    assert derived.graph_fusion["GeluFusionPass"].effect_times == 1
    assert _check_outputs(derived, computed, session, feed_dict, everything, {"Gelu"}, 1e-4) == 1
