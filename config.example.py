# PrecisionTool settings. Copy this file to `config.py` in the folder you start the tool from, or point
# $PRECISION_TOOL_CONFIG at a copy, and change what you need. Every line below shows the default;
# a setting you delete keeps its default. Unknown names and wrong types are reported by name.

# The workspace (precision_data) folder. `--data DIR` and $PRECISION_DATA take precedence.
ROOT_DIR = './precision_data'

# Training steps the NPU dumps (the NpuOptimizer's dump_step), e.g. '0' or '0|5|10'.
TF_DUMP_STEP = '0'

# CANN toolkit root. When it holds msaccucmp.py, `vc --backend auto` runs it instead of the built-in engine.
CMD_ROOT_PATH = '/usr/local/Ascend'

# Level of the log file precision_data/temp/precision_tool.log: DEBUG, INFO, WARNING or ERROR.
LOG_LEVEL = 'INFO'

# Framework of the golden run. Only 'TF' is supported.
NET_TYPE = 'TF'

# An output whose cosine similarity is at or below this is abnormal (vcs, ac).
COSINE_THRESHOLD = 0.98

# Worker processes for the whole-network comparison; 0 means one per CPU core.
WORKERS = 0

# A Dask scheduler (tcp://HOST:PORT) that `vc` runs its comparisons on, for dumps too big for one machine
# (`vc --scheduler` overrides it; docs/dask.md). Empty: the local process pool.
DASK_SCHEDULER = ''

# Replay (`ni -c`, `replay`, `ac -c`): the NPU output "agrees" with TensorFlow's on the same inputs when
# Inf/NaN sit at the same places, the cosine is at least ..._COSINE and ||npu - tf|| / ||tf|| is at most
# ..._ERROR, by the dtype of the NPU tensor (docs/replay.md explains the defaults).
REPLAY_FLOAT16_COSINE = 0.999
REPLAY_FLOAT16_ERROR = 0.01
REPLAY_BFLOAT16_COSINE = 0.99
REPLAY_BFLOAT16_ERROR = 0.05
REPLAY_FLOAT32_COSINE = 0.99999
REPLAY_FLOAT32_ERROR = 0.0001

# Loss curves (`loss`, `ac`, the report): the NPU run's loss parts from the golden run's at the first step
# where |npu - golden| / |golden| exceeds this (docs/steps.md#loss-curves).
LOSS_TOLERANCE = 0.01

# The HTML report (`report`, `ac -c --report`): how many outputs per comparison get both sides' statistics
# and an error histogram in their op panel (each is read again): the abnormal ones first, then the rest in
# execution order. The chart and the tables always hold every output.
REPORT_TENSOR_LIMIT = 2000
