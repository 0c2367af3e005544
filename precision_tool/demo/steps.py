"""The multi-step demo (`demo --steps N`): what it builds and why its later step diverges.

The demo network trains N steps on both sides, each step on the next batch of its data (seed
`DATA_SEED + step`), with plain SGD at `LEARNING_RATE` and a static loss scale of `LOSS_SCALE`
(2^14, as a FixedLossScaleManager gives it). The golden run trains in float32 on CPU; the simulated NPU
run trains from its own state: each step starts from the weights its own previous step wrote (the
float32 outputs of its ApplyGradientDescent ops), so its float16 rounding accumulates as on a device.

Nothing is planted (the single demo's bn2 kernel fault is off). What diverges is float16 itself, and only
later: the first updates at this learning rate overshoot, fc1's activations and the logits grow (largest
activation 5.0, 7.3, 10.7 and largest logit 3.2, 7.3, 9.2 at steps 0-2; the loss rises 3.18, 4.92,
6.65), and fc2's weight gradient (fc1's activations times the loss gradient) grows with them: in float32
its largest entry, times the loss scale, is 24,308 at step 0, 57,782 at step 1 and 129,100 at step 2,
beyond float16's 65504, where the NPU's float16 MatMulV2 `gradients/fc2/MatMul_grad/MatMul_1` writes
inf. A static loss scale chosen for the first steps, broken when the activations grow. The demo's graph,
like the single demo's, applies the update without the loss-scale optimizer's finite check, so the inf
reaches fc2's weights and every later NPU step is NaN; the NPU's loss turns NaN at step 3.

Layout written (`vc --step N` / `vc --step all` read exactly this):
- npu/debug_0/graph/ge_proto_00000001_graph_1_Build.txt: the Build graph (one for every step);
- npu/debug_0/dump/<stamp>/0/<graph name>/1/<step>/<dump files>: one iteration folder per step, as the TF
  adapter writes with dump_step "0|1|2|3";
- tf/tf_debug/run_*: one tfdbg run folder per golden step; `tf_dump --step all` (the demo runs it)
  extracts run K into tf/dump/step_<K>/;
- tf/loss.csv and npu/debug_0/loss.csv: loss, global gradient norm and loss scale of every step.

Plain data only: TensorFlow is imported by `step_network` (the child process) alone.
"""

from __future__ import annotations

from typing import Any

MIN_STEPS = 2
MAX_STEPS = 16
DEFAULT_STEPS = 4  # the step count the docs and tests use: steps 0-1 fine, 2 overflows, 3 NaN
DEFAULT_DIR = "./precision_data_demo_steps"
LOSS_SCALE = 2.0 ** 14
LEARNING_RATE = 0.05
# Step k is fed the data set's batch DATA_SEED + k. With this seed float16's own drift stays well clear of
# the cosine threshold before the overflow (min cosine 0.999 at steps 0 and 1); with others, MaxPoolGrad's
# routing can cross it at step 1 without any overflow (accumulated error, docs/demo.md).
DATA_SEED = 2025
# The op whose float16 output overflows first, and the step where it does (with the default data and seeds).
OVERFLOW_OP = "gradients/fc2/MatMul_grad/MatMul_1"
OVERFLOW_STEP = 2

DIVERGENCE = (f"nothing planted: with a static loss scale of 2^14 and a learning rate of {LEARNING_RATE}, the "
              f"first updates overshoot (fc1's activations and the logits grow), and with them fc2's weight gradient "
              f"{OVERFLOW_OP} (MatMulV2): its loss-scaled float32 value stays below float16's 65504 at steps 0 and "
              f"1 and exceeds it at step {OVERFLOW_STEP}, where the NPU's float16 result overflows to inf")


def check_steps(value: Any) -> int:
    """The step count, or ValueError with the one line to show."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"--steps takes a whole number of steps from {MIN_STEPS} to {MAX_STEPS} ({DEFAULT_STEPS} "
                         f"shows every stage), not {value!r}")
    if not MIN_STEPS <= value <= MAX_STEPS:
        raise ValueError(f"--steps {value}: give {MIN_STEPS} to {MAX_STEPS} steps (the float16 overflow shows at "
                         f"step {OVERFLOW_STEP}; {DEFAULT_STEPS} steps show it and the step after)")
    return value


def step_dir_name(step: int) -> str:
    """tf/dump/step_<N>: the golden tensors of step N (the workspace's layout, docs/steps.md)."""
    from precision_tool.workspace import GOLDEN_STEP_PREFIX

    return f"{GOLDEN_STEP_PREFIX}{step}"
