"""torch.tpu memory statistics."""

import gc

import pytest
import torch

from _helpers import make_tensor, tpu_only

pytestmark = tpu_only

MiB = 1 << 20


def allocated(device=0):
    torch.tpu.synchronize()
    gc.collect()
    return torch.tpu.memory_allocated(device)


CREATORS = {
    "empty": lambda: torch.empty(256, 256, device="tpu"),
    "ones": lambda: torch.ones(256, 256, device="tpu"),
    "from_cpu": lambda: make_tensor((256, 256)).to("tpu"),
    "int64_factory": lambda: torch.arange(65536, device="tpu"),
    "bfloat16_zeros": lambda: torch.zeros(300, 301, device="tpu", dtype=torch.bfloat16),
}


@pytest.mark.parametrize("name", list(CREATORS))
def test_allocation_is_counted_and_freed(name):
    create = CREATORS[name]
    del_me = create()  # warm up: caches, compiled executables, constants
    del del_me
    base = allocated()
    x = create()
    nbytes = x.numel() * x.element_size()
    assert allocated() >= base + nbytes
    del x
    assert allocated() == base


def test_op_result_is_counted_and_freed():
    x = torch.ones(128, 128, device="tpu")
    y = x * 2 + 1  # warm up
    del y
    base = allocated()
    y = x * 2 + 1
    assert allocated() >= base + y.numel() * y.element_size()
    del y
    assert allocated() == base


def test_inplace_ops_do_not_leak():
    x = torch.ones(64, 64, device="tpu")
    x.add_(1).mul_(2)  # warm up
    x[1:, ::2].add_(3)
    base = allocated()
    for _ in range(10):
        x.add_(1).mul_(0.5)
        x[1:, ::2].add_(3)
        x.copy_(x.t())
    assert allocated() == base


def test_views_do_not_allocate():
    x = torch.empty(64, 64, device="tpu")
    base = allocated()
    views = [x[1:], x.t(), x.view(-1), x.unsqueeze(0), x.expand(2, 64, 64),
             x.view(torch.int32), x.diagonal(), x.narrow(0, 1, 3),
             x.as_strided((8, 8), (64, 1), 3), *x.split(8), x.reshape(4096), x[:, 3]]
    assert allocated() == base
    del views
    assert allocated() == base


def test_peak_memory():
    torch.tpu.reset_peak_memory_stats()
    base = allocated()
    assert torch.tpu.max_memory_allocated() == base
    a = torch.empty(MiB // 4, device="tpu")       # 1 MiB
    b = torch.empty(MiB // 2, device="tpu")       # 2 MiB
    del a, b
    peak = torch.tpu.max_memory_allocated()
    assert peak >= base + 3 * MiB
    assert allocated() == base
    small = torch.empty(1024, device="tpu")
    assert torch.tpu.max_memory_allocated() == peak  # not a new peak
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == allocated()
    assert torch.tpu.max_memory_allocated() >= base + small.numel() * 4
    del small


def test_stats_are_per_device(two_devices):
    base0, base1 = allocated(0), allocated(1)
    y = torch.empty(MiB // 4, device="tpu:1")
    assert allocated(1) >= base1 + MiB
    assert allocated(0) == base0
    with torch.tpu.device(1):
        assert torch.tpu.memory_allocated() == torch.tpu.memory_allocated(1)
    del y
    assert allocated(1) == base1


# --- torch.accelerator and the CUDA-shaped API (issue #16, item 3) -------------

def test_accelerator_memory_api_reads_the_allocator():
    base = allocated()
    x = torch.empty(512, 1024, device="tpu")  # 2 MiB: the large pool
    small = torch.empty(16, device="tpu")     # the small pool
    assert torch.accelerator.memory_allocated() == torch.tpu.memory_allocated() == base + 2 * MiB + 64
    st = torch.tpu.memory_stats()
    assert st == dict(torch.accelerator.memory_stats())
    assert st["allocated_bytes.all.current"] == base + 2 * MiB + 64
    assert st["allocated_bytes.large_pool.current"] >= 2 * MiB
    assert st["allocated_bytes.small_pool.current"] >= 64
    assert st["allocation.all.current"] >= 2
    # nothing is cached: reserved follows allocated
    assert torch.tpu.memory_reserved() == torch.accelerator.memory_reserved() == torch.tpu.memory_allocated()
    frees = st["allocation.all.freed"]
    del x, small
    assert allocated() == base
    assert torch.tpu.memory_stats()["allocation.all.freed"] == frees + 2
    torch.accelerator.empty_cache()
    torch.tpu.empty_cache()
    assert allocated() == base


def test_peaks_and_accumulated_stats_reset():
    base = allocated()
    torch.accelerator.reset_peak_memory_stats()
    x = torch.empty(1024, 1024, device="tpu")
    del x
    assert torch.accelerator.max_memory_allocated() == base + 4 * MiB
    assert torch.tpu.max_memory_reserved() == base + 4 * MiB
    torch.tpu.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == allocated()
    torch.tpu.reset_accumulated_memory_stats()
    st = torch.tpu.memory_stats()
    assert st["allocation.all.allocated"] == 0 and st["allocation.all.freed"] == 0
    assert st["allocated_bytes.all.current"] == base  # current survives a reset


def test_memory_info_and_summary():
    free, total = torch.tpu.mem_get_info()
    free2, total2 = torch.accelerator.get_memory_info()
    assert total2 == total and abs(free2 - free) < 256 * MiB  # free memory moves a little between calls
    assert 0 < free <= total
    # as on CUDA, the device's properties carry its capacity (tools divide by it)
    assert torch.tpu.get_device_properties(0).total_memory == total
    s = torch.tpu.memory_summary()
    assert "Allocated memory" in s and "tpu:0" in s


@pytest.mark.parametrize("make", [
    lambda n: torch.empty(n, device="tpu"),
    lambda n: torch.randn(n // 4096, 4096, device="tpu"),
    lambda n: torch.ones(n, dtype=torch.float64, device="tpu") + 1,
], ids=["empty", "randn", "ones_add"])
def test_huge_allocation_raises_out_of_memory(make):
    base = allocated()
    free, total = torch.tpu.mem_get_info()
    n = (total // 4 + (1 << 30)) // 4096 * 4096 * 2  # float32: twice the device's total bytes
    ooms = torch.tpu.memory_stats()["num_ooms"]
    with pytest.raises(torch.OutOfMemoryError, match=r"tried to allocate .* free of .* total"):
        make(n)
    assert torch.tpu.memory_stats()["num_ooms"] == ooms + 1
    assert allocated() == base
    # the device still works afterwards
    assert torch.ones(3, device="tpu").sum().item() == 3


def test_huge_allocation_raises_out_of_memory_in_defer_and_fuse():
    from torch_tpu.execution_mode import EagerMode, eager_mode
    base = allocated()
    free, total = torch.tpu.mem_get_info()
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        with pytest.raises(torch.OutOfMemoryError):
            torch.zeros(total // 2 + (1 << 30), device="tpu").add_(1)
    assert allocated() == base
