"""Device-generic tests run through PyTorch's own device-type test machinery.

``instantiate_device_type_tests`` turns every generic class below into one
class per device type: ``TestViewsCPU`` / ``TestViewsTPU`` ... (PyTorch's
PrivateUse1TestBase, renamed to the backend name 'tpu' before instantiation,
see the bottom of the file); test methods get the ``_cpu`` / ``_tpu`` suffix.
Each test receives the device string and builds its inputs on that device;
expected values are always computed on CPU, so the ``...CPU`` classes also
check that the test code itself is right.

``only_for=("cpu", "tpu")``: ``filter_desired_device_types`` maps the renamed
backend name ``'tpu'`` back to ``'privateuse1'``.  PrivateUse1TestBase is only
offered when ``torch.tpu.is_available()`` is true at the moment
``common_device_type`` is first imported, so ``_helpers`` (which imports
torch_tpu) must be imported before it.  With ``TTPU_TEST_DEVICE=cpu`` only the
CPU classes exist.
"""

# _helpers first: it configures and imports torch_tpu before torch.testing._internal
from _helpers import make_tensor  # isort: skip

import functools  # noqa: E402
import unittest  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from torch.testing._internal.common_device_type import (  # noqa: E402
    PrivateUse1TestBase,
    device_type_test_bases,
    deviceCountAtLeast,
    dtypes,
    instantiate_device_type_tests,
)
from torch.testing._internal.common_utils import TestCase  # noqa: E402

ONLY_FOR = ("cpu", "tpu")


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def _flat(obj, path="out"):
    if isinstance(obj, (list, tuple)):
        out = []
        for i, o in enumerate(obj):
            out += _flat(o, f"{path}[{i}]")
        return out
    if isinstance(obj, dict):
        out = []
        for k in obj:
            out += _flat(obj[k], f"{path}[{k!r}]")
        return out
    return [(path, obj)]


def not_lowered_on_tpu(op, reason=None):
    """Strict expected failure on 'tpu' only: ``op`` has no lowering yet.

    On 'tpu' the test must raise NotImplementedError naming ``op`` (then it is
    reported as xfail); if it passes, the test fails so the marker gets removed.
    On CPU the test runs normally.
    """
    reason = reason or f"{op} not lowered yet"

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            if self.device_type != "tpu":
                return fn(self, *args, **kwargs)
            try:
                fn(self, *args, **kwargs)
            except NotImplementedError as e:
                if op not in str(e):
                    raise
                pytest.xfail(reason)
            self.fail(f"XPASS(strict): {reason!r} but the test passed; remove the marker")

        return wrapper

    return deco


class DeviceGenericTestCase(TestCase):
    """Shared comparison helpers (CPU is the oracle)."""

    def check_on_device(self, device, scenario, *, atol=None, rtol=None):
        """``scenario(dev)`` on CPU and on ``device``; the results must match.

        Tensors: same dtype, shape and values, and device results must live on
        ``device``'s type.  Everything else (versions, shapes, strides, bools)
        must be equal.
        """
        expected = scenario("cpu")
        actual = scenario(device)
        fa, fe = _flat(actual), _flat(expected)
        self.assertEqual([p for p, _ in fa], [p for p, _ in fe], msg="structure differs")
        dev_type = torch.device(device).type
        for (path, a), (_, e) in zip(fa, fe):
            if isinstance(e, torch.Tensor):
                self.assertIsInstance(a, torch.Tensor, msg=path)
                self.assertEqual(a.device.type, dev_type, msg=f"{path}: on {a.device}")
                torch.testing.assert_close(
                    a.detach().cpu(), e.detach(), atol=atol, rtol=rtol, equal_nan=True,
                    msg=lambda m, p=path: f"{p}: {m}")
            else:
                self.assertEqual(type(a), type(e), msg=path)
                self.assertEqual(a, e, msg=path)
        return expected, actual

    def check_same_error(self, device, scenario):
        """``scenario`` must raise the same exception type on CPU and ``device``."""
        with self.assertRaises(Exception) as cpu_ctx:
            scenario("cpu")
        with self.assertRaises(Exception) as dev_ctx:
            scenario(device)
        self.assertIs(type(dev_ctx.exception), type(cpu_ctx.exception),
                      msg=f"cpu: {cpu_ctx.exception!r}; {device}: {dev_ctx.exception!r}")
        return cpu_ctx.exception, dev_ctx.exception


