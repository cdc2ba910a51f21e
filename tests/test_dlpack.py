"""DLPack and backend-metadata serialization on 'tpu' (issue #16, item 6),
each against what the same calls do on CPU, in every execution mode.

A 'tpu' round trip (capsule or __dlpack__, DLPack 0.x and 1.x) shares the
storage as on CPU: same values, writes through either side seen by the other,
views keep their offset and strides. A host copy is given when asked for
(dl_device=CPU); a capsule this process did not export is a BufferError,
never an unreadable tensor. torch._utils.set/get_tensor_metadata entries
survive torch.save/torch.load."""
import io

import pytest
import torch
from torch.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack

from _helpers import DEV, each_eager_mode, tpu_only  # noqa: F401  (each_eager_mode: every test in every mode)

pytestmark = tpu_only


def _both(fn):
    """fn(device) on CPU and on 'tpu'; results as CPU tensors."""
    ref = fn("cpu")
    got = fn(DEV)
    return ref, got


EXPORTS = {
    "capsule": lambda t: from_dlpack(to_dlpack(t)),
    "torch.to_dlpack": lambda t: torch.from_dlpack(torch.to_dlpack(t)),
    "__dlpack__ v1": lambda t: from_dlpack(t.__dlpack__(max_version=(1, 0))),
    "__dlpack__ v0": lambda t: from_dlpack(t.__dlpack__()),
    "from_dlpack(tensor)": lambda t: torch.from_dlpack(t),
}


@pytest.mark.parametrize("export", EXPORTS, ids=list(EXPORTS))
def test_round_trip_shares_memory_as_on_cpu(export):
    def run(device):
        base = torch.arange(24, dtype=torch.float32, device=device).reshape(4, 6)
        view = base[1:, ::2]  # offset and strides
        y = EXPORTS[export](view)
        assert y.device == base.device and y.dtype == base.dtype and not y.requires_grad
        assert y.shape == view.shape and y.stride() == view.stride()
        before = y.clone()
        y.mul_(-1)          # a write through the import reaches the exporter
        base[3, 0] = 100.0  # and one through the exporter reaches the import
        return [before.cpu(), y.cpu(), base.cpu()]

    ref, got = _both(run)
    for r, g in zip(ref, got):
        torch.testing.assert_close(g, r)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.uint8])
def test_round_trip_dtypes(dtype):
    x = (torch.arange(10) % 3).to(dtype)
    d = x.to(DEV)
    y = from_dlpack(to_dlpack(d[2:]))
    assert y.dtype == dtype
    torch.testing.assert_close(y.cpu(), x[2:])


def test_import_outlives_the_exporter_and_the_capsule():
    x = torch.randn(5, 3)
    d = x.to(DEV)
    capsule = to_dlpack(d)
    del d
    y = from_dlpack(capsule)
    del capsule
    torch.testing.assert_close((y * 2).cpu(), x * 2)


def test_dlpack_device():
    assert torch.ones(2, device=DEV).__dlpack_device__() == (DLDeviceType.kDLExtDev, 0)
    assert torch.ones(2).__dlpack_device__() == (DLDeviceType.kDLCPU, 0)


def test_host_copy_when_asked_for():
    x = torch.randn(3, 4)
    d = x.to(DEV)
    # what numpy.from_dlpack(d, device="cpu") asks for
    h = torch.from_dlpack(d, device="cpu")
    torch.testing.assert_close(h, x)
    h.fill_(0)  # a copy: the device tensor keeps its values
    torch.testing.assert_close(d.cpu(), x)
    cap = d.__dlpack__(max_version=(1, 0), dl_device=(DLDeviceType.kDLCPU, 0), copy=True)
    torch.testing.assert_close(from_dlpack(cap), x)
    with pytest.raises(BufferError, match="copy"):
        d.__dlpack__(max_version=(1, 0), dl_device=(DLDeviceType.kDLCPU, 0), copy=False)
    with pytest.raises(ValueError, match="without copying"):
        torch.from_dlpack(d, device="cpu", copy=False)
    np = pytest.importorskip("numpy")
    a = np.from_dlpack(d, device="cpu")
    assert (a == x.numpy()).all()


def test_refusals_match_cpu():
    # requires_grad / conj are refused with torch's own error on both devices
    for device in ("cpu", DEV):
        w = torch.ones(3, device=device, requires_grad=True)
        with pytest.raises(BufferError, match="require gradient"):
            torch.from_dlpack(w)
        with pytest.raises(BufferError, match="require gradient"):
            w.__dlpack__()


def test_foreign_tpu_capsule_is_a_clear_error():
    # a capsule made without the registering export (torch._C directly):
    # an error at import, not a tensor that fails when read
    cap = torch._C._to_dlpack(torch.ones(2, device=DEV))
    with pytest.raises(BufferError, match="not exported by torch_tpu"):
        from_dlpack(cap)


def test_backend_metadata_round_trips_through_save_and_load():
    x = torch.randn(3, device=DEV)
    assert torch._utils.get_tensor_metadata(x) == {}
    torch._utils.set_tensor_metadata(x, {"ttpu_flag": True, "other": False})
    assert torch._utils.get_tensor_metadata(x) == {"ttpu_flag": True, "other": False}
    buf = io.BytesIO()
    torch.save({"x": x, "plain": torch.ones(2, device=DEV)}, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert torch._utils.get_tensor_metadata(loaded["x"]) == {"ttpu_flag": True, "other": False}
    assert torch._utils.get_tensor_metadata(loaded["plain"]) == {}
    torch.testing.assert_close(loaded["x"].cpu(), x.cpu())
    # PyTorch's own entries keep their meaning
    c = torch.randn(2, dtype=torch.complex64, device=DEV).conj()
    assert torch._utils.get_tensor_metadata(c) == {"conj": True}
