"""Fast OpInfo conformance subset (tools/conformance.py) for CI.

A fixed list of common OpInfos from PyTorch's op_db: the first
``SAMPLES`` sample inputs of each, float32, forward only, on DEV against the
CPU oracle.  Ops listed in ``tests/conformance_expected_failures.json``
(forward / float32) are xfail(strict=False) with the file's reason; every
other op must pass.  The full suite is ``python tools/conformance.py``.
"""

import importlib.util
from pathlib import Path

import pytest

from _helpers import DEV

_TOOL = Path(__file__).resolve().parent.parent / "tools" / "conformance.py"
_spec = importlib.util.spec_from_file_location("ttpu_conformance", _TOOL)
conformance = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conformance)

SAMPLES = 2

#: OpInfo full names (name[.variant_test_name]) in op_db.
OPS = [
    # elementwise
    "add", "sub", "mul", "div.no_rounding_mode", "neg", "exp", "log", "rsqrt",
    "tanh", "sigmoid", "pow", "where", "masked_fill",
    # reductions
    "sum", "mean", "amax", "argmax", "max.reduction_with_dim",
    # linear algebra
    "matmul", "mm", "bmm", "nn.functional.linear",
    # nn
    "softmax", "log_softmax", "nn.functional.relu", "nn.functional.gelu",
    "nn.functional.silu", "nn.functional.layer_norm", "nn.functional.embedding",
    # shapes and indexing
    "cat", "stack", "transpose", "permute", "reshape", "view", "expand", "clone",
    "gather", "scatter", "index_select", "tril", "triu",
]

_EXPECTED = conformance.load_expected().get("forward", {}).get("float32", {})


def _params():
    for name in OPS:
        marks = ()
        if name in _EXPECTED:
            marks = pytest.mark.xfail(reason=_EXPECTED[name], strict=False)
        yield pytest.param(name, marks=marks, id=name)


@pytest.fixture(scope="module")
def ops():
    return conformance.op_index(conformance.load_op_db())


def test_op_names_exist(ops):
    missing = [n for n in OPS if n not in ops]
    assert not missing, f"not in op_db: {missing}"


@pytest.mark.parametrize("name", list(_params()))
def test_opinfo_forward_float32(name, ops):
    if name not in ops:
        pytest.fail(f"{name} is not in op_db")
    entry = conformance.run_unit(ops[name], "float32", "forward", SAMPLES, device=DEV)
    assert entry["failed"] == 0, (f"{entry['failed']} sample(s) failed, first "
                                  f"({entry['kind']}): {entry['error']}")
    assert entry["passed"] > 0, f"no sample compared: {entry['skip_reason']}"


# Every elementwise OpInfo (unary and binary ufuncs) on PyTorch's small, large and
# extremal (inf, -inf, NaN) value samples, float32, against CPU. The failures CPU's own
# kernels explain are listed, with the reason, in the file's "extremal" section.
_EXTREMAL_EXPECTED = conformance.load_expected().get("extremal", {}).get("float32", {})


def _ufunc_params():
    for op in conformance.load_op_db():
        if conformance.is_ufunc(op):
            marks = ()
            if op.full_name in _EXTREMAL_EXPECTED:
                marks = pytest.mark.xfail(reason=_EXTREMAL_EXPECTED[op.full_name], strict=True)
            yield pytest.param(op.full_name, marks=marks, id=op.full_name)


@pytest.mark.parametrize("name", list(_ufunc_params()))
def test_opinfo_extremal_values_float32(name, ops):
    entry = conformance.run_unit(ops[name], "float32", "extremal", device=DEV)
    assert entry["failed"] == 0, (f"{entry['failed']} sample(s) failed, first "
                                  f"({entry['kind']}): {entry['error']}")
    assert entry["passed"] > 0 or entry["skip_reason"], "no sample compared"
