#!/usr/bin/env bash
# One prepared run for a borrowed NVIDIA GPU machine (no network; Python 3.12,
# torch 2.11, jax-cuda13-pjrt installed): build torch_tpu in place against the
# installed torch, then bench/gpu_check.py (values against CPU, speed against
# torch.cuda, in one process) and a slice of the test suite on the CUDA PJRT
# plugin. Logs and results go to $OUT (the device tool's output folder) or
# bench/results/. Never part of CI. TOTAL_S bounds the whole run.
set -uo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
TOTAL_S=${TOTAL_S:-480}
left() { echo $((TOTAL_S - ($(date +%s) - START))); }
PY=${PYTHON:-python3}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
log() { echo "[gpu_smoke +$(($(date +%s) - START))s] $*"; }

log "torch $($PY -c 'import torch; print(torch.__version__, torch.cuda.is_available())'), $(nproc) cores"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY -c 'import jax_plugins.xla_cuda13 as p, os; print("cuda plugin dir:", os.path.dirname(p.__file__))' || true

# The image's Python may link extensions with a static libstdc++ (seen: a
# second copy of libstdc++ inside _C.so, whose ostream then found the wrong
# locale facet and crashed); link against the shared one like torch does.
$PY -c 'import sysconfig as s; print("python LDSHARED:", s.get_config_var("LDSHARED"))'
echo "CXX=${CXX:-unset} $(command -v g++)"; ls /usr/bin/g++* 2>/dev/null | head -3
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc; fi
export LDSHARED="${CXX:-g++} -pthread -shared -shared-libgcc"
rm -f torch_tpu/_C*.so
log "building (no isolation, no downloads; LDSHARED=$LDSHARED)"
if ! TORCH_DEVICE_BACKEND_AUTOLOAD=0 MAX_JOBS=$(nproc) $PY setup.py -q build_ext --inplace >"$OUT/build.log" 2>&1; then
  grep -E "error|Error" "$OUT/build.log" | head -30
  log "build failed"; exit 1
fi
log "built: $(ldd torch_tpu/_C*.so | grep -c libstdc++) shared libstdc++, $(nm -C torch_tpu/_C*.so | grep -c read_utf8_code_point) static codecvt symbols"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export TORCH_TPU_PLATFORM=cuda PYTHONUNBUFFERED=1

# The client must come up before anything else is worth running; if the
# plugin refuses our create options, retry with none and say so.
probe='import torch, torch_tpu; x = torch.arange(4.0, device="tpu"); print("probe:", (x * 2).cpu().tolist(), torch_tpu._C._plugin_info())'
if ! timeout 120 $PY -c "$probe"; then
  log "client probe failed with default options; retrying with TORCH_TPU_PJRT_OPTIONS=none"
  export TORCH_TPU_PJRT_OPTIONS=none
  timeout 120 $PY -c "$probe" || { log "client probe failed"; exit 1; }
fi

log "gpu_check ($(left) s left)"
GPU_CHECK_BUDGET_S=$(( $(left) - 150 )) timeout $(( $(left) - 90 )) $PY bench/gpu_check.py 2>&1 | tee "$OUT/gpu_check.txt" | grep -v "^ \|^\]\|^}" 

log "tests on the CUDA plugin ($(left) s left)"
timeout -s INT $(( $(left) - 10 )) $PY -m pytest -q -p no:cacheprovider -rf tests/test_numerics_contract.py \
  tests/test_views.py tests/test_index_bounds.py tests/test_ops.py 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -40
log "done"
