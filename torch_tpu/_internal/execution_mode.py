"""TorchTPU's import path for the execution-mode API."""
from torch_tpu.execution_mode import EagerMode, eager_mode, get_eager_mode, set_eager_mode  # noqa: F401
