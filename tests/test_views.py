"""Views and in-place mutation.

Each scenario builds its tensors on a device, mutates them through views and
returns snapshots (base, the view, sibling views, version counters) after
every step.  The identical scenario runs on CPU and on DEV and the snapshots
must match exactly.
"""

import math

import pytest
import torch

from _helpers import (DEV, check, check_scenario, dtype_id, make_tensor, sync, tpu_only)
from _helpers import each_eager_mode  # noqa: F401  (every test runs in STRICT, DEBUG and DEFER_AND_FUSE)

# --------------------------------------------------------------------------
# View kinds, all taken from a (4, 6) base
# --------------------------------------------------------------------------

VIEWS = {
    "slice": lambda b: b[1:3],
    "slice_step": lambda b: b[:, ::2],
    "slice_step_2d": lambda b: b[::2, 1:5:2],
    "select_row": lambda b: b[2],
    "select_col": lambda b: b[:, 3],
    "narrow": lambda b: b.narrow(1, 1, 3),
    "transpose": lambda b: b.transpose(0, 1),
    "t": lambda b: b.t(),
    "permute": lambda b: b.view(2, 2, 6).permute(2, 0, 1),
    "diagonal": lambda b: b.diagonal(),
    "diagonal_offset": lambda b: b.diagonal(offset=1),
    "unfold": lambda b: b.view(-1).unfold(0, 3, 4),       # windows with gaps
    "as_strided": lambda b: b.as_strided((3, 2), (7, 2), 1),
    "view": lambda b: b.view(3, 8),
    "view_flat": lambda b: b.view(-1),
    "reshape": lambda b: b.reshape(2, 12),                # contiguous: a view
    "unsqueeze": lambda b: b.unsqueeze(1),
    "squeeze": lambda b: b[1:2].squeeze(0),
    "split": lambda b: b.split(2, dim=1)[1],
    "split_sizes": lambda b: torch.split(b, [1, 3], dim=0)[1],
    "chunk": lambda b: b.chunk(3, dim=1)[2],
    "view_of_view": lambda b: b[1:].t()[::2],
    "view_chain": lambda b: b.view(2, 12)[:, 3:9].view(2, 2, 3).select(2, 1),
    # not views: mutation must not reach the base
    "expand_clone": lambda b: b[0].expand(3, 6).clone(),
    "reshape_copy": lambda b: b.t().reshape(-1),
}

INT_VIEWS = ["slice_step", "select_col", "transpose", "diagonal", "split", "view_chain"]

VIEW_CASES = ([(name, torch.float32) for name in VIEWS]
              + [(name, torch.int64) for name in INT_VIEWS])


def _src(shape, k, dtype, device):
    """Deterministic source values of a given shape."""
    n = math.prod(shape)
    return (torch.arange(n, dtype=dtype, device=device) * k - 5).reshape(shape)


def _inplace_steps(v, device):
    dt = v.dtype
    return [
        ("add_", lambda: v.add_(2)),
        ("add_tensor_alpha", lambda: v.add_(_src(v.shape, 1, dt, device), alpha=2)),
        ("mul_", lambda: v.mul_(3)),
        ("clamp_", lambda: v.clamp_(5, 100)),
        ("setitem_scalar", lambda: v.__setitem__(0, 11)),
        ("setitem_tensor", lambda: v.__setitem__(-1, _src(v[-1].shape, 2, dt, device))),
        ("copy_device", lambda: v.copy_(_src(v.shape, 3, dt, device))),
        ("copy_from_cpu", lambda: v.copy_(_src(v.shape, 4, dt, "cpu"))),
        ("out", lambda: torch.add(_src(v.shape, 1, dt, device), _src(v.shape, 2, dt, device),
                                  out=v)),
        ("out_aliased", lambda: torch.mul(v, 2, out=v)),
        ("fill_", lambda: v.fill_(9)),
        ("zero_", lambda: v.zero_()),
        ("add_broadcast", lambda: v.add_(_src(v.shape[-1:], 1, dt, device))),
    ]


@pytest.mark.parametrize("view_name,dtype", VIEW_CASES,
                         ids=[f"{n}-{dtype_id(d)}" for n, d in VIEW_CASES])
