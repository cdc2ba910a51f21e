"""Which PJRT plugin to load. Paths only: nothing is loaded here.

TORCH_TPU_PJRT_PLUGIN=/path/to/plugin.so overrides everything.
TORCH_TPU_PLATFORM=auto|cpu|tpu|cuda picks the platform; auto means libtpu when
TPU hardware is present, else the CUDA plugin when installed and a GPU exists,
else the XLA CPU plugin.
TORCH_TPU_CPU_DEVICES=N makes the CPU plugin expose N devices (default 1).
"""
from __future__ import annotations

import glob
import importlib.util
import os

PLATFORMS = ("auto", "cpu", "tpu", "cuda")


def _package_dir(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return os.path.dirname(spec.origin) if spec.origin else None


def cpu_plugin() -> str | None:
    d = _package_dir("xla_plugins.xla_cpu_pjrt")
    if d and os.path.exists(os.path.join(d, "xla_cpu_pjrt.so")):
        return os.path.join(d, "xla_cpu_pjrt.so")
    d = _package_dir("lammps_jax_pjrt_cpu")
    if d and os.path.exists(os.path.join(d, "pjrt_c_api_cpu_plugin.so")):
        return os.path.join(d, "pjrt_c_api_cpu_plugin.so")
    return None


def cuda_plugin() -> str | None:
    for pkg in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
        d = _package_dir(pkg)
        if d:
            found = glob.glob(os.path.join(d, "xla_cuda_plugin.so")) or glob.glob(os.path.join(d, "*.so"))
            if found:
                return found[0]
    return None


def tpu_plugin() -> str | None:
    d = _package_dir("libtpu")
    if d and os.path.exists(os.path.join(d, "libtpu.so")):
        return os.path.join(d, "libtpu.so")
    return None


def _has_tpu_hardware() -> bool:
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))


def _has_gpu() -> bool:
    return os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")


def resolve() -> tuple[str, str, int]:
    """Returns (plugin path or '', platform, cpu device count)."""
    platform = os.environ.get("TORCH_TPU_PLATFORM", "auto").strip().lower() or "auto"
    if platform not in PLATFORMS:
        raise RuntimeError(
            f"torch_tpu: TORCH_TPU_PLATFORM={platform!r} is not one of {', '.join(PLATFORMS)}")
    try:
        cpu_devices = int(os.environ.get("TORCH_TPU_CPU_DEVICES", "1"))
    except ValueError:
        raise RuntimeError("torch_tpu: TORCH_TPU_CPU_DEVICES must be an integer") from None
    if cpu_devices < 1:
        raise RuntimeError("torch_tpu: TORCH_TPU_CPU_DEVICES must be >= 1")
    override = os.environ.get("TORCH_TPU_PJRT_PLUGIN")
    if platform == "auto":
        if override:
            platform = "cpu" if "cpu" in os.path.basename(override).lower() else "custom"
        elif _has_tpu_hardware() and tpu_plugin():
            platform = "tpu"
        elif _has_gpu() and cuda_plugin():
            platform = "cuda"
        else:
            platform = "cpu"
    if override:
        return override, platform, cpu_devices
    path = {"cpu": cpu_plugin, "cuda": cuda_plugin, "tpu": tpu_plugin}.get(platform, lambda: None)()
    return path or "", platform, cpu_devices
