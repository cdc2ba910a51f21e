#!/usr/bin/env python
"""OpInfo conformance suite for the 'tpu' device.

Every OpInfo in ``torch.testing._internal.common_methods_invocations.op_db``
is run on its own sample inputs (``op.sample_inputs('cpu', dtype, ...)``)
twice: on CPU (the oracle) and on 'tpu' (sample tensors copied there), and
the results are compared with ``torch.testing.assert_close``.  With
``--grad`` the input gradients of differentiable ops are compared as well
(one ``torch.autograd.grad`` per sample, same cotangent on both devices).

Usage::

    python tools/conformance.py [--ops a,b] [--sample-limit N]
        [--dtypes float32,bfloat16] [--grad] [--errors] [--shard K/N] [--out path.json]
        [--update-expected] [--jobs J]

* ``--sample-limit`` (default 4) caps the samples per op, dtype and mode;
  ``0`` runs all of them (a "full" run).
* ``--shard K/N`` (K in 1..N) runs every N-th op of the selection, starting
  with the K-th.
* The JSON report (default ``build/conformance/report.json``) has, per op,
  dtype and mode (``forward``/``grad``): samples passed/failed/skipped, the
  failure kind of the first failing sample (``not_implemented``,
  ``mismatch``, ``exception``, ``crash`` or ``timeout``) and its error
  message truncated to 300 characters.
* Expected failures live in ONE data file,
  ``tests/conformance_expected_failures.json`` (op -> reason, per mode and
  dtype).  ``--update-expected`` rewrites the entries of the ops that were
  run from this run's failures.  Otherwise the run is checked against it:
  the exit status is 1 when an op fails that is not listed there
  (unexpected passes are only reported).

Summary (printed last, also in the report)::

    conformance float32 forward: X/Y ops fully passing (P%), S/T samples
        (+R random ops shape/dtype-checked); gradients: ...

Y counts the ops with at least one compared sample; T the compared samples
(passed + failed).  Samples the CPU oracle itself rejects, and ops or dtypes
the OpInfo does not support on CPU, are skipped.

Comparison: ``assert_close(actual.cpu(), expected)`` with the TOLERANCES
below (float32 forward rtol 1e-4 / atol 1e-5, bfloat16/float16 2e-2),
tuples/lists/dicts elementwise, non-tensors with ``==``.  Gradients: the
sample's ``output_process_fn_grad`` output, one cotangent per
differentiable output (seeded randn, the same on both devices),
``torch.autograd.grad`` with respect to every input tensor that requires
grad; an unused input counts as a zero gradient.

Random ops (``rand*``, ``normal``, ``bernoulli``, ``*dropout*``,
``multinomial``, ...) and ops returning uninitialised memory (``empty*``)
cannot be compared value by value: only the shape and dtype of their
outputs are checked, their gradients are not, and the report marks them
``random``.  So are single samples that ask for dropout
(``scaled_dot_product_attention(dropout_p>0)``...), which count as skipped.
Deterministic factory functions (``arange``, ``zeros``, ``full``,
``linspace``...) are compared by value, their ``device`` argument pointed
at 'tpu'.  Tensors that a sample function creates on CPU whatever the
device (``tensor_split``'s index tensor...) stay on CPU: the sample
function is replayed for device 'meta' to find them.

A failed CHECK in the PJRT plugin aborts the process, so the ops run in
worker subprocesses (``--chunk`` ops each, ``--jobs`` at a time); when a
worker dies, the unit (op, dtype, mode) it was running is recorded as
``crash`` and a new worker carries on with the next one; a unit stuck
for ``--unit-timeout`` seconds is killed and recorded as ``timeout``.
``TTPU_CONFORMANCE_ABORT_ON=<op>`` makes a worker abort on that op, to
exercise this recovery.
"""
from __future__ import annotations

import argparse
import collections
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types
import unittest
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "build" / "conformance" / "report.json"
EXPECTED_FILE = REPO / "tests" / "conformance_expected_failures.json"

DEFAULT_SAMPLE_LIMIT = 4
DEFAULT_CHUNK = 40
DEFAULT_UNIT_TIMEOUT = 300.0
ERROR_CHARS = 300

#: (rtol, atol) per dtype for forward outputs and for input gradients.
TOLERANCES = {
    "float32": {"forward": (1e-4, 1e-5), "grad": (1e-4, 1e-4)},
    "float64": {"forward": (1e-7, 1e-7), "grad": (1e-7, 1e-7)},
    "bfloat16": {"forward": (2e-2, 2e-2), "grad": (5e-2, 5e-2)},
    "float16": {"forward": (2e-2, 2e-2), "grad": (5e-2, 5e-2)},
    # complex: the part type's tolerances (compared as complex values by torch.testing)
    "complex64": {"forward": (1e-4, 1e-5), "grad": (1e-4, 1e-4)},
    "complex128": {"forward": (1e-7, 1e-7), "grad": (1e-7, 1e-7)},
    # integer and bool runs cover the integer-only ops (gcd, bitwise_*...): exact
    "int64": {"forward": (0, 0), "grad": (0, 0)},
    "int32": {"forward": (0, 0), "grad": (0, 0)},
    "bool": {"forward": (0, 0), "grad": (0, 0)},
}

MODES = ("forward", "grad", "errors", "extremal")

#: OpInfo's value generators for elementwise ops (the samples of PyTorch's
#: test_reference_numerics_{small,large,extremal}): mode "extremal" runs them all
_VALUE_KINDS = ("small", "large", "extremal")

# --------------------------------------------------------------------------
# Op selection
# --------------------------------------------------------------------------

