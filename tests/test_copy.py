"""Host <-> device copies, dtype conversion, tensor metadata and storage."""

import itertools
import math
import re

import pytest
import torch

from _helpers import (ALL_DTYPES, DEV, ON_TPU, assert_same, assert_same_error,
                      check, check_scenario, dtype_id, make_tensor, tpu_only)

# --------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------


def _source(layout, dtype):
    if layout == "contiguous":
        return make_tensor((3, 4), dtype)
    if layout == "transposed":
        return make_tensor((4, 3), dtype).t()
    if layout == "strided_slice":
        return make_tensor((6, 8), dtype)[::2, 1::3]
    if layout == "expanded":
        return make_tensor((1, 4), dtype).expand(3, 4)
    if layout == "scalar":
        return make_tensor((), dtype)
    if layout == "empty":
        return make_tensor((0,), dtype)
    if layout == "empty_2d":
        return make_tensor((2, 0, 3), dtype)
    raise AssertionError(layout)


LAYOUTS = ["contiguous", "transposed", "strided_slice", "expanded", "scalar",
           "empty", "empty_2d"]


@tpu_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float8_e4m3fn, torch.int64, torch.bool,
                                   torch.complex64, torch.complex128, torch.complex32])
def test_reading_views_of_a_small_storage_compiles_nothing(dtype):
    # Views of a small storage come down whole and are cut on the host:
    # slices of a growing length (a bucketed graph's narrowed results, a
    # generated sequence) do not compile a gather each.
    base = make_tensor((5, 64), dtype)
    t = base.to(DEV)
    views = [lambda x, n=n: x[:, :n] for n in range(1, 40, 3)]
    views += [lambda x: x.t(), lambda x: x[1::2, 3::5], lambda x: x[2], lambda x: x[:, 7].unsqueeze(1),
              lambda x: x.view(-1)[5:77].view(8, 9)]
    torch.tpu.synchronize()
    before = torch.tpu.compile_stats()["compiles"]
    for view in views:
        got = view(t).cpu()
        want = view(base)
        assert got.shape == want.shape and got.stride() == want.contiguous().stride() or got.stride() == want.stride()
        assert torch.equal(got.contiguous().view(torch.uint8), want.contiguous().view(torch.uint8))
    assert torch.tpu.compile_stats()["compiles"] == before


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_round_trip(dtype, layout):
    src = _source(layout, dtype)
    d = src.to(DEV, copy=True)  # copy=True only matters for the CPU stand-in
    assert d.device.type == torch.device(DEV).type
    assert d.dtype == dtype and d.shape == src.shape
    if layout != "expanded":
        # .to() keeps the strides of dense sources (preserve_format)
        assert d.stride() == torch.empty_like(src).stride()
    back = d.cpu()
    assert back.device.type == "cpu"
    torch.testing.assert_close(back, src, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16,
                                   torch.bfloat16], ids=dtype_id)
def test_round_trip_special_float_values_bit_exact(dtype):
    info = torch.finfo(dtype)
    vals = [0.0, -0.0, 1.0, -1.5, math.inf, -math.inf, math.nan, info.max,
            info.min, info.tiny, info.eps, info.tiny / 4]  # last: subnormal
    src = torch.tensor(vals, dtype=dtype)
    back = src.to(DEV).cpu()
    int_dtype = {2: torch.int16, 4: torch.int32, 8: torch.int64}[src.element_size()]
    assert back.view(int_dtype).tolist() == src.view(int_dtype).tolist()


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8],
                         ids=dtype_id)
def test_round_trip_integer_extremes(dtype):
    info = torch.iinfo(dtype)
    src = torch.tensor([info.min, info.max, 0, 1, info.max - 1], dtype=dtype)
    assert src.to(DEV).cpu().tolist() == src.tolist()


# --------------------------------------------------------------------------
# dtype conversion with .to(device, dtype)
# --------------------------------------------------------------------------

CONVERSIONS = [(s, d) for s, d in itertools.product(ALL_DTYPES, ALL_DTYPES) if s != d]


