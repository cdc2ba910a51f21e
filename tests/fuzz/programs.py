"""Drawing, running and minimising the fuzzer's random programs.

A program is a few random input tensors and a list of steps; each step applies
one drawn op (see ops.py) to earlier values. It is drawn while running on CPU
(a step CPU refuses stays in the program as an expected error type), then
replayed on the device in one mode: "strict", "debug", "defer" (DeferAndFuse)
or "compiled" (the whole program as one torch.compile(backend="tpu")
function; steps CPU refuses are left out there). Every intermediate's value,
dtype, shape and NaN positions, and every error type, must match CPU's.

A mismatch is minimised: first the failing step alone on CPU's operand values,
then the steps it depends on; the smallest program that still fails is printed
as a standalone Python repro.
"""
from __future__ import annotations

import contextlib
import math
import random
from dataclasses import dataclass, field

import torch

from . import ops

NAMESPACE = {"torch": torch, "nan": math.nan, "inf": math.inf}


@dataclass
class Step:
    name: str
    code: str
    args: tuple          # indices into the program's values (inputs first)
    err: type | None     # the exception type CPU raises, or None

    def fn(self):
        params = "x" if len(self.args) == 1 else "x, y"
        return eval(f"lambda {params}: {self.code}", dict(NAMESPACE))  # noqa: S307 (our own op table)


@dataclass
class Program:
    seed: int
    inputs: list
    steps: list = field(default_factory=list)
    cpu_outs: list = field(default_factory=list)  # CPU's result per step (None where CPU raised)


def first(out):
    return out[0] if isinstance(out, tuple) else out


def draw(seed: int, steps: int = 8) -> Program:
    rng = random.Random(seed)
    shape = ops.rand_shape(rng)
    inputs = []
    for _ in range(rng.randint(1, 3)):
        s = shape if rng.random() < 0.7 else tuple(rng.choice((1, d)) for d in shape)  # broadcastable
        t = ops.rand_tensor(rng, s, rng.choice(ops.DTYPES))
        if t.dim() >= 2 and rng.random() < 0.3:
            t = t.transpose(0, 1)  # non-contiguous input
        inputs.append(t)
    prog = Program(seed, inputs)
    values = list(inputs)
    while len(prog.steps) < steps:
        try:
            if len(values) >= 2 and rng.random() < 0.3:
                i, j = rng.sample(range(len(values)), 2)
                name, code = rng.choice(ops.BINARY_OPS)(rng, values[i], values[j])
                args = (i, j)
            else:
                i = rng.randrange(len(values))
                name, code = rng.choice(ops.UNARY_OPS)(rng, values[i])
                args = (i,)
        except ValueError:  # nothing to draw from (a size-0 dim): draw again
            continue
        step = Step(name, code, args, None)
        try:
            out = step.fn()(*(values[k] for k in args))
        except Exception as e:  # noqa: BLE001  CPU refuses: the device must refuse the same way
            out, step.err = None, type(e)
        prog.steps.append(step)
        prog.cpu_outs.append(out)
        if step.err is None:
            values.append(first(out))
    return prog


def describe(prog: Program) -> str:
    lines = [f"in{i}: {t.dtype} {tuple(t.shape)} stride {t.stride()}" for i, t in enumerate(prog.inputs)]
    lines += [f"{k}: {s.name} of {s.args}" + (f"  (CPU raises {s.err.__name__})" if s.err else "")
              for k, s in enumerate(prog.steps)]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------

LOW = (torch.bfloat16, torch.float16)