_RANDOM_EXACT = {
    "normal", "bernoulli", "multinomial", "uniform", "cauchy", "exponential",
    "geometric", "log_normal", "poisson", "randperm", "rrelu",
    "svd_lowrank", "pca_lowrank",  # random projections
}
_RANDOM_RE = re.compile(r"^(rand|randn|randint)(_like)?$")
_UNINITIALISED_RE = re.compile(r"(^|_)empty(_|$)")
#: names that look random but are deterministic
_NOT_RANDOM = {"native_dropout_backward", "signal.windows.exponential"}


def is_random(op) -> bool:
    """Ops whose values cannot be compared (RNG draws or uninitialised memory)."""
    if op.name in _NOT_RANDOM:
        return False
    last = op.name.split(".")[-1]
    if (last in _RANDOM_EXACT or _RANDOM_RE.match(last) or "dropout" in last
            or _UNINITIALISED_RE.search(last) or last.endswith("rrelu")):
        return True
    return bool(getattr(op, "nondeterministic_seeded", False))


def load_op_db():
    """Import op_db; provides a stand-in for the optional ``expecttest``
    package that ``common_utils`` imports (only its TestCase base is used)."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        mod = types.ModuleType("expecttest")

        class TestCase(unittest.TestCase):
            def assertExpectedInline(self, *a, **k):  # pragma: no cover
                raise unittest.SkipTest("expecttest is not installed")

        mod.TestCase = TestCase
        mod.ACCEPT = False
        sys.modules["expecttest"] = mod
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def op_index(op_db):
    return {op.full_name: op for op in op_db}


def parse_dtype(name):
    import torch
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise SystemExit(f"unknown dtype {name!r}")
    return dt


# --------------------------------------------------------------------------
# Moving samples and comparing results
# --------------------------------------------------------------------------


def _map(obj, fn):
    import torch
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_map(o, fn) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


def _to_device(t, device, keep_grad):
    import torch
    out = t.detach().to(device)
    if out.data_ptr() == t.data_ptr() and t.numel() > 0:
        out = out.clone()  # the two runs never share memory (in-place ops)
    if keep_grad and t.requires_grad:
        out.requires_grad_()
    elif isinstance(out, torch.nn.Parameter):
        out = out.data
    return out


def _is_cpu_device(x):
    import torch
    return (isinstance(x, torch.device) and x.type == "cpu") or x == "cpu"


def _retarget(args, kwargs, device):
    """Point device arguments at the device under test: ``device=`` of
    factory functions, and a CPU device passed positionally (``x.to('cpu')``)."""
    import torch
    if torch.device(device).type == "cpu":
        return args, kwargs
    args = tuple(device if isinstance(a, (str, torch.device)) and _is_cpu_device(a) else a
                 for a in args)
    kwargs = dict(kwargs)
    if kwargs.get("device") is not None:
        kwargs["device"] = device
    return args, kwargs


def _sample_parts(sample):
    return sample.input, tuple(sample.args), dict(sample.kwargs)


def move_sample(sample, device, keep_grad, stay_on_cpu=None):
    """(input, args, kwargs) of a SampleInput, tensors copied to device.

    ``stay_on_cpu`` (one flag per tensor, in traversal order) marks tensors
    the sample function deliberately creates on CPU whatever the device
    (e.g. tensor_split's index tensor); they are copied to CPU instead.
    """
    counter = itertools.count()

    def fn(t):
        i = next(counter)
        on_cpu = stay_on_cpu is not None and stay_on_cpu[i]
        return _to_device(t, "cpu" if on_cpu else device, keep_grad)

    inp, args, kwargs = _sample_parts(sample)
    inp, args, kwargs = _map(inp, fn), _map(args, fn), _map(kwargs, fn)
    return (inp, *_retarget(args, kwargs, device))


def _tensor_signature(sample):
    """[(device type, shape, dtype)] of a sample's tensors in traversal order."""
    sig = []
    for part in _sample_parts(sample):
        _map(part, lambda t: sig.append((t.device.type, tuple(t.shape), t.dtype)))
    return sig


def cpu_masks(op, dtype, requires_grad, cpu_samples):
    """Per sample, which tensors stay on CPU for a non-CPU device.

    The same sample function is run for device 'meta' (same seed); tensors
    it still creates on CPU are the ones that must stay there.  None where
    the meta samples do not line up with the CPU ones.
    """
    import torch
    masks = [None] * len(cpu_samples)
    try:
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gen = op.sample_inputs("meta", dtype, requires_grad=requires_grad)
            meta = list(itertools.islice(gen, len(cpu_samples)))
    except Exception:
        return masks
    for i, (c, m) in enumerate(zip(cpu_samples, meta)):
        try:
            cs, ms = _tensor_signature(c), _tensor_signature(m)
        except Exception:
            continue
        if [x[1:] for x in cs] == [x[1:] for x in ms] and any(x[0] == "cpu" for x in ms):
            masks[i] = [x[0] == "cpu" for x in ms]
    return masks


def is_seeded(op) -> bool:
    """op_db wraps the seeded-random ops in wrapper_set_seed."""
    code = getattr(op.op, "__code__", None)
    return bool(code and "wrapper_set_seed" in code.co_names)


def is_random_sample(op, sample):
    """A sample whose values cannot be compared: of a random op, or of a
    seeded op (scaled_dot_product_attention, multi_head_attention_forward)
    that asks for dropout."""
    if is_random(op):
        return True
    kw = sample.kwargs
    if kw.get("training", None) is False:
        return False
    if "dropout_p" in kw:
        p = kw["dropout_p"]
        return not (isinstance(p, (int, float)) and p == 0)
    return is_seeded(op)


def to_cpu(obj):
    return _map(obj, lambda t: t.detach().cpu())


def _is_float_scalar(x):
    return isinstance(x, float) and not isinstance(x, bool)


def compare(actual, expected, rtol, atol, values=True, path="out"):
    """assert_close over nested outputs; non-tensors with ==.  With
    values=False only tensor shapes and dtypes are checked."""
    import torch
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise AssertionError(f"{path}: expected a tensor, got {type(actual).__name__}")
        if not values:
            if actual.shape != expected.shape or actual.dtype != expected.dtype:
                raise AssertionError(f"{path}: shape/dtype {tuple(actual.shape)} {actual.dtype}"
                                     f" != {tuple(expected.shape)} {expected.dtype}")
            return
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   check_device=False,
                                   msg=lambda m: f"{path}: {m}")
        return
    if isinstance(expected, (list, tuple)) and not isinstance(expected, torch.Size):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise AssertionError(f"{path}: structure differs: {type(actual).__name__}"
                                 f"[{len(actual) if hasattr(actual, '__len__') else '?'}] vs "
                                 f"{type(expected).__name__}[{len(expected)}]")
        for i, (a, e) in enumerate(zip(actual, expected)):
            compare(a, e, rtol, atol, values, f"{path}[{i}]")
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            raise AssertionError(f"{path}: dict keys differ")
        for k in expected:
            compare(actual[k], expected[k], rtol, atol, values, f"{path}[{k!r}]")
        return
    if not values:
        return
    if _is_float_scalar(expected) and _is_float_scalar(actual):
        if math.isnan(expected) and math.isnan(actual):
            return
        if abs(actual - expected) <= atol + rtol * abs(expected):
            return
        raise AssertionError(f"{path}: Scalars are not close! Greatest absolute difference: "
                             f"{abs(actual - expected)} ({actual!r} vs {expected!r})")
    if actual != expected:
        raise AssertionError(f"{path}: {actual!r} != {expected!r}")