def test_inplace_through_view(view_name, dtype):
    make_view = VIEWS[view_name]

    def scenario(device):
        base = torch.arange(24, dtype=dtype, device=device).reshape(4, 6)
        siblings = [base.view(-1), base[1:3, ::2], base.t()]
        v = make_view(base)
        snapshots = {}
        for label, step in _inplace_steps(v, device):
            ret = step()
            assert ret is v or label.startswith("setitem")
            snapshots[label] = {
                "base": base.clone(),
                "view": v.clone(),
                "siblings": [s.clone() for s in siblings],
                "versions": [base._version, v._version] + [s._version for s in siblings],
            }
        # later reads, through fresh views and host transfers
        snapshots["later"] = {
            "base_list": base.tolist(),
            "view_list": v.tolist(),
            "fresh_view": base[1:, 2:].clone(),
            "sum": base.sum(),
        }
        return snapshots

    check_scenario(scenario)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=dtype_id)
def test_inplace_on_every_split_chunk(dtype):
    """xla#3072: in-place ops on split/chunk outputs must reach the base."""
    def scenario(device):
        base = torch.arange(24, dtype=dtype, device=device).reshape(4, 6)
        for i, c in enumerate(base.split(2, dim=1)):
            c.mul_(i + 2)
        after_split = base.clone()
        for i, c in enumerate(torch.chunk(base, 2, dim=0)):
            c.add_(10 * (i + 1))
        after_chunk = base.clone()
        a, b = base.split([1, 3], dim=0)[:2]
        a.copy_(b[0])
        b[1:].fill_(-1)
        return [after_split, after_chunk, base, a, b, base._version, a._version]
    check_scenario(scenario)


# --------------------------------------------------------------------------
# view(dtype): bit-exact reinterpretation
# --------------------------------------------------------------------------


def _float_base(device, shape=(3, 4)):
    # normal (non-subnormal, non-nan) float32 values
    n = math.prod(shape)
    return (torch.arange(n, dtype=torch.float32, device=device) * 1.5 - 4.25).reshape(shape)


def test_view_dtype_float32_int32():
    def scenario(device):
        f = _float_base(device)
        i = f.view(torch.int32)
        out = [i.shape, i.clone()]
        i.add_(1)                 # bump the mantissa through the int view
        out += [f.clone(), i.clone()]
        f.mul_(2)                 # float op, read through the int view
        out += [i.clone()]
        i[1:2].fill_(0x3F800000)  # bit pattern of 1.0f
        out += [f.clone()]
        torch.add(i, 3, out=i)
        out += [f.clone(), i.clone(), [f._version, i._version]]
        return out
    check_scenario(scenario, rtol=0, atol=0)


def test_view_dtype_int32_float32():
    def scenario(device):
        i = _float_base(device).view(torch.int32).clone()  # int tensor with float bits
        f = i.view(torch.float32)
        f.mul_(0.5)
        out = [i.clone()]
        i.sub_(2)
        out += [f.clone(), i.clone(), [f._version, i._version]]
        return out
    check_scenario(scenario, rtol=0, atol=0)


def test_view_dtype_float32_int16():
    def scenario(device):
        f = _float_base(device)
        h = f.view(torch.int16)
        out = [h.shape, h.stride(), h.clone()]
        h[:, 0::2].zero_()        # low halves (little endian)
        out.append(f.view(torch.int32).clone())
        h[:, 1::2].add_(1)        # high halves
        out.append(f.view(torch.int32).clone())
        f.add_(1.0)
        out += [h.clone(), f.clone()]
        return out
    check_scenario(scenario, rtol=0, atol=0)


def test_view_dtype_float32_uint8():
    def scenario(device):
        f = _float_base(device)
        b = f[1:].view(torch.uint8)
        out = [b.shape, b.clone()]
        b[:, 0::4].fill_(255)
        b[:, 1::4].add_(200)      # wraps around like CPU uint8 arithmetic
        out += [f.view(torch.int32).clone(), b.clone(), f._version]
        return out
    check_scenario(scenario, rtol=0, atol=0)


def test_view_dtype_bfloat16_int16():
    def scenario(device):
        f = _float_base(device).to(torch.bfloat16)
        h = f.view(torch.int16)
        h.add_(1)
        out = [f.clone()]
        f.mul_(2)
        out += [h.clone(), f.view(torch.uint8).clone()]
        return out
    check_scenario(scenario, rtol=0, atol=0)


