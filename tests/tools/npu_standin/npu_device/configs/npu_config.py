"""Stand-in of npu_device.configs.npu_config.NpuConfig: every top-level option name and allowed list of
the adapter's; the nested aoe/memory/experimental configs are empty here (nothing of ours sets them)."""

from npu_device.configs.dump_config import NpuDumpConfig
from npu_device.configs.option_base import DeprecatedValue, NpuBaseConfig, OptionValue
from npu_device.configs.profiling_config import NpuProfilingConfig

PRECISION_MODES = ["force_fp32", "allow_fp32_to_fp16", "force_fp16", "must_keep_origin_dtype", "allow_mix_precision",
                   "cube_fp16in_fp32out", "allow_mix_precision_fp16", "allow_mix_precision_bf16",
                   "allow_fp32_to_bf16"]
PRECISION_MODES_V2 = ["fp16", "origin", "cube_fp16in_fp32out", "mixed_float16", "mixed_bfloat16", "cube_hif8",
                      "mixed_hif8"]


class _EmptyConfig(NpuBaseConfig):
    def __init__(self):
        super().__init__()


class NpuConfig(NpuBaseConfig):
    def __init__(self):
        self.graph_run_mode = OptionValue(1, [0, 1])
        self.graph_memory_max_size = OptionValue(None, None)
        self.variable_memory_max_size = OptionValue(None, None)
        self.variable_format_optimize = DeprecatedValue([True, False], replacement=None)
        self.enable_scope_fusion_passes = OptionValue(None, None)
        self.fusion_switch_file = OptionValue(None, None)
        self.precision_mode = OptionValue(None, PRECISION_MODES)
        self.op_select_implmode = DeprecatedValue(["high_performance", "high_precision"],
                                                  replacement="op_precision_mode")
        self.optypelist_for_implmode = DeprecatedValue(None, replacement="op_precision_mode")
        self.op_compiler_cache_mode = OptionValue("enable", ["enable", "disable", "force"])
        self.op_compiler_cache_dir = OptionValue(None, None)
        self.stream_max_parallel_num = OptionValue(None, None)
        self.ac_parallel_enable = OptionValue(None, ["0", "1"])
        self.quant_dumpable = OptionValue(None, ["0", "1"])
        self.hcom_parallel = OptionValue(True, [True, False])
        self.hcom_multi_mode = OptionValue(None, None)
        self.is_tailing_optimization = OptionValue(False, [True, False])
        self.op_debug_level = DeprecatedValue([0, 1, 2, 3, 4], replacement="op_debug_config")
        self.op_debug_config = OptionValue(None, None)
        self.debug_dir = OptionValue(None, None)
        self.modify_mixlist = OptionValue(None, None)
        self.enable_exception_dump = OptionValue(2, [0, 1, 2])
        self.dump_config = NpuDumpConfig()
        self.aoe_config = _EmptyConfig()
        self.profiling_config = NpuProfilingConfig()
        self.enable_small_channel = OptionValue(False, [True, False])
        self.deterministic = OptionValue(0, [0, 1])
        self.op_precision_mode = OptionValue(None, None)
        self.graph_exec_timeout = OptionValue(None, None)
        self.topo_sorting_mode = OptionValue(None, [0, 1, None])
        self.customize_dtypes = OptionValue(None, None)
        self.overflow_flag = OptionValue(1, [0, 1])
        self.stream_sync_timeout = OptionValue(-1, None)
        self.event_sync_timeout = OptionValue(-1, None)
        self.execute_times = OptionValue(-1, None)
        self.external_weight = OptionValue(False, [True, False])
        self.memory_config = _EmptyConfig()
        self.jit_compile = OptionValue("auto", ["true", "false", "auto"])
        self.graph_compiler_cache_dir = OptionValue(None, None)
        self.input_fusion_size = OptionValue(131072, None)
        self.compile_dynamic_mode = OptionValue(False, [True, False])
        self.experimental = _EmptyConfig()
        self.precision_mode_v2 = OptionValue(None, PRECISION_MODES_V2)
        self.export_compile_stat = OptionValue(1, [0, 1, 2])
        self.aicore_num = OptionValue(None, None)
        self.oo_constant_folding = OptionValue(True, [True, False])
        self.input_batch_cpy = OptionValue(False, [True, False])
        self.shape_generalization_mode = OptionValue("STRICT", ["STRICT", "FULL", "ADAPTIVE"])
        self.all_tensor_not_empty = OptionValue(False, [True, False])
        self.auto_multistream_parallel_mode = OptionValue(None, None)
        self.oo_level = OptionValue("O3", ["O0", "O1", "O2", "O3"])
        self.optimization_switch = OptionValue(None, None)
        super().__init__()