def tolerance(t, low_precision_inputs=False):
    """Exact for integers and bools; about two ulps for floats. A value computed from bf16/f16 data
    (the `low_precision_inputs` taint) gets bf16's tolerance whatever its dtype: an ulp of difference
    upstream (CPU accumulates index_put_ duplicates in bf16, we in f32) must not fail an f32 step
    downstream, nor an integer one (floor, casts) by more than one."""
    if not isinstance(t, torch.Tensor):
        return {"atol": 0, "rtol": 0}
    fp = t.dtype.is_floating_point or t.dtype.is_complex
    if low_precision_inputs:
        return {"atol": 2e-2 if fp else 1, "rtol": 2e-2}
    if not fp:
        return {"atol": 0, "rtol": 0}
    return {torch.bfloat16: {"atol": 1e-2, "rtol": 1.6e-2}, torch.float16: {"atol": 1e-3, "rtol": 2e-3}}.get(
        t.dtype, {"atol": 1e-4, "rtol": 1e-4})


def compare(got, want, low_inputs) -> str | None:
    """None when `got` (device) matches `want` (CPU), else what differs."""
    want, got = first(want), first(got)
    if not isinstance(want, torch.Tensor):
        return None if got == want or (isinstance(want, float) and math.isclose(got, want, rel_tol=1e-4)) \
            else f"{got!r} != {want!r}"
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"dtype/shape {got.dtype} {tuple(got.shape)} != CPU's {want.dtype} {tuple(want.shape)}"
    got = got.detach().cpu()
    if want.is_complex():
        # Part by part: a complex difference with an infinite part is NaN, so one ulp in the real
        # part of (1e38 + inf j) would fail the value as a whole. A complex NaN (a NaN in either
        # part) equals any other, as torch.testing has it: nan+0j and nan+nanj are both NaN.
        got, want = got.resolve_conj().resolve_neg(), want.detach().resolve_conj().resolve_neg()
        both_nan = torch.isnan(got) & torch.isnan(want)
        got = torch.view_as_real(torch.where(both_nan, 0, got))
        want = torch.view_as_real(torch.where(both_nan, 0, want))
    try:
        torch.testing.assert_close(got, want.detach(), equal_nan=True,
                                   **tolerance(want, low_inputs and want.dtype not in LOW))
    except AssertionError as e:
        return str(e).split("\n\n")[0]
    return None


# ---------------------------------------------------------------------------
# Running on the device
# ---------------------------------------------------------------------------

MODES = ("strict", "debug", "defer", "compiled")


@contextlib.contextmanager
def in_mode(mode):
    from torch_tpu.execution_mode import EagerMode, eager_mode
    name = {"strict": "STRICT", "debug": "DEBUG", "defer": "DEFER_AND_FUSE", "compiled": "STRICT"}[mode]
    with eager_mode(EagerMode[name]):
        yield


@dataclass
class Mismatch:
    seed: int
    mode: str
    step: int
    what: str
    # Not a mismatch, and why (the rest of the program is not checked):
    # - "amplified rounding": the step's operands on the device were within tolerance of CPU's but
    #   not equal, and the same step on CPU's exact operands matches (fmod of an expm1 one ulp off);
    # - "flushed denormal": CPU computes the step with its denormal operands and results flushed
    #   to zero to the device's values. XLA:CPU runs with flush-to-zero and denormals-are-zero
    #   (TPUs have no denormals), so rsqrt(9e-41) is inf there; PyTorch's CPU keeps denormals;
    # - "torch.compile refuses on CPU too": the compiled program fails in PyTorch's own tracing
    #   (fake tensors), and torch.compile(backend="eager" or "aot_eager") of the same program on CPU
    #   fails alike.
    excused: str = ""


FLUSHED = (torch.float32, torch.float64, torch.bfloat16, torch.complex64, torch.complex128)


def flush_denormals(t):
    """t with its denormal values (parts, for complex) as signed zeros; others unchanged."""
    if not isinstance(t, torch.Tensor) or t.dtype not in FLUSHED:
        return t
    parts = torch.view_as_real(t.resolve_conj().resolve_neg()) if t.is_complex() else t
    tiny = torch.finfo(parts.dtype).tiny
    parts = torch.where(parts.abs() < tiny, parts * 0, parts)
    return torch.view_as_complex(parts) if t.is_complex() else parts


