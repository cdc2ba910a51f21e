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


# torch._scaled_mm's float8 product: widened to f32 on the portable form (and
# XLA:CPU); the float8 operands go to the dot as they are on GPU and TPU,
# whose XLA has float8 dots. XLA:CPU runs either form, so both are checked
# against CPU's _scaled_mm here.
F8_CHILD = textwrap.dedent("""
    import sys, torch, torch_tpu
    torch.tpu.init()
    torch_tpu._C._set_lowering_target(sys.argv[1])
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(32, 64, generator=g) * 4).to(torch.float8_e4m3fn)
    w = (torch.randn(48, 64, generator=g) * 4).to(torch.float8_e5m2)
    sa, sb = torch.tensor(0.5), torch.tensor(2.0)
    ref = torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.float32)
    got = torch._scaled_mm(a.to("tpu"), w.to("tpu").t(), sa.to("tpu"), sb.to("tpu"), out_dtype=torch.float32)
    torch.testing.assert_close(got.cpu(), ref, rtol=0, atol=0)
    print("ok", torch_tpu._C._lowering_target())
""")


def f8_dots(target, tmp_path):
    dump = tmp_path / target
    dump.mkdir()
    out = subprocess.run([sys.executable, "-c", F8_CHILD, target], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, TORCH_TPU_DUMP_DIR=str(dump), TORCH_TPU_CACHE_DIR=""))
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"ok {target}" in out.stdout
    lines = [ln for f in glob.glob(str(dump / "*.mlir")) for ln in open(f) if "stablehlo.dot_general" in ln]
    assert len(lines) == 1, lines
    return lines[0]


def test_scaled_mm_widens_float8_on_the_portable_form(tmp_path):
    line = f8_dots("portable", tmp_path)
    assert "tensor<32x64xf32>" in line and "f8E4M3FN" not in line.split(":")[-1]


def test_scaled_mm_keeps_float8_operands_on_gpu_and_tpu(tmp_path):
    for target in ("cuda", "tpu"):
        line = f8_dots(target, tmp_path)
        assert "(tensor<32x64xf8E4M3FN>, tensor<64x48xf8E5M2>) -> tensor<32x48xf32>" in line, line
