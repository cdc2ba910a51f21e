"""pytest configuration for the torch_tpu suite.

TTPU_TEST_DEVICE=tpu (default) tests the real backend; TTPU_TEST_DEVICE=cpu
runs the suite against CPU to validate the test code itself (tpu-only tests
are skipped).  Importing ``_helpers`` sets TORCH_TPU_CPU_DEVICES (default 2)
*before* importing ``torch_tpu``.  Helpers live in ``_helpers.py``.
"""

# _helpers must be imported first: it sets TORCH_TPU_CPU_DEVICES before
# torch (which auto-loads torch_tpu) is imported.
from _helpers import DEV  # isort: skip

import os  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402


def pytest_report_header(config):
    return (f"torch_tpu tests: TTPU_TEST_DEVICE={DEV} "
            f"TORCH_TPU_CPU_DEVICES={os.environ.get('TORCH_TPU_CPU_DEVICES')} "
            f"torch={torch.__version__}")


@pytest.fixture
def dev():
    """The device string under test ('tpu' or 'cpu')."""
    return DEV


@pytest.fixture
def two_devices():
    """Skip unless the backend exposes at least two devices (tpu:0, tpu:1).

    With the CPU plugin and TORCH_TPU_CPU_DEVICES=2 (the default here) it
    always does; test_device checks the count itself.
    """
    if DEV != "tpu":
        pytest.skip("tpu only")
    if torch.tpu.device_count() < 2:
        pytest.skip("needs two tpu devices")
