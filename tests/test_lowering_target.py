"""Target-aware lowerings (issue #15, step 2): a lowering that is only good on
one plugin is chosen by the plugin's platform, the portable form is the
default. Today's case: XLA:CPU's column sums as a product with ones; the
portable form (what GPU and TPU plugins get) is a plain reduce. Both must
give CPU's values; the emitted StableHLO shows which form was chosen."""
import glob
import os
import subprocess
import sys
import textwrap

from _helpers import tpu_only

pytestmark = tpu_only

CHILD = textwrap.dedent("""
    import sys, torch, torch_tpu
    x = torch.randn(96, 64, generator=torch.Generator().manual_seed(0))
    d = x.to("tpu")
    assert torch_tpu._C._lowering_target() == "cpu"  # the CPU plugin's platform
    torch_tpu._C._set_lowering_target(sys.argv[1])
    got = d.sum(0).cpu()
    torch.testing.assert_close(got, x.sum(0), rtol=1e-5, atol=1e-4)
    print("ok", torch_tpu._C._lowering_target())
""")


def run(target, tmp_path):
    dump = tmp_path / target
    dump.mkdir()
    out = subprocess.run([sys.executable, "-c", CHILD, target], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, TORCH_TPU_DUMP_DIR=str(dump)))
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"ok {target}" in out.stdout
    return [open(f).read() for f in glob.glob(str(dump / "*.mlir"))]


def test_portable_lowering_is_a_plain_reduce(tmp_path):
    modules = [m for m in run("portable", tmp_path) if "reduce" in m or "dot_general" in m]
    assert modules and not any("dot_general" in m for m in modules)


def test_cpu_target_uses_the_xla_cpu_form(tmp_path):
    modules = run("cpu", tmp_path)
    assert any("dot_general" in m for m in modules)