def has_denormals(t) -> bool:
    return isinstance(t, torch.Tensor) and t.dtype in FLUSHED and not torch.equal(
        torch.nan_to_num(flush_denormals(t.detach().cpu())), torch.nan_to_num(t.detach().cpu()))


def flushed_denormal(prog: Program, k: int, got, low) -> Mismatch | None:
    """Step k differs from CPU: only because XLA flushes denormals (see Mismatch), or not."""
    step = prog.steps[k]
    operands = [_cpu_values(prog)[a] for a in step.args]
    want = prog.cpu_outs[k]
    if not any(has_denormals(v) for v in operands) and not has_denormals(first(want)):
        return None
    try:
        flushed = flush_denormals(first(step.fn()(*(flush_denormals(v.clone()) for v in operands))))
    except Exception:  # noqa: BLE001
        return None
    if compare(got, flushed, any(low[a] for a in step.args)) is not None:
        return None
    return Mismatch(prog.seed, "", k, "flushed denormal", excused="flushed denormal")


def amplification(prog: Program, k: int, operands, mode: str, device: str, low) -> Mismatch | None:
    """Step k differs from CPU: an amplified upstream rounding difference (see Mismatch) or not.

    Never excuses a step whose operands equal CPU's exactly (the step itself is wrong) or differ
    beyond tolerance (an upstream error, a lost write through a view)."""
    cpu_values = _cpu_values(prog)
    inexact = False
    for a, got in zip(prog.steps[k].args, operands):
        want = cpu_values[a]
        if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
            return None
        if compare(got, want, low[a]) is not None:
            return None
        got = got.detach().cpu()
        same = got.dtype == want.dtype and got.shape == want.shape and \
            torch.equal(torch.view_as_real(got) if got.is_complex() else got,
                        torch.view_as_real(want) if want.is_complex() else want)
        if not same and not (got.is_floating_point() or got.is_complex()):
            return None
        inexact = inexact or not same
    if not inexact or run(single_step(prog, k), mode, device) is not None:
        return None
    return Mismatch(prog.seed, mode, k, "amplified rounding difference", excused="amplified rounding")


def run_eager(prog: Program, device: str, mode: str) -> Mismatch | None:
    values = [t.to(device) for t in prog.inputs]
    low = [t.dtype in LOW for t in prog.inputs]  # computed from bf16/f16 data (see tolerance)
    for k, (step, want) in enumerate(zip(prog.steps, prog.cpu_outs)):
        from_low = any(low[a] or values[a].dtype in LOW for a in step.args)
        fn = step.fn()
        if step.err is not None:
            try:
                r = fn(*(values[a] for a in step.args))
                if isinstance(first(r), torch.Tensor):
                    first(r).cpu()  # Debug/DeferAndFuse may raise when the value is read
            except Exception as e:  # noqa: BLE001  (the type is what is compared)
                if not isinstance(e, step.err):
                    return Mismatch(prog.seed, mode, k, f"CPU raises {step.err.__name__}, device raised "
                                                        f"{type(e).__name__}: {str(e)[:300]}")
                continue
            return Mismatch(prog.seed, mode, k, f"CPU raises {step.err.__name__}, the device raised nothing")
        try:
            out = fn(*(values[a] for a in step.args))
            diff = compare(out, want, from_low)
        except Exception as e:  # noqa: BLE001
            return Mismatch(prog.seed, mode, k, f"device raised {type(e).__name__}: {str(e)[:300]}")
        if diff:
            return flushed_denormal(prog, k, out, low) or \
                amplification(prog, k, [values[a] for a in step.args], mode, device, low) or \
                Mismatch(prog.seed, mode, k, diff)
        values.append(first(out))
        low.append(from_low)
    return None


