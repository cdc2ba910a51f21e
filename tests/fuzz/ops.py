"""The fuzzer's op table. Each drawer looks at its operands (CPU values, so
shapes and dtypes are known when drawing) and returns (name, code): `code` is
a Python expression over `x` (and `y` for two operands) that uses only
`torch`, `nan` and `inf`, so a step is replayed on the device unchanged and
printed as a standalone repro.
"""
import random

import torch

FLOATS = (torch.float32, torch.bfloat16, torch.float16)
INTS = (torch.int32, torch.int64, torch.int16, torch.uint8)
COMPLEX = (torch.complex64,)
DTYPES = FLOATS + FLOATS + INTS + COMPLEX + (torch.bool,)
SCALARS = (2, -3, 0.5, 1.1, -2.75, 1e-3, 7.0)


def rand_tensor(rng: random.Random, shape, dtype):
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point or dtype.is_complex:
        t = torch.randn(shape, generator=g, dtype=torch.complex64 if dtype.is_complex else torch.float32)
        t = t * rng.choice((1.0, 3.0, 100.0))
        if rng.random() < 0.15 and t.numel():
            t.view(-1)[rng.randrange(t.numel())] = rng.choice((float("nan"), float("inf"), -float("inf")))
        return t.to(dtype)
    lo, hi = (0, 50) if dtype == torch.uint8 else (-20, 20)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def rand_shape(rng):
    return tuple(rng.randint(1, 5) for _ in range(rng.randint(0, 3)))


def _dim(rng, t):
    return rng.randrange(t.dim()) if t.dim() else None


def _mask(t):
    return "x" if t.dtype == torch.bool else ("x.real > 0" if t.is_complex() else "x > 0")


def op_unary(rng, a):
    name = rng.choice(("neg", "abs", "exp", "log", "sqrt", "sin", "tanh", "sigmoid", "relu", "floor",
                       "round", "sign", "reciprocal", "square", "rsqrt", "erf", "isnan", "logical_not",
                       "bitwise_not", "trunc", "frac", "expm1", "log1p", "clamp", "nan_to_num", "isinf",
                       "isfinite", "angle", "conj_physical", "sgn"))
    if name == "clamp":
        lo, hi = sorted(rng.sample(SCALARS, 2))
        return name, f"torch.clamp(x, {lo!r}, {hi!r})"
    return name, f"torch.{name}(x)"


def op_binary(rng, a, b):
    name = rng.choice(("add", "sub", "mul", "div", "maximum", "minimum", "remainder", "fmod", "pow", "atan2",
                       "eq", "lt", "ge", "logical_and", "bitwise_and", "floor_divide", "hypot", "copysign",
                       "where", "ne"))
    if name == "copysign":
        # The sign bit of a NaN an op produced is not specified (x86 gives -NaN
        # for log(-1), GPUs +NaN): copy signs from numbers only.
        return name, "torch.copysign(x, torch.nan_to_num(y) if y.is_floating_point() else y)"
    if name == "where":
        return name, f"torch.where({_mask(a)}, x, y)"
    if name in ("add", "sub") and rng.random() < 0.3:
        alpha = rng.choice((2, -1, 0.5))
        return f"{name}(alpha={alpha})", f"torch.{name}(x, y, alpha={alpha!r})"
    return name, f"torch.{name}(x, y)"


def op_scalar(rng, a):
    s = rng.choice(SCALARS + ((1 + 2j, -0.5j) if rng.random() < 0.1 else ()))
    forms = {
        "add": "x + {s}", "sub": "x - {s}", "rsub": "{s} - x", "mul": "x * {s}", "div": "x / {s}",
        "pow": "x ** {s}", "rpow": "{s} ** x", "remainder": "x % {s}", "fmod": "torch.fmod(x, {s})",
        "eq": "x == {s}", "gt": "x > {s}", "floor_divide": "x // {s}",
        "maximum": "torch.maximum(x, torch.tensor({s}))",
    }
    name = rng.choice(sorted(forms))
    return f"{name} {s!r}", forms[name].format(s=repr(s))