def _base(dev, dtype=torch.float32, shape=(4, 6)):
    n = 1
    for s in shape:
        n *= s
    return torch.arange(n, dtype=torch.int64).to(dtype).reshape(shape).to(dev)


# --------------------------------------------------------------------------
# views
# --------------------------------------------------------------------------


class TestViews(DeviceGenericTestCase):

    @dtypes(torch.float32, torch.bfloat16, torch.int32, torch.int64)
    def test_slice_write_through(self, device, dtype):
        def sc(dev):
            base = _base(dev, dtype)
            v = base[1:3, ::2]
            meta = (v.shape, v.stride(), v.storage_offset(), v.is_contiguous())
            v.mul_(3)
            v[0, 1] = 7
            return base, v, meta, base._version, v._version
        self.check_on_device(device, sc)

    @dtypes(torch.float32, torch.int64)
    def test_select_write_through(self, device, dtype):
        def sc(dev):
            base = _base(dev, dtype)
            col = base.select(1, 2)
            row = base.select(0, -1)
            col.fill_(-1)
            row.add_(100)
            return base, col, row, base._version, col._version, row._version
        self.check_on_device(device, sc)

    def test_transpose_write_and_contiguous(self, device):
        def sc(dev):
            base = _base(dev)
            t = base.transpose(0, 1)
            meta = (t.shape, t.stride(), t.is_contiguous())
            t[2].add_(1000)          # column 2 of base
            t[:, 1] = -5.0           # row 1 of base
            c = t.contiguous()
            c.zero_()                # a copy: base unchanged
            return base, t, c, meta, c.stride()
        self.check_on_device(device, sc)

    def test_permute_chain_write(self, device):
        def sc(dev):
            base = _base(dev, shape=(2, 3, 4))
            v = base.permute(2, 0, 1)[1:3].transpose(0, 2)[1]   # chain of views
            v.mul_(-1)
            u = base.unsqueeze(0).flatten(2)[0, 1]              # view of a view
            u[::2] = 0.5
            return base, v, u, v.stride(), v.storage_offset(), base._version
        self.check_on_device(device, sc)

    def test_diagonal_write(self, device):
        def sc(dev):
            base = _base(dev, shape=(4, 5))
            d0 = base.diagonal()
            d1 = base.diagonal(offset=1)
            dm = base.diagonal(offset=-2)
            d1.zero_()
            d0.mul_(10)
            dm.fill_(-3)
            cube = _base(dev, shape=(2, 3, 3))
            dc = cube.diagonal(dim1=1, dim2=2)
            dc.add_(0.25)
            return base, d0, d1, dm, cube, dc, d1.stride(), dm.storage_offset()
        self.check_on_device(device, sc)

    def test_unfold_read_and_write(self, device):
        def sc(dev):
            base = _base(dev, shape=(3, 8))
            overlap = base.unfold(1, 3, 2)           # overlapping windows: read only
            r = overlap.sum(-1)
            tiles = base.unfold(1, 2, 2)             # disjoint windows: writable
            tiles[:, :, 0] = -1.0
            tiles[1].mul_(2)
            return base, overlap.clone(), r, tiles, overlap.stride(), tiles.shape
        self.check_on_device(device, sc)

    def test_as_strided_read_and_write(self, device):
        def sc(dev):
            base = _base(dev)
            win = base.as_strided((3, 3), (2, 1), 1)       # overlapping read
            read = win * 1
            blk = base.as_strided((2, 2), (6, 1), 3)        # disjoint write
            blk.fill_(0.0)
            blk2 = base.view(-1).as_strided((3,), (5,), 2)
            blk2.add_(0.5)
            return base, read, blk, blk2, blk2.storage_offset()
        self.check_on_device(device, sc)

    def test_view_dtype_reinterprets_bytes(self, device):
        def sc(dev):
            base = torch.tensor([1.0, -2.0, 0.5, 3.25], device=dev)
            as_int = base.view(torch.int32)
            as_bytes = base.view(torch.uint8)
            as_int[1] = 0x3F800000                 # bit pattern of 1.0f
            as_bytes[0] = 7                         # poke the low byte of 1.0f
            h = torch.tensor([1.5, -1.0, 2.0, 8.0], device=dev, dtype=torch.bfloat16)
            h16 = h.view(torch.int16)
            h16.add_(1)                            # next representable values
            return base, as_int, as_bytes, as_bytes.shape, h, h16
        self.check_on_device(device, sc)

    def test_version_counters(self, device):
        def sc(dev):
            base = torch.zeros(3, 4, device=dev)
            versions = [base._version]
            v = base[1]
            v.add_(1)
            versions.append((base._version, v._version))
            base.mul_(2)
            versions.append((base._version, v._version))
            torch.add(base, 1, out=base)
            versions.append(base._version)
            w = base.t()
            w[0, 0] = 9.0                           # setitem bumps the shared counter
            versions.append((base._version, w._version))
            _ = base + 1                           # out of place: no bump
            versions.append(base._version)
            return base, versions
        self.check_on_device(device, sc)

    def test_out_into_view(self, device):
        def sc(dev):
            base = torch.zeros(4, 4, device=dev)
            a = _base(dev, shape=(4, 2))
            torch.mul(a, 2, out=base[:, 1:3])
            torch.neg(a[:2, 0], out=base.diagonal()[2:])
            return base, base._version
        self.check_on_device(device, sc)

    def test_expand_is_a_view(self, device):
        def sc(dev):
            src = _base(dev, shape=(1, 4))
            e = src.expand(3, 4)
            meta = (e.stride(), e.is_contiguous(), e.data_ptr() == src.data_ptr())
            src.add_(1)                    # visible through the expanded view
            return e.clone(), meta, e._version
        self.check_on_device(device, sc)

    def test_detach_shares_storage(self, device):
        def sc(dev):
            x = torch.ones(2, 3, device=dev, requires_grad=True)
            y = x * 2
            d = y.detach()
            d[0, 0] = 5.0
            return y.detach().clone(), d._version == y._version, d.requires_grad
        self.check_on_device(device, sc)


