"""Errors: unsupported ops, the CPU fallback, argument errors and a broken
PJRT plugin path.  Subprocess tests start a fresh interpreter so that the
environment variables are read at client creation."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from _helpers import DEV, assert_same, assert_same_error, make_tensor, tpu_only

FALLBACK_ENABLED = os.environ.get("TORCH_TPU_CPU_FALLBACK", "") not in ("", "0")


def run_python(code, **env_overrides):
    """Run ``code`` in a fresh interpreter that imports the same torch_tpu."""
    import torch_tpu
    env = dict(os.environ)
    env.setdefault("TORCH_TPU_CPU_DEVICES", "2")
    env.pop("TORCH_TPU_CPU_FALLBACK", None)
    env.update(env_overrides)
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(torch_tpu.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(
        [pkg_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)


def _last_json(stdout):
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no result printed; stdout:\n{stdout}"
    return json.loads(lines[-1])


# --------------------------------------------------------------------------
# Unsupported ops
# --------------------------------------------------------------------------


# Ops without a lowering today, most unlikely to gain one first; the tests
# take the first that still raises, so they keep testing the error path as
# coverage grows.
UNSUPPORTED = [
    ("histogram", "torch.histogram(a.flatten(), bins=4)"),
    ("airy_ai", "torch.special.airy_ai(a)"),
    ("zeta", "torch.special.zeta(a, a)"),
]


def _unsupported():
    a = make_tensor((5, 4)).abs().to(DEV) + 1
    for name, expr in UNSUPPORTED:
        try:
            eval(expr, {"torch": torch, "a": a})
        except NotImplementedError:
            return name, expr
    pytest.skip("every candidate op has a lowering now: add a new one to UNSUPPORTED")


@tpu_only
@pytest.mark.skipif(FALLBACK_ENABLED, reason="TORCH_TPU_CPU_FALLBACK is set")
def test_unsupported_op_raises_not_implemented():
    name, expr = _unsupported()
    a = make_tensor((5, 4)).abs().to(DEV) + 1
    with pytest.raises(NotImplementedError) as exc:
        eval(expr, {"torch": torch, "a": a})
    assert name in str(exc.value) and "is not implemented for 'tpu'" in str(exc.value)
    # the process is still usable afterwards
    b = make_tensor((5, 4), seed=1)
    assert_same(a + b.to(DEV), make_tensor((5, 4)).abs() + 1 + b)
    with pytest.raises(NotImplementedError):  # and it raises again, consistently
        eval(expr, {"torch": torch, "a": a})


@tpu_only
def test_linalg_decompositions_take_the_counted_host_path():
    a = make_tensor((5, 4))
    before = dict(torch.tpu.host_op_stats())
    U, S, Vh = torch.linalg.svd(a.to(DEV), full_matrices=False)
    assert U.device.type == "tpu" and S.device.type == "tpu"
    ref = torch.linalg.svd(a, full_matrices=False)
    torch.testing.assert_close(S.cpu(), ref.S)
    torch.testing.assert_close(((U * S) @ Vh).cpu(), a, atol=1e-5, rtol=1e-5)
    after = torch.tpu.host_op_stats()
    assert sum(after.values()) > sum(before.values())
    assert any("svd" in k for k in after)


@tpu_only
def test_cpu_fallback_runs_unsupported_op():
    name, expr = _unsupported()
    res = run_python(f"""
        import json, warnings
        import torch, torch_tpu
        a = torch.rand(5, 4, generator=torch.Generator().manual_seed(0)) + 1.5
        ref = {expr}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cpu_a = a
            a = cpu_a.to("tpu")
            outs = [{expr} for _ in range(3)]
        res = outs[-1]
        res, ref = (res, ref) if isinstance(ref, tuple) else ((res,), (ref,))
        for x, y in zip(res, ref):
            assert x.device.type == "tpu"
            torch.testing.assert_close(x.cpu(), y)
        # the results are usable by device ops
        torch.testing.assert_close((res[0] * 2).cpu(), ref[0] * 2)
        print(json.dumps({{
            "devices": [res[0].device.type],
            "warnings": [str(w.message) for w in caught],
        }}))
    """, TORCH_TPU_CPU_FALLBACK="1")
    assert res.returncode == 0, res.stderr
    out = _last_json(res.stdout)
    assert out["devices"] == ["tpu"]
    py_warnings = [w for w in out["warnings"] if name in w.lower()]
    stderr_lines = [ln for ln in res.stderr.splitlines() if name in ln.lower()]
    assert len(py_warnings) + len(stderr_lines) == 1, (
        f"expected exactly one fallback warning mentioning {name} for 3 calls; "
        f"python warnings: {out['warnings']}, stderr:\n{res.stderr}")


# --------------------------------------------------------------------------
# Argument errors raise like on CPU
# --------------------------------------------------------------------------

ERROR_CASES = {
    "add_shape_mismatch": (lambda a, b: a + b,
                           lambda: (make_tensor((3,)), make_tensor((4,)))),
    "mm_int_float": (torch.mm,
                     lambda: (make_tensor((2, 3), torch.int64), make_tensor((3, 2)))),
    "mm_shape_mismatch": (torch.mm, lambda: (make_tensor((2, 3)), make_tensor((4, 2)))),
    "inplace_float_into_int": (lambda a, b: a.add_(b),
                               lambda: (make_tensor((3,), torch.int64), make_tensor((3,)))),
    "out_dtype_cannot_cast": (lambda a, b, o: torch.add(a, b, out=o),
                              lambda: (make_tensor((3,)), make_tensor((3,)),
                                       torch.zeros(3, dtype=torch.int64))),
    "cat_shape_mismatch": (lambda a, b: torch.cat([a, b]),
                           lambda: (make_tensor((2, 3)), make_tensor((2, 4)))),
    "view_bad_size": (lambda a: a.view(5), lambda: (make_tensor((2, 3)),)),
    "bmm_batch_mismatch": (torch.bmm, lambda: (make_tensor((2, 3, 4)), make_tensor((3, 4, 5)))),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_cpu(case):
    fn, make_args = ERROR_CASES[case]
    cpu_exc, _ = assert_same_error(fn, *make_args())
    assert isinstance(cpu_exc, RuntimeError)


def test_device_usable_after_errors():
    for fn, make_args in ERROR_CASES.values():
        with pytest.raises(RuntimeError):
            fn(*[a.to(DEV) for a in make_args()])
    x = make_tensor((3, 4))
    assert_same(x.to(DEV) * 2 + 1, x * 2 + 1)


# --------------------------------------------------------------------------
# PJRT plugin path errors and lazy client creation
# --------------------------------------------------------------------------

BAD_PLUGIN = "/nonexistent/plugin.so"


@tpu_only
def test_import_does_not_create_client():
    res = run_python("""
        import torch, torch_tpu
        print("IMPORTED")
    """, TORCH_TPU_PJRT_PLUGIN=BAD_PLUGIN)
    assert res.returncode == 0, f"import failed with a bad plugin path:\n{res.stderr}"
    assert "IMPORTED" in res.stdout


@tpu_only
def test_bad_plugin_path_raises_runtime_error():
    res = run_python("""
        import json
        import torch, torch_tpu
        out = {"imported": True}
        for attempt in ("first", "second"):
            try:
                torch.ones(2, device="tpu")
                out[attempt] = None
            except RuntimeError as e:
                out[attempt] = str(e)
            except BaseException as e:
                out[attempt] = "WRONG TYPE %s: %s" % (type(e).__name__, e)
        print(json.dumps(out))
    """, TORCH_TPU_PJRT_PLUGIN=BAD_PLUGIN)
    # exits normally: no abort, no segfault
    assert res.returncode == 0, f"rc={res.returncode}\nstderr:\n{res.stderr}"
    out = _last_json(res.stdout)
    assert out["imported"]
    assert out["first"] is not None, "torch.ones on a broken plugin did not raise"
    assert BAD_PLUGIN in out["first"], out["first"]
    assert out["second"] is not None and not out["second"].startswith("WRONG TYPE"), out



def test_set_device_initialises_the_backend_as_on_cuda():
    # DeviceMesh (and TorchTitan through it) picks a device from LOCAL_RANK
    # unless the backend is initialised; the user's set_device must count.
    r = run_python("""
        import json, torch, torch_tpu
        before = torch.tpu.is_initialized()
        torch.tpu.set_device(0)
        print(json.dumps({"before": before, "after": torch.tpu.is_initialized()}))
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _last_json(r.stdout) == {"before": False, "after": True}