# --------------------------------------------------------------------------
# Sync points (xla#3291) and expand (xla#5839)
# --------------------------------------------------------------------------

SYNCS = {
    "none": lambda t: None,
    "cpu": lambda t: t.cpu(),
    "item": lambda t: t.sum().item(),
    "tolist": lambda t: t.tolist(),
    "synchronize": lambda t: sync(),
}


@pytest.mark.parametrize("sync_kind", list(SYNCS))
def test_mutate_view_after_sync_point(sync_kind):
    """xla#3291: a view mutated after a sync point must update its base."""
    do_sync = SYNCS[sync_kind]

    def scenario(device):
        base = torch.arange(12, dtype=torch.float32, device=device).view(3, 4)
        v = base[1:3]
        do_sync(v)
        v.add_(1)
        after_view = base.clone()
        do_sync(base)
        col = base[:, 1]
        col.mul_(2)
        do_sync(col)
        base.add_(100)            # in-place on the base after syncing the views
        return [after_view, base.tolist(), v.tolist(), col.clone(),
                [base._version, v._version, col._version]]
    check_scenario(scenario)


def test_expand_clone_then_inplace():
    """xla#5839: cloning an expanded view gives independent, writable memory."""
    def scenario(device):
        x = torch.arange(3, dtype=torch.float32, device=device)
        e = x.expand(4, 3)
        c = e.clone()
        c.add_(torch.arange(12, dtype=torch.float32, device=device).view(4, 3))
        c[1].mul_(-1)
        col = x[:, None].expand(3, 5).clone()
        col[0].fill_(7)
        return [x, e, c, c.stride(), col, [x._version, c._version, col._version]]
    check_scenario(scenario)


def test_inplace_on_base_is_seen_by_expanded_view():
    """xla#5839: an expanded view reflects later in-place updates of its base."""
    def scenario(device):
        x = torch.arange(3, dtype=torch.float32, device=device)
        e = x.expand(4, 3)
        e2 = x.unsqueeze(0).expand(2, 3)
        x.add_(1)
        out = [e.clone(), e.sum(), e.tolist()]
        x.mul_(2)
        x[1] = 10
        out += [e.clone(), e2.clone(), e[2].clone(), e.t().clone(), e2._version]
        return out
    check_scenario(scenario)


# --------------------------------------------------------------------------
# out= edge cases and version counters
# --------------------------------------------------------------------------


def test_out_resizes_and_bumps_version():
    a = make_tensor((2, 3), seed=1)
    b = make_tensor((2, 3), seed=2)

    def scenario(device):
        da, db = a.to(device, copy=True), b.to(device, copy=True)
        out = torch.empty(0, device=device)
        v0 = out._version
        r = torch.add(da, db, out=out)
        res = [r is out, out.shape, out.clone(), out._version - v0]
        base = torch.zeros(3, 4, device=device)
        torch.mul(da, db, out=base[1:, 1:].t().t())
        res += [base, base._version]
        da.copy_(db)
        res += [da, da._version]
        return res
    check_scenario(scenario)


# --------------------------------------------------------------------------
# Autograd through in-place ops on views
# --------------------------------------------------------------------------


def test_autograd_inplace_on_slice_backward():
    x_cpu = make_tensor((4, 3), requires_grad=True)
    x_dev = x_cpu.detach().to(DEV).requires_grad_()
    for x in (x_cpu, x_dev):
        y = x * 2
        y[1:].mul_(3)
        y.sum().backward()
    assert x_dev.grad is not None and x_dev.grad.device.type == torch.device(DEV).type
    torch.testing.assert_close(x_dev.grad.cpu(), x_cpu.grad)


