"""PyTorch's profiler on 'tpu' (issue #16, item 5): device time per op through
the PrivateUse1 profiler stubs (autograd.profiler.profile(use_device="tpu",
use_kineto=False)), record_function ranges, Chrome traces, and the default
torch.profiler.profile() working beside the device."""
import json
import os
import warnings

import torch
import torch.profiler as tp

from _helpers import DEV, tpu_only

pytestmark = tpu_only


def _work(m, x, n=4):
    y = m(x)
    for _ in range(n):
        y = torch.tanh(y @ m.weight)
    return y.sum().item()


def test_device_time_per_op_with_the_legacy_profiler(tmp_path):
    m = torch.nn.Linear(384, 384).to(DEV)
    x = torch.randn(256, 384, device=DEV)
    _work(m, x)  # compile outside the profiled region
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "PrivateUse1 used in profiler but not enabled" must not appear
        with torch.autograd.profiler.profile(use_device=DEV, use_kineto=False) as prof:
            with torch.autograd.profiler.record_function("my_block"):
                _work(m, x)
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::mm"].count == 4 and avg["my_block"].count == 1
    mm_device = avg["aten::mm"].self_device_time_total
    assert mm_device > 0
    # the matmuls dominate the device time; the enclosing range covers them
    total = sum(e.self_device_time_total for e in prof.key_averages())
    assert mm_device > 0.3 * total
    assert avg["my_block"].device_time_total >= mm_device * 0.9
    path = str(tmp_path / "trace.json")
    prof.export_chrome_trace(path)
    names = {e.get("name") for e in json.load(open(path))["traceEvents"]}
    assert "aten::mm" in names and "my_block" in names


def test_default_torch_profiler_beside_the_device(tmp_path):
    m = torch.nn.Linear(64, 64).to(DEV)
    x = torch.randn(8, 64, device=DEV)
    _work(m, x)
    with tp.profile(activities=[tp.ProfilerActivity.CPU], record_shapes=True) as prof:
        with tp.record_function("outer"):
            with tp.record_function("inner"):
                _work(m, x)
    keys = {e.key for e in prof.key_averages()}
    assert {"outer", "inner", "aten::mm"} <= keys
    path = os.path.join(tmp_path, "t.json")
    prof.export_chrome_trace(path)
    assert os.path.getsize(path) > 0