def run_compiled(prog: Program, device: str) -> Mismatch | None:
    """The steps CPU accepts, as one function compiled with the "tpu" backend."""
    ok = [k for k, s in enumerate(prog.steps) if s.err is None]
    fns = [(prog.steps[k].fn(), prog.steps[k].args) for k in ok]

    def whole(*inputs):
        values, outs = list(inputs), []
        for fn, args in fns:
            out = fn(*(values[a] for a in args))
            outs.append(out)
            values.append(out[0] if isinstance(out, tuple) else out)
        return outs

    import torch._dynamo
    torch._dynamo.reset()  # one program per compile; the cache limit must not turn this into eager
    try:
        with in_mode("compiled"):
            outs = torch.compile(whole, backend="tpu")(*(t.to(device) for t in prog.inputs))
    except Exception as e:  # noqa: BLE001
        # PyTorch's own tracing may refuse what CPU's kernels run (a meta function stricter than the
        # kernel: abs(complex, out=complex)); torch.compile on CPU then fails the same way.
        # Our backend is AOTAutograd's: PyTorch's own aot_eager is the reference for what its
        # functionalization refuses (seed 2941: a masked_fill_ through a transposed view, then a
        # reshape of the base, fails in aot_eager's fake-tensor pass on CPU alike).
        for reference in ("eager", "aot_eager"):
            torch._dynamo.reset()
            try:
                torch.compile(whole, backend=reference)(*(t.clone() for t in prog.inputs))
            except Exception as cpu_e:  # noqa: BLE001
                if type(cpu_e) is type(e):
                    return Mismatch(prog.seed, "compiled", ok[0] if ok else 0, "torch.compile refuses on CPU too",
                                    excused="torch.compile refuses on CPU too")
        return Mismatch(prog.seed, "compiled", ok[0] if ok else 0, f"compiled program raised {type(e).__name__}: "
                                                                   f"{str(e)[:300]}")
    low = [t.dtype in LOW for t in prog.inputs]
    values = [t.to(device) for t in prog.inputs]
    for k, out in zip(ok, outs):
        step = prog.steps[k]
        from_low = any(low[a] for a in step.args)
        diff = compare(out, prog.cpu_outs[k], from_low)
        if diff:
            return flushed_denormal(prog, k, out, low) or \
                amplification(prog, k, [values[a] for a in step.args], "compiled", device, low) or \
                Mismatch(prog.seed, "compiled", k, diff)
        values.append(first(out))
        low.append(from_low or first(out).dtype in LOW if isinstance(first(out), torch.Tensor) else from_low)
    return None


def run(prog: Program, mode: str, device: str = "tpu") -> Mismatch | None:
    if mode == "compiled":
        return run_compiled(prog, device)
    with in_mode(mode):
        return run_eager(prog, device, mode)


# ---------------------------------------------------------------------------
# Minimising and printing
# ---------------------------------------------------------------------------

def _cpu_values(prog: Program):
    values = list(prog.inputs)
    for step, out in zip(prog.steps, prog.cpu_outs):
        if step.err is None:
            values.append(first(out))
    return values


def _value_index_of_steps(prog: Program):
    """Value index produced by each step (None for a step CPU refuses)."""
    idx, n = [], len(prog.inputs)
    for s in prog.steps:
        idx.append(None if s.err else n)
        n += s.err is None
    return idx


def single_step(prog: Program, k: int) -> Program:
    """Step k alone, its operands given as CPU's values."""
    values = _cpu_values(prog)
    step = prog.steps[k]
    inputs = [values[a].clone() for a in step.args]
    return Program(prog.seed, inputs, [Step(step.name, step.code, tuple(range(len(inputs))), step.err)],
                   [prog.cpu_outs[k]])


def dependency_slice(prog: Program, k: int) -> Program:
    """Step k and the steps it reads from, transitively; unused inputs dropped."""
    produced = _value_index_of_steps(prog)
    step_of = {v: j for j, v in enumerate(produced) if v is not None}
    need, stack = {k}, list(prog.steps[k].args)
    used_inputs = set()
    while stack:
        v = stack.pop()
        if v < len(prog.inputs):
            used_inputs.add(v)
        elif step_of[v] not in need:
            need.add(step_of[v])
            stack.extend(prog.steps[step_of[v]].args)
    remap = {old: new for new, old in enumerate(sorted(used_inputs))}
    nxt = len(remap)
    out = Program(prog.seed, [prog.inputs[i] for i in sorted(used_inputs)])
    for j in sorted(need):
        s = prog.steps[j]
        out.steps.append(Step(s.name, s.code, tuple(remap[a] for a in s.args), s.err))
        out.cpu_outs.append(prog.cpu_outs[j])
        if produced[j] is not None:
            remap[produced[j]] = nxt
            nxt += 1
    return out