def _conversion_source(src, dst):
    # keep values inside the range of the target type (out of range
    # float->int conversion is undefined behaviour on CPU)
    low = 0 if torch.uint8 in (src, dst) else -120
    return make_tensor((5, 7), src, low=low, high=120, seed=3)


@pytest.mark.parametrize("src_dtype,dst_dtype", CONVERSIONS,
                         ids=[f"{dtype_id(s)}-{dtype_id(d)}" for s, d in CONVERSIONS])
def test_to_device_with_dtype(src_dtype, dst_dtype):
    x = _conversion_source(src_dtype, dst_dtype)
    expected = x.to(dst_dtype)
    # cpu -> device with conversion
    a = x.to(DEV, dst_dtype)
    # conversion on the device
    b = x.to(DEV).to(dst_dtype)
    # device -> cpu with conversion
    c = x.to(DEV).to("cpu", dst_dtype)
    assert c.device.type == "cpu"
    assert_same(a, expected, rtol=0, atol=0)
    assert_same(b, expected, rtol=0, atol=0)
    assert_same(c, expected, rtol=0, atol=0, check_device=False)


def test_to_dtype_non_contiguous_source():
    x = make_tensor((6, 5), torch.float32, low=-50, high=50)
    check(lambda t: t.t()[::2].to(torch.int32), x)
    check(lambda t: t[:, 1:4].to(torch.bfloat16), x)


# --------------------------------------------------------------------------
# item / tolist / printing
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_item(dtype):
    x = make_tensor((3,), dtype, seed=5)
    for cpu_t in (x[1].clone(), x[2:3].clone()):
        dev_val = cpu_t.to(DEV).item()
        assert_same(dev_val, cpu_t.item(), rtol=0, atol=0)


def test_item_after_computation():
    x = make_tensor((4,))
    cpu_val = (x * 3).sum().item()
    dev_val = (x.to(DEV) * 3).sum().item()
    assert isinstance(dev_val, float)
    assert math.isclose(dev_val, cpu_val, rel_tol=1e-6, abs_tol=1e-6)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_tolist(dtype):
    x = make_tensor((2, 3), dtype, seed=6)
    assert x.to(DEV).tolist() == x.tolist()
    assert x.to(DEV).t().tolist() == x.t().tolist()
    assert x[0, 0].to(DEV).tolist() == x[0, 0].tolist()


def _repr_without_device(t):
    # The device suffix may wrap onto its own line, as it does for CUDA tensors.
    return re.sub(r",\s*device='[a-z]+:\d+'", "", repr(t))


@pytest.mark.parametrize("name,cpu_t", [
    ("float", torch.tensor([1.0, -2.5, 3.25])),
    ("float_special", torch.tensor([math.nan, math.inf, -math.inf, 0.0, 1e-8, 1e8])),
    ("int", torch.tensor([[1, -20], [300, 4]], dtype=torch.int32)),
    ("int64", torch.tensor([5, 6, 7])),
    ("bool", torch.tensor([True, False, True])),
    ("bfloat16", torch.tensor([0.5, 1.5, -3.0], dtype=torch.bfloat16)),
    ("scalar", torch.tensor(2.5)),
    ("empty", torch.zeros(0, 3)),
    ("summarized", torch.arange(3000, dtype=torch.float32).reshape(30, 100) / 7),
])
def test_repr_matches_cpu(name, cpu_t):
    dev_t = cpu_t.to(DEV)
    r = repr(dev_t)
    if ON_TPU:
        assert "device='tpu:0'" in r
    assert _repr_without_device(dev_t) == repr(cpu_t)
    assert str(dev_t) == r


def test_repr_second_device(two_devices):
    t = torch.tensor([1.0, 2.0]).to("tpu:1")
    assert "device='tpu:1'" in repr(t)


# --------------------------------------------------------------------------
# Factories and metadata
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.float16],
                         ids=dtype_id)
