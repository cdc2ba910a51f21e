"""Differential fuzzer (issue #13, section 4): random programs, CPU is the oracle.

Each program starts from a few random tensors (dtype, shape, strides) and
applies a random sequence of ops drawn from the table below: elementwise
math with tensors and Python scalars (type promotion, bf16/f16 rounding),
broadcasting, views (transpose, slice, select, expand, reshape, diagonal)
and in-place writes through them, reductions, indexing, where/cat/matmul.
The program is drawn while running it on CPU (a step CPU refuses is redrawn
as an expected error), then replayed on the device; every intermediate value
(values, dtype, shape, NaN) and every error type must match CPU.

CI runs a fixed set of seeds in every eager mode; ``-m slow`` runs many more.
A failure prints the seed and the program, which replays it alone:

    TTPU_FUZZ_SEEDS=1234 pytest tests/test_fuzz.py -k replay
"""
import os
import random

import pytest
import torch

from _helpers import DEV, assert_same
from _helpers import each_eager_mode  # noqa: F401  (every test runs in STRICT, DEBUG and DEFER_AND_FUSE)

FLOATS = (torch.float32, torch.bfloat16, torch.float16)
INTS = (torch.int32, torch.int64, torch.int16, torch.uint8)
DTYPES = FLOATS + FLOATS + INTS + (torch.bool,)
SCALARS = (2, -3, 0.5, 1.1, -2.75, 1e-3, 7.0)


def rand_tensor(rng, shape, dtype):
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=g) * rng.choice((1.0, 3.0, 100.0))
        if rng.random() < 0.15 and t.numel():
            t.view(-1)[rng.randrange(t.numel())] = rng.choice((float("nan"), float("inf"), -float("inf")))
        return t.to(dtype)
    lo, hi = (0, 50) if dtype == torch.uint8 else (-20, 20)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def rand_shape(rng):
    return tuple(rng.randint(1, 5) for _ in range(rng.randint(0, 3)))


# ----------------------------------------------------------------------------
# The op table: name -> (arity, fn(rng) -> callable on the operands). The
# draw happens once, on CPU; the callable is replayed unchanged on the device.
# ----------------------------------------------------------------------------

def _dim(rng, t):
    return rng.randrange(t.dim()) if t.dim() else None


def op_unary(rng, a):
    name = rng.choice(("neg", "abs", "exp", "log", "sqrt", "sin", "tanh", "sigmoid", "relu", "floor",
                       "round", "sign", "reciprocal", "square", "rsqrt", "erf", "isnan", "logical_not",
                       "bitwise_not", "trunc", "frac", "expm1", "log1p", "clamp", "nan_to_num"))
    if name == "clamp":
        lo, hi = sorted(rng.sample(SCALARS, 2))
        return name, lambda x: torch.clamp(x, lo, hi)
    return name, getattr(torch, name)


def op_binary(rng, a, b):
    name = rng.choice(("add", "sub", "mul", "div", "maximum", "minimum", "remainder", "fmod", "pow", "atan2",
                       "eq", "lt", "ge", "logical_and", "bitwise_and", "floor_divide", "hypot", "copysign",
                       "where"))
    if name == "copysign":
        # The sign bit of a NaN an op produced is not specified (x86 gives -NaN
        # for log(-1), GPUs +NaN): copy signs from numbers only.
        return name, lambda x, y: torch.copysign(x, torch.nan_to_num(y) if y.is_floating_point() else y)
    if name == "where":
        return name, lambda x, y: torch.where(x > 0 if x.dtype != torch.bool else x, x, y)
    if name in ("add", "sub") and rng.random() < 0.3:
        alpha = rng.choice((2, -1, 0.5))
        return f"{name}(alpha={alpha})", lambda x, y: getattr(torch, name)(x, y, alpha=alpha)
    return name, getattr(torch, name)