def op_view(rng, a):
    choices = ["reshape", "flatten", "unsqueeze", "contiguous", "clone"]
    if a.dim() >= 2:
        choices += ["transpose", "t_contig", "diagonal"]
    if a.dim() >= 1:
        choices += ["slice", "select", "flip", "expand", "narrow_step"]
    if a.is_complex():
        choices += ["view_as_real", "real", "conj"]
    name = rng.choice(choices)
    fixed = {"reshape": "x.reshape(-1)", "flatten": "x.flatten()", "contiguous": "x.contiguous()",
             "clone": "x.clone()", "t_contig": "x.transpose(0, 1).contiguous()",
             "view_as_real": "torch.view_as_real(x.resolve_conj())", "real": "x.real", "conj": "x.conj()",
             "expand": "x.unsqueeze(0).expand(3, *x.shape)"}
    if name in fixed:
        return name, fixed[name]
    if name == "unsqueeze":
        d = rng.randint(0, a.dim())
        return f"unsqueeze({d})", f"x.unsqueeze({d})"
    if name == "transpose":
        d0, d1 = rng.sample(range(a.dim()), 2)
        return f"transpose({d0},{d1})", f"x.transpose({d0}, {d1})"
    if name == "diagonal":
        off = rng.choice((0, 1, -1))
        return f"diagonal({off})", f"x.diagonal({off})"
    d = _dim(rng, a)
    n = a.shape[d]
    if name == "slice":
        lo = rng.randrange(n)
        return f"slice(d{d},{lo}:)", f"x.narrow({d}, {lo}, {n - lo})"
    if name == "narrow_step":
        step = rng.choice((1, 2))
        return f"[::{step}] d{d}", f"x.transpose(0, {d})[::{step}].transpose(0, {d})"
    if name == "select":
        i = rng.randrange(-n, n)
        return f"select(d{d},{i})", f"x.select({d}, {i})"
    return f"flip({d})", f"x.flip({d})"


def op_inplace(rng, a):
    """An in-place write, often through a view: the base must change like CPU's."""
    kind = rng.choice(("add_", "mul_", "fill_", "copy_", "clamp_", "masked_fill_", "zero_", "index_put_"))
    s = rng.choice(SCALARS)
    views = {"whole": ("b", a.dim()), "slice": ("b[1:]", a.dim()), "transpose": ("b.transpose(0, 1)", a.dim()),
             "select": ("b.select(0, -1)", a.dim() - 1)}
    view = rng.choice(sorted(views))
    if (view == "slice" and not (a.dim() and a.shape[0] > 1)) or (view == "transpose" and a.dim() < 2) or \
            (view == "select" and not a.dim()):
        view = "whole"
    vexpr, vdim = views[view]
    mask = "v" if a.dtype == torch.bool else ("v.real > 0" if a.is_complex() else "v > 0")
    bodies = {
        "add_": f"v.add_({s!r})", "mul_": f"v.mul_({s!r})", "fill_": f"v.fill_({s!r})",
        "copy_": "v.copy_(v.flip(-1))" if vdim else "v.copy_(v * 2)", "clamp_": "v.clamp_(-1, 1)",
        "masked_fill_": f"v.masked_fill_({mask}, {s!r})", "zero_": "v.zero_()",
        "index_put_": (f"v.index_put_((torch.tensor([0, -1], device=v.device),), "
                       f"torch.tensor({s!r}, device=v.device).to(v.dtype), accumulate=True)") if vdim else "v",
    }
    code = f"(lambda b: (lambda v: ({bodies[kind]}, b)[1])({vexpr}))(x.clone())"
    return f"{kind} {s!r} via {view}", code


def op_reduce(rng, a):
    name = rng.choice(("sum", "mean", "amax", "amin", "prod", "argmax", "any", "all", "cumsum", "std", "logsumexp",
                       "sort", "topk", "var", "nansum"))
    d = _dim(rng, a)
    keep = rng.random() < 0.5
    if d is None or name in ("sum", "prod") and rng.random() < 0.3:
        if name in ("cumsum", "sort", "topk", "logsumexp"):
            return "sum()", "x.sum()"
        return f"{name}()", f"torch.{name}(x)"
    if name == "cumsum":
        return f"cumsum({d})", f"torch.cumsum(x, {d})"
    if name == "sort":
        desc = rng.random() < 0.5
        return f"sort({d},{desc})", f"torch.sort(x, {d}, descending={desc}, stable=True)"
    if name == "topk":
        k = rng.randint(1, a.shape[d])
        return f"topk({k},{d})", f"torch.topk(x, {k}, {d}).values"
    return f"{name}({d},{keep})", f"torch.{name}(x, {d}, keepdim={keep})"


