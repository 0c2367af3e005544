"""Stand-in of npu_bridge.estimator.npu.npu_config: DumpConfig, ProfilingConfig and the capture-related
part of NPURunConfig, with the adapter's Python checks (the constructors only store their arguments)."""


class DumpConfig:
    """Dump settings; stored as the adapter stores them (underscored, except dump_data / dump_layer)."""

    def __init__(self, enable_dump=False, dump_path=None, dump_step=None, dump_mode="output",
                 enable_dump_debug=False, dump_debug_mode="all", dump_data="tensor", dump_layer=None):
        self._enable_dump = enable_dump
        self._dump_path = dump_path
        self._dump_step = dump_step
        self._dump_mode = dump_mode
        self._enable_dump_debug = enable_dump_debug
        self._dump_debug_mode = dump_debug_mode
        self.dump_data = dump_data
        self.dump_layer = dump_layer


class ProfilingConfig:
    """Profiling settings; options is one JSON string."""

    def __init__(self, enable_profiling=False, profiling_options=None):
        self._enable_profiling = enable_profiling
        self._profiling_options = profiling_options


def _check_nonnegative_integer(value, name):
    """As npu_bridge.estimator.npu.util.check_nonnegative_integer."""
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be nonnegative integer.")


class NPURunConfig:
    """The capture-related keyword arguments of the real NPURunConfig (an Estimator RunConfig there; a
    plain object here, since tf.estimator left TensorFlow in 2.16). Unknown keywords are a TypeError."""

    def __init__(self, iterations_per_loop=1, profiling_config=None, model_dir=None, session_config=None,
                 precision_mode=None, dump_config=None, op_debug_level=None, enable_exception_dump=2,
                 fusion_switch_file=None, debug_dir=None, modify_mixlist=None, op_debug_config=None,
                 precision_mode_v2=None):
        if dump_config is not None and not isinstance(dump_config, DumpConfig):
            raise ValueError("`dump_config` must be provided with type `DumpConfig`")
        _check_nonnegative_integer(enable_exception_dump, "enable_exception_dump")
        self.iterations_per_loop = iterations_per_loop
        self._profiling_config = profiling_config
        self.model_dir = model_dir
        self.session_config = session_config
        self._precision_mode = precision_mode
        self._dump_config = dump_config
        self.op_debug_level = op_debug_level
        self.enable_exception_dump = enable_exception_dump
        self._fusion_switch_file = fusion_switch_file
        self._debug_dir = debug_dir
        self._modify_mixlist = modify_mixlist
        self._op_debug_config = op_debug_config
        self._precision_mode_v2 = precision_mode_v2
