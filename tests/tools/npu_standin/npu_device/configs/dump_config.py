"""Stand-in of npu_device.configs.dump_config."""

from npu_device.configs.option_base import NpuBaseConfig, OptionValue


class NpuDumpConfig(NpuBaseConfig):
    def __init__(self):
        self.enable_dump = OptionValue(False, [True, False])
        self.dump_path = OptionValue(None, None)
        self.dump_step = OptionValue(None, None)
        self.dump_mode = OptionValue("output", ["input", "output", "all"])
        self.enable_dump_debug = OptionValue(False, [True, False])
        self.dump_debug_mode = OptionValue("all", ["aicore_overflow", "atomic_overflow", "all"])
        self.dump_data = OptionValue("tensor", ["tensor", "stats"])
        self.dump_layer = OptionValue(None, None)
        super().__init__()