# --------------------------------------------------------------------------
# indexing
# --------------------------------------------------------------------------


class TestIndexing(DeviceGenericTestCase):

    def test_basic_getitem(self, device):
        def sc(dev):
            x = _base(dev, shape=(3, 4, 5))
            return (x[1], x[-1, 2], x[:, 1:4:2], x[..., -1], x[None, 1, ..., None],
                    x[1:, :, ::3], x[2, 3, 4], x[1][2][0:2], x[:, -2:].shape)
        self.check_on_device(device, sc)

    @dtypes(torch.int64, torch.int32)
    def test_advanced_getitem(self, device, dtype):
        def sc(dev):
            x = _base(dev, shape=(4, 5, 6))
            i = torch.tensor([0, 3, 1, 3], device=dev, dtype=dtype)
            j = torch.tensor([[1], [4]], device=dev, dtype=dtype)
            return (x[i],                 # single tensor
                    x[i, :, 2],           # separated by a slice: indexed dims go first
                    x[:, j, i],           # adjacent, broadcast to (2, 4)
                    x[[1, 2], [0, 4]],    # python lists
                    x[i, 1:3],            # tensor then slice
                    x[..., i])            # ellipsis
        self.check_on_device(device, sc)

    def test_bool_mask_getitem(self, device):
        def sc(dev):
            x = _base(dev, shape=(4, 5))
            full = x[x % 3 == 1]
            rows = x[torch.tensor([True, False, True, True], device=dev)]
            cols = x[:, torch.tensor([False, True, False, True, True], device=dev)]
            nz = (x > 12).nonzero()
            return full, rows, cols, nz, x.masked_select(x < 4)
        self.check_on_device(device, sc)

    @dtypes(torch.float32, torch.int64, torch.bfloat16)
    def test_setitem(self, device, dtype):
        def sc(dev):
            x = _base(dev, dtype, shape=(4, 5))
            x[0] = 1
            x[1, 1:4] = torch.tensor([7, 8, 9], device=dev).to(dtype)
            x[:, 0] = torch.tensor(2, device=dev).to(dtype)       # 0-d broadcast
            x[torch.tensor([2, 3], device=dev), torch.tensor([4, 0], device=dev)] = 11
            x[x > 15] = -1
            x[[3], :] = torch.arange(5, device=dev).to(dtype)
            return x, x._version
        self.check_on_device(device, sc)

    def test_setitem_through_view(self, device):
        def sc(dev):
            base = _base(dev, shape=(4, 6))
            v = base[:, 1::2]                       # (4, 3) strided view
            v[torch.tensor([0, 2], device=dev)] = 0.0
            v[v > 20] = -1.0
            return base, v, base._version
        self.check_on_device(device, sc)

    @dtypes(torch.float32, torch.int64)
    def test_index_put_accumulate(self, device, dtype):
        def sc(dev):
            x = torch.zeros(5, 3, device=dev, dtype=dtype)
            idx = torch.tensor([0, 2, 0, 4, 2, 0], device=dev)
            vals = _base(dev, dtype, shape=(6, 3))
            x.index_put_((idx,), vals, accumulate=True)
            y = torch.zeros(4, 4, device=dev, dtype=dtype)
            r = torch.tensor([1, 1, 3], device=dev)
            c = torch.tensor([2, 2, 0], device=dev)
            y.index_put_((r, c), torch.tensor([1, 2, 3], device=dev).to(dtype), accumulate=True)
            z = torch.zeros(3, device=dev, dtype=dtype)
            z.index_put_((torch.tensor([True, False, True], device=dev),),
                         torch.tensor(5, device=dev).to(dtype), accumulate=True)
            return x, y, z
        self.check_on_device(device, sc)

    def test_index_put_no_accumulate(self, device):
        def sc(dev):
            x = torch.zeros(4, 3, device=dev)
            x.index_put_((torch.tensor([3, 1], device=dev),), torch.ones(2, 3, device=dev))
            out = torch.index_put(x, (torch.tensor([0], device=dev), torch.tensor([2], device=dev)),
                                  torch.tensor(9.0, device=dev))
            return x, out
        self.check_on_device(device, sc)

    def test_gather_scatter_index_select(self, device):
        def sc(dev):
            x = _base(dev, shape=(3, 4))
            idx = torch.tensor([[0, 3], [1, 1], [2, 0]], device=dev)
            g = x.gather(1, idx)
            s = torch.zeros(3, 4, device=dev).scatter(1, idx[:, :1], 1.0)
            sa = torch.zeros(3, 4, device=dev).scatter_add(1, idx, torch.ones(3, 2, device=dev))
            sel = x.index_select(0, torch.tensor([2, 0], device=dev))
            f = x.clone().index_fill_(1, torch.tensor([1, 3], device=dev), -2.0)
            return g, s, sa, sel, f
        self.check_on_device(device, sc)

    def test_masked_fill_and_where(self, device):
        def sc(dev):
            x = _base(dev, shape=(3, 4))
            m = x % 2 == 0
            return (x.masked_fill(m, -1.0),
                    x.masked_fill(m, torch.tensor(3.5, device=dev)),
                    torch.where(m, x, torch.zeros_like(x)),
                    torch.where(m, x, 0.5),
                    torch.where(m))
        self.check_on_device(device, sc)

    def test_index_errors(self, device):
        # out of range index: IndexError on CPU; data-dependent checks may differ
        # on an asynchronous device, so only the python-level bound is compared
        self.check_same_error(device, lambda dev: _base(dev)[4])
        self.check_same_error(device, lambda dev: _base(dev)[:, 7])

    def test_index_add(self, device):
        def sc(dev):
            x = torch.zeros(4, 3, device=dev)
            src = _base(dev, shape=(3, 3))
            a = x.index_add_(0, torch.tensor([0, 2, 0], device=dev), src)      # duplicates add up
            b = torch.ones(2, 4, device=dev, dtype=torch.int64).index_add(
                1, torch.tensor([3, 3, 1], device=dev), _base(dev, torch.int64, (2, 3)), alpha=2)
            return a, b
        self.check_on_device(device, sc)

    def test_index_copy(self, device):
        def sc(dev):
            x = torch.zeros(4, 3, device=dev)
            return x.index_copy_(0, torch.tensor([3, 1], device=dev), torch.ones(2, 3, device=dev))
        self.check_on_device(device, sc)

    def test_take(self, device):
        def sc(dev):
            return _base(dev).take(torch.tensor([[0, 23], [7, -1]], device=dev))
        self.check_on_device(device, sc)

    def test_masked_scatter(self, device):
        def sc(dev):
            x = _base(dev, shape=(2, 3))
            return x.masked_scatter(x > 2, torch.full((6,), -1.0, device=dev))
        self.check_on_device(device, sc)