def op_scalar(rng, a):
    name = rng.choice(("add", "sub", "rsub", "mul", "div", "pow", "rpow", "remainder", "fmod", "eq", "gt",
                       "floor_divide", "maximum"))
    s = rng.choice(SCALARS)
    fns = {
        "add": lambda x: x + s, "sub": lambda x: x - s, "rsub": lambda x: s - x, "mul": lambda x: x * s,
        "div": lambda x: x / s, "pow": lambda x: x ** s, "rpow": lambda x: s ** x, "remainder": lambda x: x % s,
        "fmod": lambda x: torch.fmod(x, s), "eq": lambda x: x == s, "gt": lambda x: x > s,
        "floor_divide": lambda x: x // s, "maximum": lambda x: torch.maximum(x, torch.tensor(s)),
    }
    return f"{name} {s!r}", fns[name]


def op_view(rng, a):
    choices = ["reshape", "flatten", "unsqueeze", "contiguous", "clone"]
    if a.dim() >= 2:
        choices += ["transpose", "t_contig", "diagonal"]
    if a.dim() >= 1:
        choices += ["slice", "select", "flip", "expand", "narrow_step"]
    name = rng.choice(choices)
    if name == "reshape":
        return name, lambda x: x.reshape(-1)
    if name == "flatten":
        return name, lambda x: x.flatten()
    if name == "unsqueeze":
        d = rng.randint(0, a.dim())
        return f"unsqueeze({d})", lambda x: x.unsqueeze(d)
    if name == "contiguous":
        return name, lambda x: x.contiguous()
    if name == "clone":
        return name, lambda x: x.clone()
    if name == "transpose":
        d0, d1 = rng.sample(range(a.dim()), 2)
        return f"transpose({d0},{d1})", lambda x: x.transpose(d0, d1)
    if name == "t_contig":
        return name, lambda x: x.transpose(0, 1).contiguous()
    if name == "diagonal":
        off = rng.choice((0, 1, -1))
        return f"diagonal({off})", lambda x: x.diagonal(off)
    d = _dim(rng, a)
    n = a.shape[d]
    if name == "slice":
        lo = rng.randrange(n)
        return f"slice(d{d},{lo}:)", lambda x: x.narrow(d, lo, n - lo)
    if name == "narrow_step":
        step = rng.choice((1, 2))
        return f"[::{step}] d{d}", lambda x: x.transpose(0, d)[::step].transpose(0, d)
    if name == "select":
        i = rng.randrange(-n, n)
        return f"select(d{d},{i})", lambda x: x.select(d, i)
    if name == "flip":
        return f"flip({d})", lambda x: x.flip(d)
    # expand a size-1 dim (or add one) to 3
    return "expand", lambda x: x.unsqueeze(0).expand(3, *x.shape)


def op_inplace(rng, a):
    """An in-place write, often through a view: the base must change like CPU's."""
    kind = rng.choice(("add_", "mul_", "fill_", "copy_", "clamp_", "masked_fill_", "zero_", "index_put_"))
    s = rng.choice(SCALARS)
    view = rng.choice(("whole", "slice", "transpose", "select"))

    def through(x, f):
        if view == "slice" and x.dim() and x.shape[0] > 1:
            f(x[1:])
        elif view == "transpose" and x.dim() >= 2:
            f(x.transpose(0, 1))
        elif view == "select" and x.dim():
            f(x.select(0, -1))
        else:
            f(x)
        return x

    def body(v):
        if kind == "add_":
            v.add_(s)
        elif kind == "mul_":
            v.mul_(s)
        elif kind == "fill_":
            v.fill_(s)
        elif kind == "copy_":
            v.copy_(v.flip(-1) if v.dim() else v * 2)
        elif kind == "clamp_":
            v.clamp_(-1, 1)
        elif kind == "masked_fill_":
            v.masked_fill_(v > 0 if v.dtype != torch.bool else v, s)
        elif kind == "zero_":
            v.zero_()
        else:
            if v.dim():
                idx = torch.tensor([0, v.shape[0] - 1], device=v.device)
                v.index_put_((idx,), torch.tensor(s, device=v.device).to(v.dtype), accumulate=True)
    return f"{kind} {s!r} via {view}", lambda x: through(x.clone(), body)