def _flat_tensors(obj):
    import torch
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _flat_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _flat_tensors(o)]
    return []


# --------------------------------------------------------------------------
# Failure classification
# --------------------------------------------------------------------------

_ATEN_RE = [
    re.compile(r"operator '([\w:.]+)'"),
    re.compile(r"Could not run '([\w:.]+)'"),
    re.compile(r"\b(aten::[\w.]+)"),
]


def missing_op(message):
    """The ATen operator named by a NotImplementedError message, if any."""
    for rx in _ATEN_RE:
        m = rx.search(message or "")
        if m:
            return m.group(1)
    return None


def reason_for(entry):
    """A one-line expected-failure reason derived from a failing entry."""
    kind, err = entry.get("kind"), entry.get("error") or ""
    if kind == "not_implemented":
        op = missing_op(err)
        return f"not lowered yet: {op}" if op else f"not implemented: {err[:120]}"
    if kind == "mismatch":
        m_abs = re.search(r"(?:Greatest absolute|Absolute) difference: ([^\s]+)", err)
        m_rel = re.search(r"(?:Greatest relative|Relative) difference: ([^\s]+)", err)
        if m_abs:
            r = f"numerics: max abs diff {m_abs.group(1)}"
            if m_rel:
                r += f", max rel diff {m_rel.group(1)}"
            return r
        first = err.split(": ", 1)[-1].splitlines()[0] if err else ""
        for attr in ("dtype", "shape", "device", "layout", "stride"):
            if f"'{attr}'" in err:
                return f"mismatch: {attr} differs ({first[:100]})"
        return f"mismatch: {first[:150]}"
    if kind == "exception":
        first = err.splitlines()[0] if err else ""
        return f"error: {first[:150]}"
    if kind == "crash":
        return f"crash: {err[:150]}"
    if kind == "timeout":
        return f"timeout: {err[:150]}"
    return err[:150]


def _short(exc):
    msg = f"{type(exc).__name__}: {exc}"
    return msg[:ERROR_CHARS]


# --------------------------------------------------------------------------
# Running one unit (op, dtype, mode) in-process
# --------------------------------------------------------------------------


def _new_entry():
    return {"status": "skip", "passed": 0, "failed": 0, "skipped": 0,
            "kind": None, "error": None, "kinds": {}, "skip_reason": None}


def _record_failure(entry, kind, message, index):
    entry["failed"] += 1
    entry["kinds"][kind] = entry["kinds"].get(kind, 0) + 1
    if entry["kind"] is None:
        entry["kind"] = kind
        entry["error"] = message[:ERROR_CHARS]
        entry["first_failed_sample"] = index


def _classify(exc):
    if isinstance(exc, NotImplementedError):
        return "not_implemented"
    return "exception"


def _cotangent(t, seed):
    import torch
    g = torch.Generator().manual_seed(seed)
    return torch.randn(t.shape, dtype=t.dtype, generator=g)


def _forward_sample(op, sample, device, rtol, atol, random, mask=None, nan_alike=False):
    """Returns None (pass), 'skip:<why>' or raises _Failure(kind, message)."""
    try:
        dev_in, dev_args, dev_kwargs = move_sample(sample, device, keep_grad=False,
                                                   stay_on_cpu=mask)
    except Exception as e:
        raise _Failure(_classify(e), "moving the sample to the device: " + _short(e))
    cpu_in, cpu_args, cpu_kwargs = move_sample(sample, "cpu", keep_grad=False)
    try:
        expected = to_cpu(op(cpu_in, *cpu_args, **cpu_kwargs))
    except Exception as e:  # the oracle rejects the sample: nothing to compare
        return f"skip:cpu reference raised {_short(e)[:120]}"
    try:
        actual = to_cpu(op(dev_in, *dev_args, **dev_kwargs))
    except Exception as e:
        raise _Failure(_classify(e), _short(e))
    random_sample = not random and is_random_sample(op, sample)
    try:
        if nan_alike and not random:
            _compare_complex_extremes(actual, expected, rtol, atol)
        else:
            compare(actual, expected, rtol, atol, values=not (random or random_sample))
    except AssertionError as e:
        raise _Failure("mismatch", str(e)[:ERROR_CHARS])
    if random_sample:
        return "skip:dropout sample: only shape/dtype checked"
    return None


