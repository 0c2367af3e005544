"""The original tool's import path: `from precision_tool.tf_session import PrecisionTfSession`.

Import precision_tool.tf_config first (it must come before TensorFlow); see capture/session.py.
"""

from precision_tool.capture.session import PrecisionTfSession

__all__ = ["PrecisionTfSession"]