def test_empty(dtype):
    for shape in [(2, 3), (0,), (3, 0, 2), ()]:
        t = torch.empty(shape, dtype=dtype, device=DEV)
        ref = torch.empty(shape, dtype=dtype)
        assert t.device.type == torch.device(DEV).type
        assert (t.shape, t.stride(), t.dtype) == (ref.shape, ref.stride(), ref.dtype)
        assert t.is_contiguous()
        # writable and readable
        t.fill_(1)
        assert_same(t, torch.ones(shape, dtype=dtype))


def test_empty_strided_and_memory_format():
    t = torch.empty_strided((2, 3), (1, 2), device=DEV)
    assert t.stride() == (1, 2) and t.shape == (2, 3)
    src = make_tensor((2, 3))
    t.copy_(src.to(DEV))
    assert_same(t, src)
    cl = torch.empty((2, 3, 4, 5), device=DEV, memory_format=torch.channels_last)
    assert cl.stride() == torch.empty((2, 3, 4, 5), memory_format=torch.channels_last).stride()
    like = torch.empty_like(t)
    assert like.stride() == torch.empty_like(src.t().contiguous().t()).stride()


def test_as_strided():
    x = make_tensor((24,))
    check(lambda t: t.as_strided((3, 3), (4, 1), 2), x)
    check(lambda t: t.as_strided((4, 5), (1, 1)), x)  # overlapping windows
    check(lambda t: t[5:].as_strided((2, 2), (3, 1)), x)  # keeps the view's offset
    check(lambda t: t.as_strided((2, 3), (1, 2)).clone(), x, check_stride=True)


def test_view_and_reshape():
    x = make_tensor((4, 6))
    check(lambda t: t.view(3, 8), x)
    check(lambda t: t.view(-1, 2), x)
    check(lambda t: t.reshape(2, 2, 6), x)
    check(lambda t: t.t().reshape(-1), x)  # needs a copy
    check(lambda t: t[:, ::2].reshape(12), x)
    assert_same_error(lambda t: t.t().view(-1), x)


def test_contiguous():
    x = make_tensor((4, 6))
    d = x.to(DEV)
    assert d.contiguous() is d
    check(lambda t: t.t().contiguous(), x, check_stride=True)
    check(lambda t: t[1:, ::2].contiguous(), x, check_stride=True)
    c = d.t().contiguous()
    assert c.is_contiguous()


def test_clone():
    x = make_tensor((4, 6))
    check(lambda t: t.clone(), x, check_stride=True)
    check(lambda t: t.t().clone(), x, check_stride=True)  # preserve_format
    check(lambda t: t[::2, 1:].clone(), x, check_stride=True)
    check(lambda t: t.t().clone(memory_format=torch.contiguous_format), x,
          check_stride=True)

    def independent(t):
        c = t.clone()
        c.add_(1)
        return t, c
    check(independent, x)


def test_resize_():
    def scenario(device):
        out = []
        x = torch.arange(6, dtype=torch.float32, device=device)
        out.append(x.resize_(2, 3).clone())
        out.append(x.shape)
        x.resize_(3)
        out.append(x.clone())
        x.resize_(2, 3)  # grows back inside the existing storage
        out.append(x.clone())
        x.resize_(4, 4)  # grows the storage, the old prefix is kept
        out.append(x.view(-1)[:6].clone())
        out.append(x.untyped_storage().nbytes() >= 64)
        x.fill_(2)
        out.append(x.clone())
        e = torch.empty(0, dtype=torch.int64, device=device)
        e.resize_(5).fill_(3)
        out.append(e.clone())
        out.append([x._version, e._version])
        return out
    check_scenario(scenario)


