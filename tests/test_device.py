"""Device registration and the torch.tpu / torch.accelerator module API."""

import os

import pytest
import torch

from _helpers import ON_TPU, assert_same, make_tensor, tpu_only

pytestmark = tpu_only

EXPECTED_DEVICE_COUNT = int(os.environ.get("TORCH_TPU_CPU_DEVICES", "2")) if ON_TPU else 0


# --------------------------------------------------------------------------
# Registration: PrivateUse1 renamed to 'tpu'
# --------------------------------------------------------------------------


def test_privateuse1_renamed_to_tpu():
    assert torch._C._get_privateuse1_backend_name() == "tpu"


def test_torch_device_parsing():
    assert torch.device("tpu").type == "tpu"
    assert torch.device("tpu").index is None
    d = torch.device("tpu:1")
    assert (d.type, d.index) == ("tpu", 1)
    assert torch.device("tpu", 0) == torch.device("tpu:0")


def test_tensor_on_tpu_reports_device():
    t = torch.ones(3, device="tpu")
    assert t.device.type == "tpu"
    assert t.device.index == 0
    assert str(t.device) == "tpu:0"
    assert t.is_tpu
    assert not t.is_cpu
    assert not torch.ones(3).is_tpu


def test_tensor_tpu_method(two_devices):
    x = make_tensor((2, 3))
    y = x.tpu()
    assert y.is_tpu and y.device == torch.device("tpu:0")
    assert_same(y, x)
    z = x.tpu(1)
    assert z.device == torch.device("tpu:1")
    assert_same(z, x)


def test_module_tpu_method():
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2)
    ref = {k: v.detach().clone() for k, v in m.state_dict().items()}
    assert m.tpu() is m
    for name, p in m.named_parameters():
        assert p.device.type == "tpu", name
        assert_same(p.detach(), ref[name])
    x = make_tensor((4, 3))
    assert_same(m(x.tpu()), torch.nn.functional.linear(x, ref["weight"], ref["bias"]))


# --------------------------------------------------------------------------
# torch.tpu device management
# --------------------------------------------------------------------------


def test_is_available_and_device_count():
    assert torch.tpu.is_available() is True
    assert torch.tpu.device_count() == EXPECTED_DEVICE_COUNT


def test_current_device_and_set_device(two_devices):
    assert torch.tpu.current_device() == 0
    try:
        torch.tpu.set_device(1)
        assert torch.tpu.current_device() == 1
        t = torch.empty(2, device="tpu")
        assert t.device == torch.device("tpu:1")
        torch.tpu.set_device(0)
        assert torch.tpu.current_device() == 0
        assert torch.empty(2, device="tpu").device == torch.device("tpu:0")
    finally:
        torch.tpu.set_device(0)


def test_device_context_manager(two_devices):
    assert torch.tpu.current_device() == 0
    with torch.tpu.device(1):
        assert torch.tpu.current_device() == 1
        assert torch.zeros(2, device="tpu").device == torch.device("tpu:1")
    assert torch.tpu.current_device() == 0
    assert torch.zeros(2, device="tpu").device == torch.device("tpu:0")


def test_invalid_device_index_raises():
    with pytest.raises(Exception):
        torch.empty(2, device=f"tpu:{EXPECTED_DEVICE_COUNT}")
    # the words OpenReg's suite expects, with our count beside them
    with pytest.raises(RuntimeError, match="The device index is out of range"):
        torch.accelerator.set_device_index(EXPECTED_DEVICE_COUNT)
    # the process is still usable
    assert torch.ones(2, device="tpu").sum().item() == 2.0


def test_synchronize(two_devices):
    x = torch.ones(4, device="tpu") * 3
    torch.tpu.synchronize()
    torch.tpu.synchronize(0)
    torch.tpu.synchronize(1)
    assert x.sum().item() == 12.0


def test_device_name_and_properties():
    for i in range(torch.tpu.device_count()):
        name = torch.tpu.get_device_name(i)
        assert isinstance(name, str) and name
        assert torch.tpu.get_device_properties(i) is not None
    assert torch.tpu.get_device_name() == torch.tpu.get_device_name(0)


def test_memory_stat_functions_return_ints():
    for fn in (torch.tpu.memory_allocated, torch.tpu.max_memory_allocated):
        assert isinstance(fn(), int) and fn() >= 0
        assert isinstance(fn(0), int)
    torch.tpu.reset_peak_memory_stats()


def test_seed_functions():
    torch.tpu.manual_seed(1234)
    assert torch.tpu.initial_seed() == 1234
    torch.tpu.manual_seed_all(77)
    assert torch.tpu.initial_seed() == 77
    state = torch.tpu.get_rng_state()
    assert isinstance(state, torch.Tensor)
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    torch.tpu.set_rng_state(state)


def test_torch_manual_seed_reaches_tpu():
    torch.manual_seed(4321)
    assert torch.tpu.initial_seed() == 4321


# --------------------------------------------------------------------------
# torch.accelerator
# --------------------------------------------------------------------------


def test_accelerator_api():
    assert torch.accelerator.is_available()
    acc = torch.accelerator.current_accelerator()
    assert acc is not None and acc.type == "tpu"
    assert torch.accelerator.device_count() == EXPECTED_DEVICE_COUNT
    assert torch.accelerator.current_device_index() == torch.tpu.current_device()


# --------------------------------------------------------------------------
# Multiple devices
# --------------------------------------------------------------------------


def test_tensor_on_second_device(two_devices):
    x = make_tensor((3, 4))
    t = x.to("tpu:1")
    assert t.device.type == "tpu" and t.device.index == 1
    assert t.get_device() == 1
    assert_same(t, x)
    # results of ops stay on the device of their inputs
    r = t * 2 + 1
    assert r.device == torch.device("tpu:1")
    assert_same(r, x * 2 + 1)


def test_factories_on_second_device(two_devices):
    assert torch.ones(2, 3, device="tpu:1").device == torch.device("tpu:1")
    z = torch.zeros(5, device="tpu:1", dtype=torch.int64)
    assert z.device == torch.device("tpu:1")
    assert_same(z, torch.zeros(5, dtype=torch.int64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_copy_between_devices(dtype, two_devices):
    x = make_tensor((4, 5), dtype)
    a = x.to("tpu:0")
    b = a.to("tpu:1")
    assert b.device == torch.device("tpu:1")
    assert a.device == torch.device("tpu:0")
    assert_same(b, x)
    # and back, including a non-contiguous source
    c = b.t().to("tpu:0")
    assert c.device == torch.device("tpu:0")
    assert_same(c, x.t())
    # copy_ into an existing tensor on the other device
    d = torch.zeros(4, 5, dtype=dtype, device="tpu:1")
    d.copy_(a)
    assert d.device == torch.device("tpu:1")
    assert_same(d, x)
    # the source is untouched
    assert_same(a, x)