def op_reduce(rng, a):
    name = rng.choice(("sum", "mean", "amax", "amin", "prod", "argmax", "any", "all", "cumsum", "std", "logsumexp",
                       "sort", "topk"))
    d = _dim(rng, a)
    keep = rng.random() < 0.5
    if d is None or name in ("sum", "prod") and rng.random() < 0.3:
        return f"{name}()", lambda x: getattr(torch, name)(x) if name not in ("cumsum", "sort", "topk", "logsumexp") \
            else x.sum()
    if name == "cumsum":
        return f"cumsum({d})", lambda x: torch.cumsum(x, d)
    if name == "sort":
        desc = rng.random() < 0.5
        return f"sort({d},{desc})", lambda x: torch.sort(x, d, descending=desc, stable=True)
    if name == "topk":
        k = rng.randint(1, a.shape[d])
        return f"topk({k},{d})", lambda x: torch.topk(x, k, d).values
    return f"{name}({d},{keep})", lambda x: getattr(torch, name)(x, d, keepdim=keep)


def op_index(rng, a):
    if not a.dim():
        return "item-like", lambda x: x.reshape(1)[0]
    d = _dim(rng, a)
    n = a.shape[d]
    idx = [rng.randrange(-n, n) for _ in range(rng.randint(1, 4))]
    kind = rng.choice(("index_select", "gather", "advanced", "bool_mask", "oob"))
    if kind == "index_select":
        pos = [i % n for i in idx]
        return f"index_select(d{d},{pos})", lambda x: x.index_select(d, torch.tensor(pos, device=x.device))
    if kind == "gather":
        return f"gather(d{d})", lambda x: x.gather(d, (torch.zeros_like(x, dtype=torch.long) + (n - 1)))
    if kind == "advanced":
        return f"x[{idx}]", lambda x: x[torch.tensor(idx, device=x.device)]
    if kind == "bool_mask":
        return "x[x>0]", lambda x: x[x > 0] if x.dtype != torch.bool else x[x]
    bad = n + rng.randint(0, 3)
    return f"x[{bad}] out of range", lambda x: x[torch.tensor([bad], device=x.device)]


def op_cast(rng, a):
    dt = rng.choice(DTYPES)
    if dt.is_floating_point or dt == torch.bool:
        return f"to({dt})", lambda x: x.to(dt)
    # Floats cast to integers wrap or saturate like CPU (tests/test_numerics_contract.py); here the
    # values stay small, so an ulp of difference in a large float (pow) cannot change many low bits.
    return f"clamp(-1000, 1000).to({dt})", lambda x: (x.clamp(-1000, 1000) if x.is_floating_point() else x).to(dt)


def op_pair(rng, a, b):
    kind = rng.choice(("cat", "stack", "matmul", "broadcast_add"))
    if kind == "cat":
        return "cat", lambda x, y: torch.cat([x.reshape(-1), y.reshape(-1)])
    if kind == "stack":
        return "stack", lambda x, y: torch.stack([x, x])
    if kind == "matmul":
        return "matmul", lambda x, y: x.float().reshape(-1, 1) @ y.float().reshape(1, -1)
    return "broadcast_add", lambda x, y: x.reshape(-1, 1) + y.reshape(1, -1)


UNARY_OPS = (op_unary, op_scalar, op_view, op_inplace, op_reduce, op_index, op_cast)
BINARY_OPS = (op_binary, op_pair)


def draw_program(seed, steps=8):
    """Draws a program on CPU. Returns (inputs, steps, cpu_values)."""
    rng = random.Random(seed)
    shape = rand_shape(rng)
    inputs = []
    for _ in range(rng.randint(1, 3)):
        s = shape if rng.random() < 0.7 else tuple(rng.choice((1, d)) for d in shape)  # broadcastable
        t = rand_tensor(rng, s, rng.choice(DTYPES))
        if t.dim() >= 2 and rng.random() < 0.3:
            t = t.transpose(0, 1)  # non-contiguous input
        inputs.append(t)
    values = list(inputs)
    program, outs = [], []
    while len(program) < steps:
        try:
            if len(values) >= 2 and rng.random() < 0.3:
                i, j = rng.sample(range(len(values)), 2)
                name, fn = rng.choice(BINARY_OPS)(rng, values[i], values[j])
                args = (i, j)
            else:
                i = rng.randrange(len(values))
                name, fn = rng.choice(UNARY_OPS)(rng, values[i])
                args = (i,)
        except ValueError:  # nothing to draw from (a size-0 dim): draw again
            continue
        try:
            out = fn(*(values[k] for k in args))
            err = None
        except Exception as e:  # CPU refuses: the device must refuse the same way
            out, err = None, type(e)
        program.append((name, args, fn, err))
        outs.append(out)
        if err is None:
            values.append(out[0] if isinstance(out, tuple) else out)
    return inputs, program, outs


