"""What the run-config record collects from the running process: the variables that matter and never a
secret, the CANN version from the toolkit's own file (unknown without one), Keras' loss scale."""

from __future__ import annotations

from precision_tool.capture.records import run_config_record as rcr


def test_only_the_variables_that_change_kernels_and_never_a_secret():
    env = {"TF_ENABLE_ONEDNN_OPTS": "0", "ASCEND_OPP_PATH": "/opp", "OMP_NUM_THREADS": "4", "PYTHONHASHSEED": "1",
           "HOME": "/root", "PATH": "/bin", "ASCEND_API_KEY": "x", "TF_SECRET_TOKEN": "x", "HCCL_PASSWORD": "x",
           "TF_VAR_region": "terraform", "TF_CLI_CONFIG_FILE": "/root/.terraformrc", "MKL_NUM_THREADS": "2"}
    assert rcr.recorded_env(env) == {"ASCEND_OPP_PATH": "/opp", "MKL_NUM_THREADS": "2", "OMP_NUM_THREADS": "4",
                                     "PYTHONHASHSEED": "1", "TF_ENABLE_ONEDNN_OPTS": "0"}


def test_cann_version_comes_from_the_toolkits_file_or_is_unknown(tmp_path):
    assert rcr.cann_version({"ASCEND_TOOLKIT_HOME": str(tmp_path)}) in (None, rcr.cann_version({}))
    (tmp_path / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\nversion=8.0.RC3\n")
    assert rcr.cann_version({"ASCEND_TOOLKIT_HOME": str(tmp_path)}) == "8.0.RC3"


def test_option_files_are_recorded_by_content(tmp_path):
    mixlist = tmp_path / "ops_info.json"
    mixlist.write_text('{"black-list": {"to-add": ["Mul"]}}')
    digests = rcr.file_digests({"modify_mixlist": str(mixlist), "fusion_switch_file": str(tmp_path / "gone.cfg"),
                                "precision_mode": "force_fp32"})
    assert len(digests["modify_mixlist"]) == 16 and digests["fusion_switch_file"] == "missing"
    assert set(digests) == {"modify_mixlist", "fusion_switch_file"}


def test_keras_loss_scale_of_a_mixed_precision_optimizer():
    import keras

    optimizer = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=1024.0)
    assert rcr.keras_loss_scale(optimizer) is None  # not built yet: no scale variable, unknown
    optimizer.build([keras.Variable(1.0)])  # as fit has done by the time the capture records
    assert rcr.keras_loss_scale(optimizer) == {"optimizer.dynamic_scale": 1024.0}
    assert rcr.keras_loss_scale(keras.optimizers.SGD(0.1)) is None