def _grad_sample(op, sample, device, rtol, atol, seed, mask=None):
    import torch

    def leaves_of(inp, args, kwargs):
        return [t for t in _flat_tensors((inp, args, kwargs)) if t.requires_grad]

    def run(inp, args, kwargs, dev):
        leaves = leaves_of(inp, args, kwargs)
        out = op.gradcheck_wrapper(op.get_op(), inp, *args, **kwargs)
        out = sample.output_process_fn_grad(out)
        outs = [t for t in _flat_tensors(out)
                if t.requires_grad and (t.is_floating_point() or t.is_complex())]
        return leaves, outs

    if is_random_sample(op, sample):
        return "skip:dropout sample: gradients not compared"
    cpu_in, cpu_args, cpu_kwargs = move_sample(sample, "cpu", keep_grad=True)
    try:
        dev_in, dev_args, dev_kwargs = move_sample(sample, device, keep_grad=True,
                                                   stay_on_cpu=mask)
    except Exception as e:
        raise _Failure(_classify(e), "moving the sample to the device: " + _short(e))
    try:
        leaves, outs = run(cpu_in, cpu_args, cpu_kwargs, "cpu")
        if not leaves or not outs:
            return "skip:no differentiable inputs/outputs"
        cots = [_cotangent(o, seed + i) for i, o in enumerate(outs)]
        expected = torch.autograd.grad(outs, leaves, cots, allow_unused=True)
        expected = [torch.zeros_like(l).detach() if g is None else g.detach()
                    for g, l in zip(expected, leaves)]
    except Exception as e:
        return f"skip:cpu reference raised {_short(e)[:120]}"
    try:
        d_leaves, d_outs = run(dev_in, dev_args, dev_kwargs, device)
        if len(d_outs) != len(outs) or len(d_leaves) != len(leaves):
            raise _Failure("mismatch", f"differentiable outputs/inputs differ: "
                           f"{len(d_outs)}/{len(d_leaves)} vs {len(outs)}/{len(leaves)}")
        actual = torch.autograd.grad(d_outs, d_leaves,
                                     [c.to(o.device) for c, o in zip(cots, d_outs)],
                                     allow_unused=True)
        actual = [torch.zeros_like(l).detach().cpu() if g is None else g.detach().cpu()
                  for g, l in zip(actual, leaves)]
    except _Failure:
        raise
    except Exception as e:
        raise _Failure(_classify(e), _short(e))
    try:
        compare(actual, expected, rtol, atol, path="grad")
    except AssertionError as e:
        raise _Failure("mismatch", str(e)[:ERROR_CHARS])
    return None


class _Failure(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind, self.message = kind, message


def _host_calls(device):
    """Calls so far of ops on torch_tpu's explicit host path (linalg, FFT)."""
    if device == "cpu":
        return 0
    import torch
    return sum(torch.tpu.host_op_stats().values())


def _error_input_unit(op, entry, sample_limit, device):
    """OpInfo's error inputs (mode "errors"): each input CPU refuses with the declared exception
    type must raise the same type on the device, with a message matching the declared pattern.
    Inputs CPU does not refuse that way (CUDA-only checks) are skipped."""
    if op.error_inputs_func is None:
        entry["skip_reason"] = "the OpInfo has no error inputs"
        return entry

    def call(ei):
        s = ei.sample_input
        return to_cpu(op(s.input, *s.args, **s.kwargs))  # reads the result: device-side checks raise

    def call_moved(ei):  # a CPU-only error input, its tensors copied to the device
        inp, args, kwargs = move_sample(ei.sample_input, device, keep_grad=False)
        return to_cpu(op(inp, *args, **kwargs))

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpu_inputs = list(itertools.islice(op.error_inputs("cpu"), sample_limit or None))
            dev_inputs = list(itertools.islice(op.error_inputs(device), sample_limit or None))
    except Exception as e:
        entry["skip_reason"] = f"error input generation failed: {_short(e)[:200]}"
        return entry
    # OpInfo yields some inputs for CPU only (bounds checks CUDA does not do,
    # guarded by the device type): the device's list is then shorter, and an
    # input of CPU's list that is not next in the device's list (same type and
    # pattern) runs as a copy of the CPU input moved to the device.
    aligned, j = [], 0
    for ci in cpu_inputs:
        di = dev_inputs[j] if j < len(dev_inputs) else None
        if di is not None and (di.error_type, di.error_regex) == (ci.error_type, ci.error_regex):
            aligned.append((ci, di))
            j += 1
        else:
            aligned.append((ci, None))
    for i, (ci, di) in enumerate(aligned):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                call(ci)
                cpu_err = None
            except Exception as e:  # noqa: BLE001
                cpu_err = e
            if cpu_err is None or not isinstance(cpu_err, ci.error_type):
                entry["skipped"] += 1
                entry["skip_reason"] = entry["skip_reason"] or "CPU does not raise the declared error"
                continue
            try:
                call(di) if di is not None else call_moved(ci)
                dev_err = None
            except Exception as e:  # noqa: BLE001
                dev_err = e
        want = f"CPU raises {type(cpu_err).__name__}: {_short(cpu_err)[:120]}"
        if dev_err is None:
            _record_failure(entry, "no_error", f"{want}; the device raised nothing", i)
        elif not isinstance(dev_err, type(cpu_err)):
            _record_failure(entry, _classify(dev_err) if isinstance(dev_err, NotImplementedError) else "wrong_type",
                            f"{want}; the device raised {type(dev_err).__name__}: {_short(dev_err)[:160]}", i)
        elif ci.error_regex and not re.search(ci.error_regex, str(dev_err)):
            _record_failure(entry, "message", f"{type(dev_err).__name__}: {_short(dev_err)[:160]} does not match "
                                              f"{ci.error_regex!r}", i)
        else:
            entry["passed"] += 1
    if entry["failed"]:
        entry["status"] = "fail"
    elif entry["passed"]:
        entry["status"] = "pass"
    return entry


def is_ufunc(op) -> bool:
    """Elementwise unary or binary OpInfos: the ops with small/large/extremal value samples."""
    from torch.testing._internal.opinfo.core import BinaryUfuncInfo, UnaryUfuncInfo
    return isinstance(op, (UnaryUfuncInfo, BinaryUfuncInfo))


def value_samples(op, dtype):
    """Small, large and extremal (inf, -inf, nan) value samples of an elementwise OpInfo,
    from PyTorch's own generators; kinds a dtype has none of (ints: extremal) are left out."""
    from torch.testing._internal.opinfo import core
    arity = "unary" if isinstance(op, core.UnaryUfuncInfo) else "binary"
    samples = []
    for kind in _VALUE_KINDS:
        gen = getattr(core, f"generate_elementwise_{arity}_{kind}_value_tensors")
        try:
            samples += list(gen(op, device="cpu", dtype=dtype, requires_grad=False))
        except ValueError:  # "Unsupported dtype!": no such values for this dtype
            continue
    return samples


def _compare_complex_extremes(actual, expected, rtol, atol):
    """compare() that holds complex infinities and NaNs: finite elements stay complex
    (compared by magnitude, as assert_close does); an element with a non-finite part
    is compared part by part (the complex difference of two infinities is NaN), a
    NaN part counting as NaN whatever the other part (CPU's own kernels differ
    there: nan+0j from one path, nan+nanj from another)."""
    import torch
    if isinstance(expected, torch.Tensor) and expected.is_complex() and isinstance(actual, torch.Tensor) \
            and actual.is_complex() and actual.shape == expected.shape:
        a, e = actual.reshape(-1), expected.reshape(-1)
        fin = torch.isfinite(a) & torch.isfinite(e)
        compare(a[fin], e[fin], rtol, atol, path="out[finite]")
        nan = complex(math.nan, math.nan)

        def parts(t):
            t = t[~fin]
            return torch.view_as_real(torch.where(torch.isnan(t), torch.full_like(t, nan), t))
        compare(parts(a), parts(e), rtol, atol, path="out[non-finite]")
        return
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)) and len(actual) == len(expected):
        for x, y in zip(actual, expected):
            _compare_complex_extremes(x, y, rtol, atol)
        return
    compare(actual, expected, rtol, atol)