AUTOGRAD_CASES = {
    "slice_mul": lambda x: _with(x * 2, lambda y: y[1:].mul_(3)),
    "column_add": lambda x: _with(x * 2, lambda y: y[:, 0].add_(x[:, 1] * 2)),
    "diagonal_mul": lambda x: _with(x.clone(), lambda y: y.diagonal().mul_(x.diagonal())),
    "strided_mul_view": lambda x: _with(x.exp() * 1, lambda y: y.view(-1)[::2].mul_(x.view(-1)[1::2])),
    "narrow_and_copy": lambda x: _with(x * 1, lambda y: (y.narrow(0, 0, 2).mul_(3),
                                                          y[2:].copy_(x[:2] ** 2))),
    "setitem": lambda x: _with(x.clone(), lambda y: (y.__setitem__(0, x[1] * 3),
                                                      y.__setitem__((slice(None), 2), 0.0))),
    "transpose_add": lambda x: _with(x + 0, lambda y: y.t()[1].add_(1).mul_(x[:, 1])),
    "view_of_view": lambda x: _with(x * 3, lambda y: y[2:].t()[1:].mul_(x[:2].t()[1:])),
}


def _with(y, mutate):
    mutate(y)
    return y


@pytest.mark.parametrize("case", list(AUTOGRAD_CASES))
def test_autograd_inplace_on_views(case):
    x = make_tensor((4, 3), requires_grad=True)
    check(AUTOGRAD_CASES[case], x)


