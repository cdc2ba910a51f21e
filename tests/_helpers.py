"""Shared helpers for the torch_tpu test-suite.

Every numerical test runs the same computation twice, once on CPU (the
oracle) and once on ``DEV``, and compares the results with
``torch.testing.assert_close``.

``TTPU_TEST_DEVICE`` selects the device under test:

* ``tpu`` (default): the real backend.  ``TORCH_TPU_CPU_DEVICES`` defaults
  to ``2`` and is set *before* ``torch_tpu`` is imported.
* ``cpu``: CPU stands in for the backend so that the test code itself can be
  validated without the backend.  Tests of tpu-only behaviour are skipped.
"""

import os

DEVICE_TYPE = os.environ.get("TTPU_TEST_DEVICE", "tpu")
ON_TPU = DEVICE_TYPE == "tpu"

# Must happen before the first `import torch`: torch auto-loads installed
# device backends (entry point group 'torch.backends') while importing.
if ON_TPU:
    os.environ.setdefault("TORCH_TPU_CPU_DEVICES", "2")
    # A fresh persistent compile cache per test session (subprocesses share
    # it): tests that count compilations must not depend on what an earlier
    # run left in ~/.cache/torch_tpu/xla.
    if "TORCH_TPU_CACHE_DIR" not in os.environ:
        import atexit
        import shutil
        import tempfile
        _cache_dir = tempfile.mkdtemp(prefix="torch_tpu_test_cache_")
        os.environ["TORCH_TPU_CACHE_DIR"] = _cache_dir
        atexit.register(shutil.rmtree, _cache_dir, True)
    import torch_tpu  # noqa: F401  (registers the 'tpu' device)
else:
    # the CPU stand-in must not depend on the state of the backend build
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

import pytest  # noqa: E402
import torch  # noqa: E402

#: The device string every test uses.
DEV = DEVICE_TYPE

#: Marker for tests that only make sense on the real backend.
tpu_only = pytest.mark.skipif(
    not ON_TPU, reason="tests tpu-specific behaviour (TTPU_TEST_DEVICE=cpu)"
)

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
ALL_DTYPES = FLOAT_DTYPES + (
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
)


def dtype_id(dtype):
    return str(dtype).replace("torch.", "")


def sync():
    """Device synchronisation point (no-op on the CPU stand-in)."""
    if ON_TPU:
        torch.tpu.synchronize()


def device_module():
    """``torch.tpu`` on the backend, ``torch`` (CPU RNG API) on the stand-in."""
    return torch.tpu if ON_TPU else torch


# --------------------------------------------------------------------------
# Input generation (always on CPU, deterministic)
# --------------------------------------------------------------------------


def make_tensor(shape, dtype=torch.float32, *, low=None, high=None, seed=0,
                requires_grad=False):
    """Deterministic CPU tensor with values suited to ``dtype``.

    Floats are standard normal unless ``low``/``high`` are given (uniform).
    Integers are uniform in [low, high) (default [-9, 10), [0, 10) for uint8).
    """
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        t = torch.rand(shape, generator=g) > 0.5
    elif dtype.is_floating_point:
        if low is None and high is None:
            t = torch.randn(shape, generator=g, dtype=torch.float64)
        else:
            lo = -1.0 if low is None else low
            hi = 1.0 if high is None else high
            t = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
        t = t.to(dtype)
    else:
        if low is None:
            low = 0 if dtype == torch.uint8 else -9
        if high is None:
            high = 10
        t = torch.randint(low, high, shape, generator=g, dtype=torch.int64).to(dtype)
    if requires_grad:
        t.requires_grad_()
    return t


# --------------------------------------------------------------------------
# Moving structures between devices
# --------------------------------------------------------------------------