def test_set_():
    def scenario(device):
        out = []
        x = torch.arange(12, dtype=torch.float32, device=device)
        ptr = x.untyped_storage().data_ptr()

        # set_(source Storage)
        y = torch.empty(0, device=device).set_(x.untyped_storage())
        out += [y.shape, y.clone(), y.untyped_storage().data_ptr() == ptr]
        y[0] = 100.0
        out.append(x.clone())

        # set_(source Storage, offset, size, stride)
        z = torch.empty(0, device=device).set_(x.untyped_storage(), 2, (2, 3), (1, 2))
        out += [z.shape, z.stride(), z.storage_offset(), z.clone()]
        z.mul_(2)
        out.append(x.clone())

        # set_ with a storage viewed through another dtype
        zi = torch.empty(0, dtype=torch.int32, device=device).set_(x.untyped_storage())
        out += [zi.shape, zi.clone()]

        # set_(Tensor)
        w = torch.empty(0, device=device).set_(x.view(3, 4).t())
        out += [w.shape, w.stride(), w.clone()]
        w.add_(1)
        out += [x.clone(), w.untyped_storage().data_ptr() == ptr]
        out.append([x._version, y._version, z._version, w._version])
        return out
    check_scenario(scenario)


# --------------------------------------------------------------------------
# copy_ between layouts and devices
# --------------------------------------------------------------------------


def test_copy_device_noncontiguous_to_device():
    x = make_tensor((4, 6))

    def fn(t):
        dst = torch.empty(6, 4, device=t.device)
        dst.copy_(t.t())
        dst2 = torch.zeros(8, 9, device=t.device)
        dst2[::2, 1::3].copy_(t[:, ::2])  # non-contig -> non-contig
        return dst, dst2
    check(fn, x)


def test_copy_cpu_to_device_view():
    src = make_tensor((2, 3), seed=1)

    def scenario(device):
        base = torch.zeros(4, 6, device=device)
        base[1:3, ::2].copy_(src)           # cpu -> strided view
        base.t()[5].copy_(src[0, :2].repeat(2))  # cpu -> column
        return base, base._version
    check_scenario(scenario)


def test_copy_device_view_to_cpu_noncontiguous():
    x = make_tensor((4, 6))

    def scenario(device):
        t = x.to(device)
        dst = torch.zeros(6, 4).t()  # cpu, non-contiguous
        dst.copy_(t.t().t())
        dst2 = torch.zeros(5, 8)
        dst2[1:4, ::3].copy_(t[1:, 2:5])  # device view -> cpu view
        assert dst.device.type == "cpu" and dst2.device.type == "cpu"
        return t, dst.to(device), dst2.to(device)
    check_scenario(scenario)


def test_copy_broadcasting():
    row = make_tensor((4,), seed=2)
    col = make_tensor((3, 1), seed=3)

    def scenario(device):
        a = torch.zeros(3, 4, device=device)
        a.copy_(row.to(device))            # device -> device broadcast
        b = torch.zeros(3, 4, device=device)
        b.copy_(col)                       # cpu -> device broadcast
        c = torch.zeros(2, 3, 4, device=device)
        c[:, 1:].copy_(row[None].to(device))
        d = torch.zeros(3, 4, device=device)
        d.copy_(torch.tensor(7.5))         # 0-d cpu source
        return a, b, c, d, [a._version, b._version, c._version, d._version]
    check_scenario(scenario)


def test_copy_dtype_conversion():
    f = make_tensor((3, 4), low=-50, high=50, seed=4)
    i = make_tensor((3, 4), torch.int64, seed=5)

    def scenario(device):
        a = torch.zeros(3, 4, dtype=torch.int32, device=device)
        a.copy_(f.to(device))                 # device float -> device int
        b = torch.zeros(3, 4, dtype=torch.float16, device=device)
        b.copy_(i)                            # cpu int64 -> device half
        c = torch.zeros(4, 3, dtype=torch.float64)
        c.copy_(f.to(device).t())             # device float view -> cpu double
        d = torch.zeros(3, 4, dtype=torch.bool, device=device)
        d.copy_(i.to(device))
        e = torch.zeros(4, dtype=torch.bfloat16, device=device)
        e.copy_(f[1].to(device))
        return a, b, c.to(device), d, e
    check_scenario(scenario)


def test_copy_within_same_storage():
    def scenario(device):
        x = torch.arange(10, dtype=torch.float32, device=device)
        x[:4].copy_(x[6:])
        x.view(2, 5)[1].copy_(x.view(2, 5)[0])
        return x, x._version
    check_scenario(scenario)