def _random_view_chain(base, rng):
    """A random chain of view ops on a 3-d base; yields strided, non-dense views."""
    v = base
    for _ in range(int(rng.integers(1, 5))):
        kind = rng.choice(["narrow", "step", "transpose", "select", "split", "unsqueeze"])
        d = int(rng.integers(0, v.dim())) if v.dim() else 0
        if v.dim() == 0:
            break
        n = v.shape[d]
        if kind == "narrow" and n > 1:
            s = int(rng.integers(0, n - 1))
            v = v.narrow(d, s, int(rng.integers(1, n - s + 1)))
        elif kind == "step" and n > 2:
            v = v.narrow(d, int(rng.integers(0, 2)), n - 1)[(slice(None),) * d + (slice(None, None, 2),)]
        elif kind == "transpose" and v.dim() > 1:
            v = v.transpose(d, (d + 1) % v.dim())
        elif kind == "select" and v.dim() > 1:
            v = v.select(d, int(rng.integers(0, n)))
        elif kind == "split" and n > 1:
            v = v.split(max(1, n // 3), dim=d)[-1]
        elif kind == "unsqueeze":
            v = v.unsqueeze(d)
    return v


@pytest.mark.parametrize("seed", range(12))
def test_random_strided_view_read_write(seed):
    """Strided views (gaps between rows, permuted dims, offsets) read and written
    through the slice/transpose path must match CPU, including their aliases."""
    import numpy as np

    def scenario(device):
        rng = np.random.default_rng(seed)
        base = torch.arange(5 * 6 * 7, dtype=torch.float32, device=device).reshape(5, 6, 7)
        v = _random_view_chain(base, rng)
        out = {"read": v.clone(), "strides": v.stride(), "offset": v.storage_offset()}
        v.mul_(-2).add_(1)
        out["base_after_inplace"] = base.clone()
        v.copy_(torch.arange(v.numel(), dtype=torch.float32, device=device).reshape(v.shape) + 1000)
        out["base_after_copy"] = base.clone()
        out["view_after_copy"] = v.clone()
        return out

    check_scenario(scenario)


# Results are laid out as CPU lays them out (the meta function's strides): a
# transposed, permuted or channels_last input gives a result in that memory
# order, a sliced one a dense result. Graphs torch.compile traces rely on it:
# a view of a result that only CPU's layout allows must work on 'tpu' too.
LAYOUT_INPUTS = {
    "transposed": lambda x: x.reshape(6, 20).t(),
    "permuted3d": lambda x: x.reshape(4, 5, 6).permute(2, 0, 1),
    "channels_last": lambda x: x.reshape(2, 3, 4, 5).contiguous(memory_format=torch.channels_last),
    "sliced": lambda x: x.reshape(6, 20)[:, ::3],
    "expanded": lambda x: x.reshape(120, 1)[:6].expand(6, 7),
}
LAYOUT_OPS = {
    "add_scalar": lambda x: x + 1,
    "mul_self": lambda x: x * x,
    "sigmoid": torch.sigmoid,
    "where": lambda x: torch.where(x > 0, x, -x),
    "clamp": lambda x: x.clamp(-0.5, 0.5),
    "to_f64": lambda x: x.to(torch.float64),
    "zero_functional": torch.ops.aten.zero.default,
    "fill_functional": lambda x: torch.ops.aten.fill.Scalar(x, 2.0),
    "pow": lambda x: x.pow(2),
    "lerp": lambda x: torch.lerp(x, x.sin(), 0.25),
}


@pytest.mark.parametrize("layout", list(LAYOUT_INPUTS))
@pytest.mark.parametrize("op", list(LAYOUT_OPS))
def test_result_strides_follow_cpu(layout, op):
    def fn(x):
        y = LAYOUT_OPS[op](LAYOUT_INPUTS[layout](x))
        return y, y.stride(), y.is_contiguous()
    check(fn, make_tensor((120,), torch.float32), check_stride=True)


def test_compiled_view_of_a_transposed_result():
    # fuzz seed 1745: AOTAutograd traced `zero(x.t()).t().float().view(-1, 1)`, viewable only
    # in CPU's layout; 'tpu' made the zero's result contiguous and the view failed.
    def prog(x):
        v4 = torch.any(x, 0, keepdim=True) / 7.0
        z = torch.fmod(x, 2).clone()
        z.t().zero_()
        return z.float().reshape(-1, 1) @ v4.float().reshape(1, -1)
    x = torch.randint(0, 50, (3, 3), dtype=torch.uint8)
    check(torch.compile(prog, backend="tpu", fullgraph=True), x)


# --------------------------------------------------------------------------
# Views as operands: an op reads its view operands inside its own module
# (the storage's buffer and the view's offset), in every mode
# --------------------------------------------------------------------------

VIEW_OPERAND_OPS = {
    "add": lambda v: v + _src(v.shape, 2, v.dtype, v.device),
    "mul_self": lambda v: v * v,
    "sum": lambda v: v.sum(0),
    "matmul": lambda v: v.reshape(v.shape[0], -1) @ _src((v.reshape(v.shape[0], -1).shape[1], 3), 1, v.dtype,
                                                          v.device),
    "cat": lambda v: torch.cat([v, v.neg()]),
}


@pytest.mark.parametrize("op", list(VIEW_OPERAND_OPS))
@pytest.mark.parametrize("view_name", [n for n in VIEWS if n not in ("expand_clone", "reshape_copy")])
def test_view_operands_match_cpu(view_name, op):
    def fn(b):
        b = b.clone()
        b.mul_(2)  # a written storage (its buffer is an op result)
        v = VIEWS[view_name](b)
        return VIEW_OPERAND_OPS[op](v)
    check(fn, _src((4, 6), 1, torch.float32, "cpu"))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_dtype_view_operand_matches_cpu(dtype):
    # a reinterpreting view of a slice: the module bitcasts the storage's bytes
    check(lambda b: b[1:3].view(dtype) + 1, _src((4, 6), 1.5, torch.float32, "cpu"))


def test_expanded_and_overlapping_view_operands_match_cpu():
    def fn(b):
        e = b[0].expand(4, 6)          # stride 0
        w = b.view(-1).unfold(0, 4, 2)  # overlapping windows: the gather path
        return e * b, w.sum(1), b.view(-1)[3:].view(3, 7).t() @ b[:3, :3]
    check(fn, _src((4, 6), 0.5, torch.float32, "cpu"))


@tpu_only
def test_strict_view_operand_is_one_execution():
    # x @ W.t() (every nn.Linear) and a sliced operand run as one executable
    # each, the transpose and the slice inside it: no executable that copies
    # the view first (102 us against 12 us for a [1,128] x [128,384] product
    # on XLA:CPU, most of it the copy of the whole weight).
    from torch_tpu.execution_mode import EagerMode, eager_mode
    w_cpu, x_cpu = _src((384, 128), 0.01, torch.float32, "cpu"), _src((1, 128), 0.1, torch.float32, "cpu")
    w, x = w_cpu.to(DEV), x_cpu.to(DEV)
    cases = [lambda x, w: x @ w.t(), lambda x, w: w[1:, 2:66] * 3, lambda x, w: torch.nn.functional.linear(x, w)]
    with eager_mode(EagerMode.STRICT):
        for fn in cases:
            fn(x, w)  # compiles
            sync()
            before = torch.tpu.compile_stats()["executions"]
            got = fn(x, w)
            sync()
            assert torch.tpu.compile_stats()["executions"] - before == 1
            torch.testing.assert_close(got.cpu(), fn(x_cpu, w_cpu))