def run_unit(op, dtype_name, mode, sample_limit=DEFAULT_SAMPLE_LIMIT, device="tpu"):
    """Run one (op, dtype, mode) and return its report entry."""
    import torch
    dtype = parse_dtype(dtype_name)
    entry = _new_entry()
    random = is_random(op)
    t0 = time.perf_counter()
    if mode == "errors":
        entry = _error_input_unit(op, entry, sample_limit, device)
        entry["seconds"] = round(time.perf_counter() - t0, 3)
        return entry
    if mode == "extremal" and not is_ufunc(op):
        entry["skip_reason"] = "not an elementwise OpInfo: no small/large/extremal samples"
        return entry
    if mode in ("forward", "extremal"):
        if not op.supports_dtype(dtype, "cpu"):
            entry["skip_reason"] = f"{dtype_name} not supported by the op on CPU"
            return entry
    else:
        if random:
            entry["status"] = "random"
            entry["skip_reason"] = "random op: gradients not compared"
            return entry
        if not op.supports_autograd:
            entry["skip_reason"] = "op does not support autograd"
            return entry
        if dtype not in op.supported_backward_dtypes("cpu"):
            entry["skip_reason"] = f"{dtype_name} backward not supported on CPU"
            return entry
    rtol, atol = TOLERANCES.get(dtype_name, TOLERANCES["float32"])["grad" if mode == "grad" else "forward"]
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if mode == "extremal":  # a handful of samples: all of them
                samples = value_samples(op, dtype)
            else:
                gen = op.sample_inputs("cpu", dtype, requires_grad=(mode == "grad"))
                samples = list(itertools.islice(gen, sample_limit or None))
    except Exception as e:
        entry["skip_reason"] = f"sample generation failed: {_short(e)[:200]}"
        return entry
    masks = ([None] * len(samples) if device == "cpu" or mode == "extremal"
             else cpu_masks(op, dtype, mode == "grad", samples))
    host_before = _host_calls(device)
    for i, (sample, mask) in enumerate(zip(samples, masks)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if mode in ("forward", "extremal"):
                    res = _forward_sample(op, sample, device, rtol, atol, random, mask,
                                          nan_alike=mode == "extremal")
                else:
                    res = _grad_sample(op, sample, device, rtol, atol, 1000 + i, mask)
        except _Failure as f:
            _record_failure(entry, f.kind, f.message, i)
            continue
        except Exception as e:  # anything the harness itself did not expect
            _record_failure(entry, _classify(e), _short(e), i)
            continue
        if res is None:
            entry["passed"] += 1
        else:
            entry["skipped"] += 1
            entry["skip_reason"] = entry["skip_reason"] or res[5:]
    if entry["failed"]:
        entry["status"] = "fail"
    elif entry["passed"]:
        entry["status"] = "random" if random else "pass"
    # ran (partly) through torch_tpu's explicit host path: counted apart
    entry["host"] = _host_calls(device) > host_before
    entry["seconds"] = round(time.perf_counter() - t0, 3)
    return entry


# --------------------------------------------------------------------------
# Worker process
# --------------------------------------------------------------------------


def worker_main(units_file, results_file, sample_limit, device):
    os.environ.setdefault("TORCH_TPU_CPU_DEVICES", "1")
    sys.path.insert(0, str(REPO))
    import torch
    if device != "cpu":
        import torch_tpu  # noqa: F401
    ops = op_index(load_op_db())
    units = json.loads(Path(units_file).read_text())
    abort_on = os.environ.get("TTPU_CONFORMANCE_ABORT_ON")  # tests the crash recovery
    with open(results_file, "a", buffering=1) as out:
        for name, dtype_name, mode in units:
            out.write(json.dumps({"event": "start", "unit": [name, dtype_name, mode],
                                  "time": time.time()}) + "\n")
            out.flush()
            if abort_on == name:
                os.abort()
            try:
                entry = run_unit(ops[name], dtype_name, mode, sample_limit, device)
            except Exception as e:  # harness bug: keep going
                entry = _new_entry()
                _record_failure(entry, "exception", "harness: " + _short(e), -1)
                entry["status"] = "fail"
                traceback.print_exc()
            out.write(json.dumps({"event": "done", "unit": [name, dtype_name, mode],
                                  "entry": entry}) + "\n")
            out.flush()
    return 0


# --------------------------------------------------------------------------
# Parent: scheduling workers, crash recovery
# --------------------------------------------------------------------------


class _Worker:
    def __init__(self, units, args, tmpdir, seq):
        self.units = list(units)
        self.units_file = Path(tmpdir) / f"units{seq}.json"
        self.results_file = Path(tmpdir) / f"results{seq}.jsonl"
        self.stderr_file = Path(tmpdir) / f"stderr{seq}.log"
        self.units_file.write_text(json.dumps(self.units))
        self.results_file.write_text("")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--_worker",
               str(self.units_file), str(self.results_file),
               "--sample-limit", str(args.sample_limit), "--device", args.device]
        env = dict(os.environ)
        env.setdefault("TORCH_TPU_CPU_DEVICES", "1")
        self.stderr = open(self.stderr_file, "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr,
                                     env=env, cwd=str(REPO), start_new_session=True)
        self.started = time.time()
        self.offset = 0
        self.current = None          # unit started, not done
        self.current_since = None
        self.done = []               # (unit, entry)

    def poll_results(self):
        with open(self.results_file) as f:
            f.seek(self.offset)
            data = f.read()
        # only consume complete lines
        end = data.rfind("\n") + 1
        self.offset += len(data[:end].encode())
        for line in data[:end].splitlines():
            rec = json.loads(line)
            unit = tuple(rec["unit"])
            if rec["event"] == "start":
                self.current, self.current_since = unit, rec["time"]
            else:
                self.done.append((unit, rec["entry"]))
                self.current = None

    def stderr_tail(self):
        """The most telling line the dead worker left on stderr."""
        try:
            lines = [l.strip() for l in
                     self.stderr_file.read_text(errors="replace").splitlines() if l.strip()]
        except OSError:
            lines = []
        # glog warnings/infos (e.g. torch's 'No CUDA runtime is found') say nothing
        lines = [l for l in lines if not re.match(r"^[WI]\d{4} ", l)]
        for l in reversed(lines):  # the plugin's CHECK message, if there is one
            if re.search(r"Check failed|CHECK|^F\d{4} |Fatal|terminate|Abort|Segmentation", l):
                return l[:200]
        return lines[-1][:200] if lines else "nothing on stderr"

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def _crash_entry(kind, message):
    entry = _new_entry()
    _record_failure(entry, kind, message, -1)
    entry["status"] = "fail"
    return entry