def _map(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_map(o, fn) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


def _leaf_to(t, device):
    out = t.detach().to(device)
    if out.data_ptr() == t.data_ptr() and t.numel() > 0:
        out = out.clone()  # never share memory between the two runs
    if t.requires_grad:
        out.requires_grad_()
    return out


def to_device(obj, device=None):
    """Copy every tensor in a nested structure to ``device`` (default DEV).

    Tensors become fresh leaves; ``requires_grad`` is preserved.
    """
    device = DEV if device is None else device
    return _map(obj, lambda t: _leaf_to(t, device))


def to_cpu(obj):
    return _map(obj, lambda t: t.detach().cpu())


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------


def _flatten(obj, path="out"):
    if isinstance(obj, (list, tuple)):
        items = []
        for i, o in enumerate(obj):
            items += _flatten(o, f"{path}[{i}]")
        return items
    if isinstance(obj, dict):
        items = []
        for k in obj:
            items += _flatten(obj[k], f"{path}[{k!r}]")
        return items
    return [(path, obj)]


def assert_same(actual, expected, *, atol=None, rtol=None, equal_nan=True,
                check_device=True, check_stride=False):
    """Compare a (nested) DEV result with the (nested) CPU oracle.

    Tensors must have equal dtype and shape and close values; DEV tensors
    must live on the device under test.  Non-tensor leaves (python scalars,
    version counters, dtypes, shapes...) must be equal; python floats use
    the given tolerances.
    """
    flat_a, flat_e = _flatten(actual), _flatten(expected)
    assert [p for p, _ in flat_a] == [p for p, _ in flat_e], "structure differs"
    for (path, a), (_, e) in zip(flat_a, flat_e):
        if isinstance(e, torch.Tensor):
            assert isinstance(a, torch.Tensor), f"{path}: expected a tensor, got {type(a)}"
            if check_device:
                assert a.device.type == torch.device(DEV).type, (
                    f"{path}: result on {a.device}, expected {DEV}")
            if check_stride:
                assert a.stride() == e.stride(), (
                    f"{path}: stride {a.stride()} != {e.stride()}")
            torch.testing.assert_close(
                a.detach().cpu(), e.detach(), atol=atol, rtol=rtol,
                equal_nan=equal_nan, msg=lambda m, p=path: f"{p}: {m}")
        elif isinstance(e, float) and not isinstance(a, bool):
            torch.testing.assert_close(a, e, atol=atol, rtol=rtol, equal_nan=equal_nan,
                                       msg=lambda m, p=path: f"{p}: {m}")
        else:
            assert type(a) is type(e) and a == e, f"{path}: {a!r} != {e!r}"


def run_both(fn, *args, **kwargs):
    """Run ``fn`` on CPU copies and on DEV copies of the tensor arguments."""
    cpu_args, cpu_kwargs = to_device((args, kwargs), "cpu")
    dev_args, dev_kwargs = to_device((args, kwargs))
    return fn(*cpu_args, **cpu_kwargs), fn(*dev_args, **dev_kwargs)


def check(fn, *args, atol=None, rtol=None, grad=None, grad_atol=None,
          grad_rtol=None, check_stride=False, **kwargs):
    """Run ``fn(*args, **kwargs)`` on CPU and on DEV and compare.

    ``args``/``kwargs`` hold CPU tensors (they are copied to each device).
    If any input tensor requires grad (or ``grad=True``), the floating point
    outputs are back-propagated with the same random cotangents on both
    devices and the input gradients are compared too.
    Returns the (cpu, dev) results.
    """
    cpu_args, cpu_kwargs = to_device((args, kwargs), "cpu")
    dev_args, dev_kwargs = to_device((args, kwargs))
    cpu_out = fn(*cpu_args, **cpu_kwargs)
    dev_out = fn(*dev_args, **dev_kwargs)
    assert_same(dev_out, cpu_out, atol=atol, rtol=rtol, check_stride=check_stride)

    cpu_inputs = [t for _, t in _flatten((cpu_args, cpu_kwargs))
                  if isinstance(t, torch.Tensor) and t.requires_grad]
    dev_inputs = [t for _, t in _flatten((dev_args, dev_kwargs))
                  if isinstance(t, torch.Tensor) and t.requires_grad]
    if grad is None:
        grad = bool(cpu_inputs)
    if grad:
        assert cpu_inputs, "grad=True but no input requires grad"
        cpu_outs = [t for _, t in _flatten(cpu_out)
                    if isinstance(t, torch.Tensor) and t.requires_grad]
        dev_outs = [t for _, t in _flatten(dev_out)
                    if isinstance(t, torch.Tensor) and t.requires_grad]
        assert cpu_outs and len(cpu_outs) == len(dev_outs)
        cots = [make_tensor(o.shape, o.dtype, seed=100 + i) for i, o in enumerate(cpu_outs)]
        cpu_grads = torch.autograd.grad(cpu_outs, cpu_inputs, cots, allow_unused=True)
        dev_grads = torch.autograd.grad(dev_outs, dev_inputs, to_device(cots),
                                        allow_unused=True)
        assert_same(list(dev_grads), list(cpu_grads),
                    atol=atol if grad_atol is None else grad_atol,
                    rtol=rtol if grad_rtol is None else grad_rtol)
    return cpu_out, dev_out


def check_scenario(scenario, *, atol=None, rtol=None):
    """Run ``scenario(device)`` for 'cpu' and DEV and compare what it returns.

    Scenarios build their own tensors on the given device and return a
    nested structure of tensors / python values (e.g. version counters).
    """
    expected = scenario("cpu")
    actual = scenario(DEV)
    assert_same(actual, expected, atol=atol, rtol=rtol)
    return expected, actual


def assert_same_error(fn, *args):
    """``fn`` must raise on DEV with exactly the exception type CPU raises."""
    cpu_args = to_device(args, "cpu")
    dev_args = to_device(args)
    with pytest.raises(Exception) as cpu_exc:
        fn(*cpu_args)
    with pytest.raises(Exception) as dev_exc:
        fn(*dev_args)
    assert type(dev_exc.value) is type(cpu_exc.value), (
        f"CPU raised {type(cpu_exc.value).__name__}: {cpu_exc.value}; "
        f"{DEV} raised {type(dev_exc.value).__name__}: {dev_exc.value}")
    return cpu_exc.value, dev_exc.value


# Modules that `from _helpers import each_eager_mode` run every test once per
# execution mode (STRICT, DEBUG, DEFER_AND_FUSE): semantics must not depend on it.
@pytest.fixture(autouse=True, params=["STRICT", "DEBUG", "DEFER_AND_FUSE"])
def each_eager_mode(request):
    if not ON_TPU:
        if request.param != "STRICT":
            pytest.skip("execution modes exist only on 'tpu'")
        yield
        return
    from torch_tpu.execution_mode import EagerMode, eager_mode
    with eager_mode(EagerMode[request.param]):
        yield