# --------------------------------------------------------------------------
# Storage sharing and addresses
# --------------------------------------------------------------------------


def test_untyped_storage_shared_by_views():
    x = torch.arange(24, dtype=torch.float32, device=DEV).reshape(4, 6)
    ptr = x.untyped_storage().data_ptr()
    nbytes = x.untyped_storage().nbytes()
    assert nbytes == 24 * 4
    views = [x[1:], x.t(), x[:, 2], x.view(-1), x.view(torch.int32), x[1:3].narrow(1, 2, 2),
             x.unsqueeze(0), x.expand(2, 4, 6)]
    for v in views:
        assert v.untyped_storage().data_ptr() == ptr
        assert v.untyped_storage().nbytes() == nbytes
    assert x.clone().untyped_storage().data_ptr() != ptr

    def offsets(t):
        return [t[1:].storage_offset(), t[:, 2].storage_offset(), t[2:, 3:].storage_offset(),
                t.t()[1:].storage_offset()]
    assert offsets(x) == offsets(x.cpu())


@tpu_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16, torch.uint8],
                         ids=dtype_id)
def test_data_ptr_of_views(dtype):
    x = torch.zeros(4, 6, dtype=dtype, device=DEV)
    isz = x.element_size()
    assert x.data_ptr() != 0
    assert x.data_ptr() == x.untyped_storage().data_ptr()
    assert x[1:].data_ptr() == x.data_ptr() + 6 * isz
    assert x.view(-1)[1:].data_ptr() == x.data_ptr() + isz
    assert x[:, 2].data_ptr() == x.data_ptr() + 2 * isz
    assert x[2:, 3:].data_ptr() == x.data_ptr() + 15 * isz


@tpu_only
def test_live_tensors_do_not_overlap():
    tensors = [torch.empty(n, dtype=dt, device=DEV)
               for n, dt in [(1, torch.float32), (7, torch.uint8), (100, torch.float64),
                             (3, torch.int16), (1000, torch.float32), (1, torch.bool),
                             (17, torch.bfloat16)]]
    tensors.append(torch.ones(5, device=DEV) + 1)
    tensors.append(make_tensor((9,)).to(DEV))
    ranges = sorted((t.data_ptr(), t.data_ptr() + t.numel() * t.element_size())
                    for t in tensors)
    for start, _ in ranges:
        assert start != 0
    for (_, end), (next_start, _) in zip(ranges, ranges[1:]):
        assert end <= next_start, f"overlapping allocations: {ranges}"


@pytest.mark.parametrize("map_location", [None, "cpu"])
def test_save_load_round_trip_keeps_views_shared(tmp_path, map_location):
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4).to("tpu")
    state = {"base": base, "row": base[1], "col_t": base.t()[2], "half": base.to(torch.bfloat16)}
    torch.save(state, tmp_path / "s.pt")
    loaded = torch.load(tmp_path / "s.pt", map_location=map_location)
    expect_device = "cpu" if map_location == "cpu" else "tpu"
    for k, v in state.items():
        assert loaded[k].device.type == expect_device
        assert loaded[k].dtype == v.dtype and loaded[k].shape == v.shape
        torch.testing.assert_close(loaded[k].cpu(), v.cpu(), rtol=0, atol=0)
    # views saved together come back sharing one storage, as on CPU
    loaded["row"].fill_(-1)
    assert loaded["base"][1].cpu().eq(-1).all()
    assert loaded["col_t"].untyped_storage().data_ptr() == loaded["base"].untyped_storage().data_ptr()


def test_untyped_storage_on_device():
    s = torch.UntypedStorage(16, device="tpu")
    assert s.device.type == "tpu" and s.nbytes() == 16
    s.copy_(torch.arange(4, dtype=torch.int32).untyped_storage())
    t = torch.empty(0, dtype=torch.int32, device="tpu").set_(s)
    assert t.cpu().tolist() == [0, 1, 2, 3]
