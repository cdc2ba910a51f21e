#!/usr/bin/env bash
# One prepared run for a borrowed NVIDIA GPU machine (no network; Python 3.12,
# torch 2.11, jax-cuda13-pjrt installed): build torch_tpu in place against the
# installed torch, smoke-test the CUDA PJRT plugin against CPU, run the quick
# benchmark suite. Results go to $OUT (the device tool's output folder) or
# bench/results/. Never part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
log() { echo "[gpu_smoke $(date +%H:%M:%S)] $*"; }

log "torch: $($PY -c 'import torch; print(torch.__version__)')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
log "building (no isolation, no downloads)"
TORCH_DEVICE_BACKEND_AUTOLOAD=0 MAX_JOBS=$(nproc) $PY setup.py -q build_ext --inplace 2>&1 | tail -20
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export TORCH_TPU_PLATFORM=cuda

log "smoke test"
$PY - <<'PY' 2>&1 | tee "$OUT/gpu_smoke.txt"
import time, torch, torch_tpu
info = torch_tpu._C._plugin_info()
print("plugin:", info)
torch.manual_seed(0)
a, b = torch.randn(512, 512), torch.randn(512, 512)
ta, tb = a.to("tpu"), b.to("tpu")
for name, f in [("add", lambda x, y: x + y), ("matmul", lambda x, y: x @ y),
                ("softmax", lambda x, y: torch.softmax(x, -1)), ("view-inplace", lambda x, y: x[1:100].mul_(2) + 0)]:
    got = f(ta.clone(), tb).cpu()
    want = f(a.clone(), b)
    err = (got - want).abs().max().item()
    print(f"{name:<14} max abs err {err:.3e}", "OK" if err < 1e-3 else "MISMATCH")
x = torch.randn(4096, 4096, device="tpu")
(x @ x).cpu()
t = time.perf_counter()
for _ in range(10):
    y = x @ x
torch.tpu.synchronize()
dt = (time.perf_counter() - t) / 10
print(f"GEMM 4096^3 f32 (precision highest): {2 * 4096 ** 3 / dt / 1e12:.2f} TFLOP/s")
PY

log "quick benchmark suite"
$PY bench/run.py --quick --out "$OUT/gpu_quick.json" 2>&1 | tail -40
log "done"