# --------------------------------------------------------------------------
# type promotion
# --------------------------------------------------------------------------

# a representative subset of pairs (each pair compiles its own executables)
_PROMO_PAIRS = (
    (torch.bool, torch.bool), (torch.bool, torch.uint8), (torch.bool, torch.float16),
    (torch.uint8, torch.int8), (torch.uint8, torch.int64), (torch.int8, torch.int16),
    (torch.int16, torch.int32), (torch.int32, torch.int64), (torch.int32, torch.float16),
    (torch.int64, torch.bfloat16), (torch.int64, torch.float32), (torch.float16, torch.bfloat16),
    (torch.bfloat16, torch.float32), (torch.float16, torch.float64), (torch.float32, torch.float64),
    (torch.uint8, torch.float32),
)


def _values(dtype, dev, shape=(2, 3), seed=0):
    lo, hi = (1, 5) if not dtype.is_floating_point else (None, None)
    return make_tensor(shape, dtype, low=lo, high=hi, seed=seed).to(dev)


class TestTypePromotion(DeviceGenericTestCase):

    def _binary_table(self, device, fn, *, atol=None, rtol=None, skip=()):
        for a_dt, b_dt in _PROMO_PAIRS:
            for x_dt, y_dt in ((a_dt, b_dt), (b_dt, a_dt)):
                if (x_dt, y_dt) in skip:
                    continue
                with self.subTest(x=x_dt, y=y_dt):
                    def sc(dev):
                        x = _values(x_dt, dev, seed=1)
                        y = _values(y_dt, dev, shape=(3,), seed=2)   # broadcast
                        out = fn(x, y)
                        return out, out.dtype, torch.result_type(x, y)
                    exp, act = self.check_on_device(device, sc, atol=atol, rtol=rtol)
                    self.assertEqual(act[1], act[2])   # result dtype == result_type

    def test_add_table(self, device):
        def add(x, y):
            both_bool = x.dtype == y.dtype == torch.bool
            return torch.logical_or(x, y) if both_bool else x + y   # bool + bool: logical or
        self._binary_table(device, add)

    def test_mul_table(self, device):
        self._binary_table(device, torch.mul)

    def test_true_div_table(self, device):
        # int / int is true division into the default float dtype
        for a_dt, b_dt in _PROMO_PAIRS:
            with self.subTest(x=a_dt, y=b_dt):
                def sc(dev):
                    x = _values(a_dt, dev, seed=3)
                    y = _values(b_dt, dev, shape=(3,), seed=4)
                    if y.dtype == torch.bool:
                        y = torch.ones_like(y)
                    out = x / y
                    return out, out.dtype
                self.check_on_device(device, sc)

    def test_comparison_table(self, device):
        for a_dt, b_dt in _PROMO_PAIRS:
            with self.subTest(x=a_dt, y=b_dt):
                def sc(dev):
                    x = _values(a_dt, dev, seed=5)
                    y = _values(b_dt, dev, shape=(3,), seed=5)
                    return x == y, x < y, x >= y, x != y, torch.maximum(x, y)
                self.check_on_device(device, sc)

    def test_where_table(self, device):
        for a_dt, b_dt in _PROMO_PAIRS:
            with self.subTest(x=a_dt, y=b_dt):
                def sc(dev):
                    c = torch.tensor([True, False, True], device=dev)
                    x = _values(a_dt, dev, seed=6)
                    y = _values(b_dt, dev, shape=(3,), seed=7)
                    out = torch.where(c, x, y)
                    return out, out.dtype
                self.check_on_device(device, sc)

    def test_scalar_and_zero_dim(self, device):
        def sc(dev):
            i32 = torch.tensor([1, 2, 3], device=dev, dtype=torch.int32)
            f16 = torch.tensor([1.5, 2.0, -3.0], device=dev, dtype=torch.float16)
            u8 = torch.tensor([250, 3, 0], device=dev, dtype=torch.uint8)
            b = torch.tensor([True, False, True], device=dev)
            zf64 = torch.tensor(2.5, device=dev, dtype=torch.float64)
            zi64 = torch.tensor(7, device=dev)
            outs = [i32 + 2.5,           # int tensor + python float -> default float
                    i32 * 3,             # stays int32
                    f16 * 2.5,           # stays float16
                    u8 + 10,             # uint8 wraps
                    b + 1,               # bool + int -> int64
                    b * 1.5,             # -> float32
                    i32 + zf64,          # 0-d float of higher category -> default float
                    f16 + zf64,          # same category: dimensioned tensor wins
                    i32 + zi64,          # 0-d int does not widen int32
                    f16 + zi64,
                    i32 > 1.5, u8 == 250]
            return outs, [o.dtype for o in outs]
        self.check_on_device(device, sc)

    def test_integer_division_modes(self, device):
        def sc(dev):
            a = torch.tensor([7, -7, 6, -1], device=dev)
            b = torch.tensor([2, 2, -4, 3], device=dev)
            return (torch.div(a, b, rounding_mode="trunc"),
                    torch.div(a, b, rounding_mode="floor"),
                    torch.div(a, b), torch.remainder(a, b), torch.fmod(a, b))
        self.check_on_device(device, sc)

    def test_floor_divide_operator(self, device):
        self.check_on_device(device, lambda dev: torch.tensor([7, -7, 6], device=dev) // 2)

    def test_int64_index_math(self, device):
        def sc(dev):
            i = torch.arange(6, device=dev)
            big = i * (2 ** 40) + 7                      # beyond int32
            flat = i[:, None] * 4 + torch.arange(4, device=dev)   # row-major linear index
            rows = torch.div(flat, 4, rounding_mode="floor")
            cols = flat % 4
            return (big, big.sum(), flat, rows, cols, flat.dtype, big - 7,
                    i.cumsum(0), torch.tensor(2 ** 62, device=dev) + 1)
        self.check_on_device(device, sc)

    def test_bool_logic(self, device):
        def sc(dev):
            a = torch.tensor([True, True, False, False], device=dev)
            b = torch.tensor([True, False, True, False], device=dev)
            i = torch.tensor([0, 3, -1, 2], device=dev)
            return (a & b, a | b, a ^ b, ~a, torch.logical_and(a, i), torch.logical_or(i, b),
                    torch.logical_not(i), torch.logical_xor(a, i.float()),
                    a.sum(), a.any(), b.all(), (a & b).dtype, a.int() + b)
        self.check_on_device(device, sc)

    def test_inplace_promotion_error(self, device):
        # int64 tensor += float tensor is refused on CPU; the device must refuse too
        self.check_same_error(
            device,
            lambda dev: torch.ones(2, device=dev, dtype=torch.int64).add_(torch.ones(2, device=dev)),
        )

    def test_inplace_allowed_downcast(self, device):
        def sc(dev):
            f = torch.tensor([1.5, 2.5], device=dev)
            f.add_(torch.tensor([1, 2], device=dev))             # float += int: ok
            h = torch.tensor([1.0, 2.0], device=dev, dtype=torch.float16)
            h.mul_(torch.tensor([3.0, 0.5], device=dev))          # f16 *= f32: computes in f32
            return f, h
        self.check_on_device(device, sc)


# --------------------------------------------------------------------------
# creation
# --------------------------------------------------------------------------


class TestCreation(DeviceGenericTestCase):

    @dtypes(torch.float32, torch.bfloat16, torch.float16, torch.int8, torch.int64, torch.bool)
    def test_zeros_ones_full(self, device, dtype):
        def sc(dev):
            fill = True if dtype == torch.bool else 3
            outs = (torch.zeros(2, 3, device=dev, dtype=dtype),
                    torch.ones((4,), device=dev, dtype=dtype),
                    torch.full((2, 2), fill, device=dev, dtype=dtype),
                    torch.zeros(0, 3, device=dev, dtype=dtype))
            return outs, [o.dtype for o in outs]
        self.check_on_device(device, sc)

    def test_full_infers_dtype(self, device):
        def sc(dev):
            outs = (torch.full((2,), 7, device=dev), torch.full((2,), 0.5, device=dev),
                    torch.full((2,), False, device=dev), torch.tensor([1, 2], device=dev),
                    torch.tensor([1.0, 2], device=dev), torch.tensor(3, device=dev))
            return outs, [o.dtype for o in outs]
        self.check_on_device(device, sc)

    def test_arange(self, device):
        def sc(dev):
            outs = (torch.arange(5, device=dev), torch.arange(2, 11, 3, device=dev),
                    torch.arange(10, 0, -3, device=dev), torch.arange(0, 1, 0.125, device=dev),
                    torch.arange(-1.0, 1.0, 0.5, device=dev, dtype=torch.float64),
                    torch.arange(6, device=dev, dtype=torch.int16),
                    torch.arange(0, 2, 0.25, device=dev, dtype=torch.bfloat16))
            return outs, [o.dtype for o in outs]
        self.check_on_device(device, sc)

    def test_linspace(self, device):
        def sc(dev):
            return (torch.linspace(0, 1, 7, device=dev), torch.linspace(-2, 2, 1, device=dev),
                    torch.linspace(3, -3, 5, device=dev, dtype=torch.float64),
                    torch.linspace(0, 10, 5, device=dev, dtype=torch.int64),
                    torch.linspace(0, 1, 0, device=dev))
        self.check_on_device(device, sc)

    def test_like_and_new(self, device):
        def sc(dev):
            src = torch.zeros(3, 2, device=dev, dtype=torch.int8).t()   # non-contiguous
            e = torch.empty_like(src)
            ef = torch.empty_like(src, memory_format=torch.contiguous_format)
            outs = (torch.zeros_like(src), torch.ones_like(src, dtype=torch.bfloat16),
                    torch.full_like(src, 5), src.new_ones(3), src.new_zeros((1, 2)),
                    src.new_full((2,), -4), src.new_tensor([1, 2, 3]))
            meta = [(o.dtype, o.shape, o.stride()) for o in outs]
            same_type = e.device.type == torch.device(dev).type
            return (outs, meta, (e.dtype, e.shape, e.stride(), same_type),
                    (ef.stride(), ef.is_contiguous()))
        self.check_on_device(device, sc)

    def test_tensor_from_host_data(self, device):
        def sc(dev):
            return (torch.tensor([[1, 2], [3, 4]], device=dev, dtype=torch.int8),
                    torch.as_tensor([0.5, 1.5], device=dev),
                    torch.tensor([True, False], device=dev),
                    torch.tensor([], device=dev),
                    torch.tensor(2.5, device=dev, dtype=torch.float16))
        self.check_on_device(device, sc)

    def test_eye(self, device):
        self.check_on_device(device, lambda dev: (torch.eye(3, device=dev),
                                                  torch.eye(2, 4, device=dev, dtype=torch.int64)))

    @dtypes(torch.float32, torch.bfloat16, torch.float16, torch.float64)
    def test_rand_seeded(self, device, dtype):
        # device generators differ from CPU's: compare reproducibility and range
        def draw():
            torch.manual_seed(1234)
            return (torch.rand(64, device=device, dtype=dtype),
                    torch.randn(64, device=device, dtype=dtype),
                    torch.randint(-3, 4, (64,), device=device))
        a, b = draw(), draw()
        for x, y in zip(a, b):
            self.assertEqual(x.device.type, torch.device(device).type)
            self.assertEqual(x.cpu(), y.cpu(), atol=0, rtol=0)
        r, n, i = (t.cpu() for t in a)
        self.assertEqual((r.dtype, n.dtype, i.dtype), (dtype, dtype, torch.int64))
        self.assertTrue(bool(((r >= 0) & (r < 1)).all()))
        self.assertTrue(bool(((i >= -3) & (i < 4)).all()))
        self.assertGreater(len(set(i.tolist())), 3)
        self.assertLess(abs(float(n.double().mean())), 0.6)
        c = torch.rand(64, device=device, dtype=dtype)           # advances the state
        self.assertNotEqual(c.cpu(), a[0].cpu())

    def test_generator_object(self, device):
        g1 = torch.Generator(device=device).manual_seed(7)
        g2 = torch.Generator(device=device).manual_seed(7)
        x = torch.rand(16, device=device, generator=g1)
        y = torch.rand(16, device=device, generator=g2)
        self.assertEqual(x.cpu(), y.cpu(), atol=0, rtol=0)
        z = torch.rand(16, device=device, generator=g1)
        self.assertNotEqual(x.cpu(), z.cpu())

    @deviceCountAtLeast(2)
    def test_device_index_args(self, devices):
        d1 = devices[1]
        x = torch.zeros(2, device=d1) + torch.ones(2, device=d1)
        self.assertEqual(x.device, torch.device(d1))
        y = torch.arange(3, device=torch.device(d1))
        self.assertEqual(y.device, torch.device(d1))
        self.assertEqual(torch.empty_like(y).device, torch.device(d1))
        self.assertEqual(x.cpu(), torch.ones(2))


# instantiate_test() initialises the PrivateUse1 base (its setUpClass renames
# device_type 'privateuse1' -> 'tpu'), so without this the first class would be
# named ...PRIVATEUSE1 and the later ones ...TPU.  Rename up front: all ...TPU.
if PrivateUse1TestBase in device_type_test_bases:
    PrivateUse1TestBase.setUpClass()

for _cls in (TestViews, TestIndexing, TestTypePromotion, TestCreation):
    instantiate_device_type_tests(_cls, globals(), only_for=ONLY_FOR)
del _cls

if __name__ == "__main__":
    unittest.main()
