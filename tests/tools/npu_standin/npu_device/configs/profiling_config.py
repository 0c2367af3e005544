"""Stand-in of npu_device.configs.profiling_config."""

import json

from npu_device.configs.option_base import NpuBaseConfig, OptionValue

_DEFAULT_OPTIONS = json.dumps({"output": "./", "training_trace": "on", "task_time": "on", "hccl": "on",
                               "aicpu": "on", "aic_metrics": "PipeUtilization", "msproftx": "off"})


class NpuProfilingConfig(NpuBaseConfig):
    def __init__(self):
        self.enable_profiling = OptionValue(False, [True, False])
        self.profiling_options = OptionValue(_DEFAULT_OPTIONS, None)
        super().__init__()