def minimise(prog: Program, mismatch: Mismatch, device: str = "tpu") -> Program:
    for candidate in (single_step(prog, mismatch.step), dependency_slice(prog, mismatch.step)):
        if run(candidate, mismatch.mode, device) is not None:
            return candidate
    return prog


def dense_permutation(t: torch.Tensor) -> bool:
    """Strides a permutation of contiguous ones (no gaps, no overlap)."""
    expected = 1
    for size, stride in sorted(zip(t.shape, t.stride()), key=lambda p: p[1]):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def literal(t: torch.Tensor) -> str:
    values = t.detach().cpu().resolve_conj().resolve_neg()
    body = f"torch.tensor({values.contiguous().tolist()!r}, dtype={t.dtype})"
    strided = t.dim() >= 2 and not t.is_contiguous() and 0 not in t.stride() and dense_permutation(t)
    if strided:
        return f"torch.empty_strided({tuple(t.shape)}, {t.stride()}, dtype={t.dtype}).copy_({body})"
    return body


def repro(prog: Program, mode: str) -> str:
    """A standalone script that runs the program on CPU and on 'tpu' in `mode`."""
    lines = ["import torch, torch_tpu", "from math import nan, inf",
             "from torch_tpu.execution_mode import EagerMode, eager_mode", ""]
    for i, t in enumerate(prog.inputs):
        lines.append(f"v{i} = {literal(t)}")
    n = len(prog.inputs)
    lines.append("")
    lines.append("def program(" + ", ".join(f"v{i}" for i in range(n)) + "):")
    k = n
    results = []
    for s in prog.steps:
        args = [f"v{a}" for a in s.args]
        params = "x" if len(args) == 1 else "x, y"
        call = f"(lambda {params}: {s.code})({', '.join(args)})"
        if s.err:
            lines.append(f"    try:  # CPU raises {s.err.__name__}")
            lines.append(f"        {call}")
            lines.append("        print('no error')")
            lines.append("    except Exception as e:")
            lines.append("        print(type(e).__name__, e)")
            continue
        lines.append(f"    v{k} = {call}  # {s.name}")
        results.append(f"v{k}")
        k += 1
    lines.append(f"    return [{', '.join(results)}]")
    lines.append("")
    lines.append("cpu = program(" + ", ".join(f"v{i}" for i in range(n)) + ")")
    mode_name = {"strict": "STRICT", "debug": "DEBUG", "defer": "DEFER_AND_FUSE", "compiled": "STRICT"}[mode]
    run_fn = 'torch.compile(program, backend="tpu")' if mode == "compiled" else "program"
    lines.append(f"with eager_mode(EagerMode.{mode_name}):")
    lines.append(f"    dev = {run_fn}(" + ", ".join(f"v{i}.to('tpu')" for i in range(n)) + ")")
    lines.append("for c, d in zip(cpu, dev):")
    lines.append("    print(c, d.cpu() if isinstance(d, torch.Tensor) else d, sep='\\n', end='\\n\\n')")
    return "\n".join(lines)


def report(prog: Program, mismatch: Mismatch, device: str = "tpu") -> str:
    small = minimise(prog, mismatch, device)
    return (f"seed {mismatch.seed}, mode {mismatch.mode}, step {mismatch.step} ({prog.steps[mismatch.step].name}): "
            f"{mismatch.what}\n{describe(prog)}\n--- minimised repro ({len(small.steps)} of {len(prog.steps)} "
            f"steps) ---\n{repro(small, mismatch.mode)}")