def op_index(rng, a):
    if not a.dim():
        return "item-like", "x.reshape(1)[0]"
    d = _dim(rng, a)
    n = a.shape[d]
    idx = [rng.randrange(-n, n) for _ in range(rng.randint(1, 4))]
    kind = rng.choice(("index_select", "gather", "advanced", "bool_mask", "oob"))
    if kind == "index_select":
        pos = [i % n for i in idx]
        return f"index_select(d{d},{pos})", f"x.index_select({d}, torch.tensor({pos}, device=x.device))"
    if kind == "gather":
        return f"gather(d{d})", f"x.gather({d}, torch.zeros_like(x, dtype=torch.long) + {n - 1})"
    if kind == "advanced":
        return f"x[{idx}]", f"x[torch.tensor({idx}, device=x.device)]"
    if kind == "bool_mask":
        return "x[mask]", f"x[{_mask(a)}]"
    bad = n + rng.randint(0, 3)
    return f"x[{bad}] out of range", f"x[torch.tensor([{bad}], device=x.device)]"


def op_cast(rng, a):
    dt = rng.choice(DTYPES)
    if dt.is_floating_point or dt.is_complex or dt == torch.bool:
        return f"to({dt})", f"x.to({dt})"
    # Floats cast to integers wrap or saturate like CPU (tests/test_numerics_contract.py); here the
    # values stay small, so an ulp of difference in a large float (pow) cannot change many low bits.
    src = "x.real" if a.is_complex() else "x"
    clamp = f"{src}.clamp(-1000, 1000)" if a.is_floating_point() or a.is_complex() else src
    return f"clamp(-1000, 1000).to({dt})", f"{clamp}.to({dt})"


def op_out(rng, a, b=None):
    """An out= call: the result is computed in the op's dtype, then cast to the
    out tensor's dtype, which CPU refuses when the cast would lose its kind."""
    dt = rng.choice(DTYPES)
    out = f"out=torch.empty(0, dtype={dt}, device=x.device)"
    if b is None:
        name = rng.choice(("exp", "neg", "abs", "sqrt", "floor", "sigmoid"))
        return f"{name}(out={dt})", f"torch.{name}(x, {out})"
    name = rng.choice(("add", "mul", "sub", "div", "maximum", "eq"))
    return f"{name}(out={dt})", f"torch.{name}(x, y, {out})"


OUTER_LIMIT = 1 << 20  # elements of an outer product (matmul/broadcast_add of two flattened values)


def op_pair(rng, a, b):
    kind = rng.choice(("cat", "stack", "matmul", "broadcast_add"))
    if kind in ("matmul", "broadcast_add") and a.numel() * b.numel() > OUTER_LIMIT:
        raise ValueError("outer product too large")  # seed 101514 drew a 4096 x 262144 one (8.6 GB on CPU): redraw
    codes = {"cat": "torch.cat([x.reshape(-1), y.reshape(-1)])", "stack": "torch.stack([x, x])",
             "matmul": "x.float().reshape(-1, 1) @ y.float().reshape(1, -1)",
             "broadcast_add": "x.reshape(-1, 1) + y.reshape(1, -1)"}
    if kind == "matmul" and (a.is_complex() or b.is_complex()):
        # Finite operands only: CPU's complex matmul of non-finite entries depends on the BLAS
        # kernel it picks (mm of a K=1 product gives nan+nanj where bmm of the same product gives
        # inf-infj), so there is no one CPU answer to hold the device to.
        fin = "torch.nan_to_num({}.to(torch.complex64), nan=0.0, posinf=1e4, neginf=-1e4)"
        codes["matmul"] = f"{fin.format('x')}.reshape(-1, 1) @ {fin.format('y')}.reshape(1, -1)"
    return kind, codes[kind]


UNARY_OPS = (op_unary, op_scalar, op_view, op_inplace, op_reduce, op_index, op_cast, op_out)
BINARY_OPS = (op_binary, op_pair, op_out)