def run_parallel(units, args):
    """Run units in worker subprocesses; returns {unit: entry}."""
    results = {}
    chunks = []
    # chunk by op so an op's units stay together
    by_op = collections.OrderedDict()
    for u in units:
        by_op.setdefault(u[0], []).append(u)
    ops = list(by_op)
    for i in range(0, len(ops), args.chunk):
        chunks.append([u for name in ops[i:i + args.chunk] for u in by_op[name]])
    pending = collections.deque(chunks)
    running = []
    seq = itertools.count()
    total = len(units)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="ttpu-conformance-") as tmp:
        try:
            _schedule(pending, running, results, args, tmp, seq, total, t0)
        finally:  # workers run in their own sessions: never leave them behind
            for w in running:
                w.kill()
                w.stderr.close()
    return results


def _schedule(pending, running, results, args, tmp, seq, total, t0):
    last_print = 0.0
    while pending or running:
        while pending and len(running) < args.jobs:
            running.append(_Worker(pending.popleft(), args, tmp, next(seq)))
        time.sleep(0.2)
        for w in list(running):
            w.poll_results()
            for unit, entry in w.done:
                results[unit] = entry
            w.done.clear()
            rc = w.proc.poll()
            timed_out = (rc is None and w.current is not None
                         and time.time() - w.current_since > args.unit_timeout)
            if rc is None and not timed_out:
                continue
            if timed_out:
                w.kill()
                w.poll_results()
                for unit, entry in w.done:
                    results[unit] = entry
                w.done.clear()
            running.remove(w)
            w.stderr.close()
            remaining = [u for u in w.units if u not in results]
            if not remaining:
                continue
            if timed_out:
                bad = w.current
                results[bad] = _crash_entry(
                    "timeout", f"no result after {args.unit_timeout:.0f} s; worker killed")
            elif w.current is not None:
                bad = w.current
                sig = -rc if rc < 0 else None
                how = (f"signal {signal.Signals(sig).name}" if sig else f"exit status {rc}")
                results[bad] = _crash_entry(
                    "crash", f"worker died ({how}): {w.stderr_tail()}")
            else:  # died between units (e.g. while starting): retry once as crash
                bad = remaining[0]
                results[bad] = _crash_entry(
                    "crash", f"worker died before running (exit {rc}): {w.stderr_tail()}")
            rest = [u for u in remaining if u not in results]
            if rest:
                pending.appendleft(rest)
        now = time.time()
        if not args.quiet and now - last_print > 15:
            last_print = now
            print(f"  ... {len(results)}/{total} units done, {now - t0:.0f} s",
                  file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Report, summary, expected failures
# --------------------------------------------------------------------------


def summarize(report, dtype_name, mode):
    ops_total = ops_pass = s_pass = s_total = host_pass = 0
    random_ok = random_total = 0
    for name, rec in report["ops"].items():
        e = rec.get(dtype_name, {}).get(mode)
        if e is None:
            continue
        if rec.get("random"):
            if e["status"] in ("random", "fail"):
                random_total += 1
                random_ok += e["status"] == "random"
            continue
        if e["status"] not in ("pass", "fail"):
            continue
        ops_total += 1
        ops_pass += e["status"] == "pass"
        host_pass += e["status"] == "pass" and bool(e.get("host"))
        s_pass += e["passed"]
        s_total += e["passed"] + e["failed"]
    return dict(ops_pass=ops_pass, ops_total=ops_total, host_pass=host_pass, samples_pass=s_pass,
                samples_total=s_total, random_ok=random_ok, random_total=random_total)


def _fmt(s):
    pct = 100.0 * s["ops_pass"] / s["ops_total"] if s["ops_total"] else 0.0
    host = f", {s['host_pass']} of them through the host path" if s.get("host_pass") else ""
    return (f"{s['ops_pass']}/{s['ops_total']} ops fully passing ({pct:.1f}%{host}), "
            f"{s['samples_pass']}/{s['samples_total']} samples")


def summary_lines(report):
    lines = []
    only = report["settings"].get("only_errors") or report["settings"].get("only_extremal")
    for dt in [] if only else report["settings"]["dtypes"]:
        fwd = summarize(report, dt, "forward")
        line = f"conformance {dt} forward: {_fmt(fwd)}"
        if fwd["random_total"]:
            line += (f" (+{fwd['random_ok']}/{fwd['random_total']} random ops"
                     f" shape/dtype-checked)")
        if report["settings"]["grad"]:
            line += f"; gradients: {_fmt(summarize(report, dt, 'grad'))}"
        else:
            line += "; gradients: not run (--grad)"
        lines.append(line)
    if report["settings"].get("extremal"):
        for dt in report["settings"]["dtypes"]:
            lines.append(f"conformance {dt} small/large/extremal values: "
                         f"{_fmt(summarize(report, dt, 'extremal'))}")
    if report["settings"].get("errors"):
        s = summarize(report, report["settings"]["dtypes"][0], "errors")
        lines.append(f"conformance error inputs: {s['ops_pass']}/{s['ops_total']} ops raise as CPU does "
                     f"(type and message), {s['samples_pass']}/{s['samples_total']} inputs")
    return lines


def missing_op_table(report):
    """aten op -> sorted OpInfo names whose first failure is its NotImplementedError."""
    table = collections.defaultdict(set)
    for name, rec in report["ops"].items():
        for dt, modes in rec.items():
            if not isinstance(modes, dict):
                continue
            for mode, e in modes.items():
                if e.get("kind") == "not_implemented":
                    table[missing_op(e["error"]) or "?"].add(name)
    return {k: sorted(v) for k, v in sorted(table.items(), key=lambda kv: (-len(kv[1]), kv[0]))}


def failures(report):
    """{mode: {dtype: {op: reason}}} for every failing entry of the report."""
    out = {}
    for name, rec in report["ops"].items():
        for dt, modes in rec.items():
            if not isinstance(modes, dict):
                continue
            for mode, e in modes.items():
                if e["status"] == "fail":
                    out.setdefault(mode, {}).setdefault(dt, {})[name] = reason_for(e)
    return out


def load_expected(path=EXPECTED_FILE):
    """{mode: {dtype: {op: reason}}} from the expected-failures data file."""
    path = Path(path)
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {m: data.get(m, {}) for m in MODES}


def write_expected(report, path=EXPECTED_FILE):
    path = Path(path)
    old = json.loads(path.read_text()) if path.exists() else {}
    new = failures(report)
    ran = {(n, dt, m) for n, rec in report["ops"].items() for dt, modes in rec.items()
           if isinstance(modes, dict) for m in modes}
    data = {
        "_comment": ("Expected failures of tools/conformance.py: mode -> dtype -> OpInfo "
                     "name -> reason (derived from the first failing sample). Regenerate "
                     "with `python tools/conformance.py --update-expected` (add --grad for "
                     "the gradient section); tests/test_conformance.py xfails these."),
        "_generated_with": report["settings"],
    }
    for mode in MODES:
        section = {}
        for dt in sorted(set(old.get(mode, {})) | set(new.get(mode, {}))):
            ops = {n: r for n, r in old.get(mode, {}).get(dt, {}).items()
                   if (n, dt, mode) not in ran}
            ops.update(new.get(mode, {}).get(dt, {}))
            if ops:
                section[dt] = dict(sorted(ops.items()))
        data[mode] = section
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    return path


def check_expected(report, expected):
    unexpected_fail, unexpected_pass = [], []
    for name, rec in report["ops"].items():
        for dt, modes in rec.items():
            if not isinstance(modes, dict):
                continue
            for mode, e in modes.items():
                listed = name in expected.get(mode, {}).get(dt, {})
                if e["status"] == "fail" and not listed:
                    unexpected_fail.append((name, dt, mode, reason_for(e)))
                elif e["status"] in ("pass", "random") and listed:
                    unexpected_pass.append((name, dt, mode))
    return unexpected_fail, unexpected_pass


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def select_ops(op_db, args):
    names = [op.full_name for op in op_db]
    if args.ops:
        wanted = [n.strip() for n in args.ops.split(",") if n.strip()]
        known = set(names)
        unknown = [n for n in wanted if n not in known]
        # a bare name also selects its variants (e.g. 'max' -> 'max.reduction_with_dim')
        sel = [n for n in names if n in wanted or n.split(".")[0] in wanted
               or any(n.startswith(w + ".") for w in wanted)]
        unknown = [w for w in unknown if not any(n == w or n.startswith(w + ".") for n in sel)]
        if unknown:
            raise SystemExit(f"unknown OpInfo names: {', '.join(unknown)}")
        names = sel
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        if not 1 <= k <= n:
            raise SystemExit("--shard K/N needs 1 <= K <= N")
        names = names[k - 1::n]
    return names


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", help="comma-separated OpInfo names (default: all of op_db)")
    p.add_argument("--sample-limit", type=int, default=DEFAULT_SAMPLE_LIMIT,
                   help="samples per op/dtype/mode (default %(default)s; 0 = all)")
    p.add_argument("--dtypes", default="float32", help="comma-separated (default float32)")
    p.add_argument("--grad", action="store_true", help="also compare input gradients")
    p.add_argument("--errors", action="store_true",
                   help="also run OpInfo's error inputs: the same exception type and message as CPU")
    p.add_argument("--only-errors", action="store_true", help="run the error inputs alone")
    p.add_argument("--extremal", action="store_true",
                   help="also run the small/large/extremal (inf, nan) value samples of elementwise ops")
    p.add_argument("--only-extremal", action="store_true", help="run the value samples alone")
    p.add_argument("--shard", help="K/N: run the K-th of N interleaved shards of the ops")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="JSON report path")
    p.add_argument("--update-expected", action="store_true",
                   help=f"rewrite {EXPECTED_FILE.relative_to(REPO)} entries of the ops run")
    p.add_argument("--expected", default=str(EXPECTED_FILE), help=argparse.SUPPRESS)
    p.add_argument("--jobs", type=int, default=max(1, min(os.cpu_count() or 1, 2)),
                   help="worker processes at a time (default %(default)s)")
    p.add_argument("--chunk", type=int, default=DEFAULT_CHUNK,
                   help="ops per worker process (default %(default)s)")
    p.add_argument("--unit-timeout", type=float, default=DEFAULT_UNIT_TIMEOUT,
                   help="kill a worker stuck this long on one op (default %(default)s s)")
    p.add_argument("--device", default="tpu", help=argparse.SUPPRESS)
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--_worker", nargs=2, metavar=("UNITS", "RESULTS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args._worker:
        return worker_main(*args._worker, args.sample_limit, args.device)

    # SIGTERM (and SIGINT, even where a background shell ignores it) unwinds
    # through run_parallel's cleanup, which kills the worker processes
    def _stop(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    t0 = time.time()
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in TOLERANCES:
            raise SystemExit(f"--dtypes: choose from {', '.join(TOLERANCES)}")
    op_db = load_op_db()
    ops = op_index(op_db)
    names = select_ops(op_db, args)
    modes = ([] if args.only_errors or args.only_extremal
             else ["forward"] + (["grad"] if args.grad else []))
    if args.extremal or args.only_extremal:
        modes.append("extremal")
    units = [(n, d, m) for n in names for d in dtypes for m in modes
             if m != "extremal" or is_ufunc(ops[n])]
    if args.errors or args.only_errors:  # error inputs take no dtype: once, under the first
        units += [(n, dtypes[0], "errors") for n in names]
    if not args.quiet:
        print(f"conformance: {len(names)} ops x {dtypes} x {modes}, sample limit "
              f"{args.sample_limit or 'all'}, {args.jobs} job(s)", file=sys.stderr, flush=True)
    results = run_parallel(units, args)

    report = {
        "settings": {"dtypes": dtypes, "grad": args.grad, "errors": args.errors or args.only_errors, "sample_limit": args.sample_limit,
                     "ops": args.ops, "shard": args.shard, "device": args.device,
                     "only_errors": args.only_errors,
                     "extremal": args.extremal or args.only_extremal,
                     "only_extremal": args.only_extremal},
        "ops": {},
    }
    for n in names:
        rec = {"random": is_random(ops[n])}
        for d in dtypes:
            rec[d] = {m: results[(n, d, m)] for m in modes + ["errors"] if (n, d, m) in results}
        report["ops"][n] = rec
    lines = summary_lines(report)
    report["summary"] = lines
    report["missing_aten_ops"] = {k: {"count": len(v), "ops": v}
                                  for k, v in missing_op_table(report).items()}
    report["seconds"] = round(time.time() - t0, 1)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")

    rc = 0
    if args.update_expected:
        path = write_expected(report, args.expected)
        print(f"expected failures written to {path}")
    else:
        unexpected_fail, unexpected_pass = check_expected(report, load_expected(args.expected))
        for n, d, m, why in unexpected_fail[:50]:
            print(f"UNEXPECTED FAILURE {n} [{d} {m}]: {why}")
        if len(unexpected_fail) > 50:
            print(f"... and {len(unexpected_fail) - 50} more unexpected failures")
        if unexpected_pass:
            print(f"{len(unexpected_pass)} expected failure(s) now pass: "
                  + ", ".join(f"{n}[{d} {m}]" for n, d, m in unexpected_pass[:30])
                  + (" ..." if len(unexpected_pass) > 30 else ""))
        rc = 1 if unexpected_fail else 0
    table = missing_op_table(report)
    if table:
        print("top missing lowerings (aten op: OpInfos failing on it first):")
        for k, v in list(table.items())[:15]:
            print(f"  {len(v):4d}  {k}")
    print(f"report: {out}  ({report['seconds']:.0f} s)")
    for line in lines:
        print(line)
    return rc


if __name__ == "__main__":
    sys.exit(main())