def describe(inputs, program):
    lines = [f"in{i}: {t.dtype} {tuple(t.shape)} stride {t.stride()}" for i, t in enumerate(inputs)]
    lines += [f"{k}: {name} of {args}" + (f"  (CPU raises {err.__name__})" if err else "")
              for k, (name, args, _, err) in enumerate(program)]
    return "\n".join(lines)


def tol(t, low_precision_inputs=False):
    """Exact for integers and bools; about two ulps for floats. A value computed from bf16/f16 data
    (the `low_precision_inputs` taint) gets bf16's tolerance whatever its dtype: an ulp of difference
    upstream (CPU accumulates index_put_ duplicates in bf16, we in f32) must not fail an f32 step
    downstream, nor an integer one (floor, casts) by more than one."""
    if not isinstance(t, torch.Tensor):
        return {"atol": 0, "rtol": 0}
    if low_precision_inputs:
        return {"atol": 1 if not t.dtype.is_floating_point else 2e-2, "rtol": 2e-2}
    if not t.dtype.is_floating_point:
        return {"atol": 0, "rtol": 0}
    return {torch.bfloat16: {"atol": 1e-2, "rtol": 1.6e-2}, torch.float16: {"atol": 1e-3, "rtol": 2e-3}}.get(
        t.dtype, {"atol": 1e-4, "rtol": 1e-4})


def low_precision(t):
    return isinstance(t, torch.Tensor) and t.dtype in (torch.bfloat16, torch.float16)


def run_program(seed):
    inputs, program, cpu_outs = draw_program(seed)
    values = [t.to(DEV) for t in inputs]
    tainted = [False] * len(inputs)  # computed from bf16/f16 data (see tol)
    for k, ((name, args, fn, err), want) in enumerate(zip(program, cpu_outs)):
        from_low = any(tainted[a] or low_precision(values[a]) for a in args)
        where = f"seed {seed}, step {k} ({name})\n{describe(inputs, program)}"
        if err is not None:
            try:
                r = fn(*(values[a] for a in args))
                if isinstance(r, torch.Tensor):
                    r.cpu()  # Debug/DeferAndFuse may raise when the value is read
            except Exception as e:  # noqa: BLE001  (the type is what is compared)
                assert isinstance(e, err), f"CPU raises {err.__name__}, device raised {type(e).__name__}: {e}\n{where}"
                continue
            raise AssertionError(f"CPU raises {err.__name__}, the device raised nothing\n{where}")
        try:
            out = fn(*(values[a] for a in args))
        except Exception as e:
            raise AssertionError(f"device raised {type(e).__name__}: {e}\n{where}") from e
        ref = want[0] if isinstance(want, tuple) else want
        got = out[0] if isinstance(out, tuple) else out
        try:
            assert_same(got, ref, **tol(ref, from_low and not low_precision(ref)))
        except AssertionError as e:
            raise AssertionError(f"{e}\n{where}") from None
        values.append(got)
        tainted.append(from_low)


CI_SEEDS = range(60)


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_fuzz(seed):
    run_program(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 3000))
def test_fuzz_many(seed):
    run_program(seed)


@pytest.mark.skipif("TTPU_FUZZ_SEEDS" not in os.environ, reason="replays TTPU_FUZZ_SEEDS=1,2,...")
def test_fuzz_replay():
    for seed in os.environ["TTPU_FUZZ_SEEDS"].split(","):
        run_program(int(seed))
