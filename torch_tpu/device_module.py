"""`torch.tpu`: the device module, with the names and signatures of torch.cuda."""
from __future__ import annotations

import contextlib
from typing import Any

import torch

from . import _C


def _index(device: Any = None) -> int:
    if device is None:
        return _C.current_device()
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "tpu":
            raise ValueError(f"torch_tpu: expected a tpu device, got {device}")
        return _C.current_device() if device.index is None else device.index
    raise TypeError(f"torch_tpu: cannot interpret {device!r} as a tpu device")


def is_available() -> bool:
    return _C.device_count() > 0


def is_initialized() -> bool:
    return _C._is_initialized()


def init() -> None:
    """Loads the PJRT plugin and creates the client now (normally lazy)."""
    _C._init()


def device_count() -> int:
    return _C.device_count()


def current_device() -> int:
    return _C.current_device()


def set_device(device: Any) -> None:
    _C.set_device(_index(device))


class device:
    """Context manager that changes the current tpu device."""

    def __init__(self, device: Any):
        self.idx = _index(device) if device is not None else -1
        self.prev = -1

    def __enter__(self):
        self.prev = _C.current_device()
        if self.idx >= 0:
            _C.set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0:
            _C.set_device(self.prev)
        return False


def synchronize(device: Any = None) -> None:
    """Waits for all work issued so far on `device` (all devices when None)."""
    _C.synchronize(-1 if device is None else _index(device))


def get_device_name(device: Any = None) -> str:
    return _C.get_device_name(_index(device))


class _DeviceProperties:
    def __init__(self, idx: int):
        info = _C._plugin_info()
        self.name = _C.get_device_name(idx)
        self.index = idx
        self.platform = info["platform_name"]
        self.pjrt_api_version = info["pjrt_api_version"]
        self.plugin_path = info["plugin_path"]
        # As torch.cuda's: the memory the device can hold (the plugin's limit;
        # host memory on the CPU plugin). Tools size themselves from it
        # (TorchTitan's memory monitor divides by it).
        self.total_memory = int(_C.mem_get_info(idx)[1])

    def __repr__(self):
        return (f"_TpuDeviceProperties(name={self.name!r}, platform={self.platform!r}, "
                f"pjrt_api_version={self.pjrt_api_version!r})")


def get_device_properties(device: Any = None) -> _DeviceProperties:
    return _DeviceProperties(_index(device))


def get_device_capability(device: Any = None) -> tuple[int, int]:
    return (0, 0)


# --- mixed precision ---------------------------------------------------------

def get_amp_supported_dtype() -> list:
    """Lower-precision dtypes torch.autocast("tpu", dtype=...) accepts. The
    cast policy is CUDA's (csrc/aten/autocast.cpp); bfloat16 is the natural
    choice on TPUs, float16 wants a GradScaler as on CUDA."""
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


# --- random numbers --------------------------------------------------------

def _generator(device: Any = None) -> torch.Generator:
    return _C._default_generator(_index(device))


def manual_seed(seed: int) -> None:
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for i in range(max(device_count(), 1)):
        _C._default_generator(i).manual_seed(int(seed))


def seed() -> None:
    _generator().seed()


def seed_all() -> None:
    for i in range(max(device_count(), 1)):
        _C._default_generator(i).seed()


def initial_seed() -> int:
    return _generator().initial_seed()


def get_rng_state(device: Any = "tpu") -> torch.Tensor:
    return _generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "tpu") -> None:
    _generator(device).set_state(new_state.to("cpu", torch.uint8))


def get_rng_state_all() -> list:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(states) -> None:
    for i, s in enumerate(states):
        set_rng_state(s, i)




# --- memory ----------------------------------------------------------------
# The allocator is a c10::DeviceAllocator (csrc/aten/allocator.cpp): these are
# torch.accelerator's numbers, with torch.cuda's names.

def memory_stats(device: Any = None) -> dict:
    """CUDA-shaped statistics ("allocated_bytes.all.current", "num_ooms", ...)."""
    return dict(torch.accelerator.memory_stats(_index(device)))


def host_memory_stats() -> dict:
    """Pinned host memory, as ``torch.cuda.host_memory_stats()`` names it
    ("allocated_bytes.current", "num_host_alloc", ...). A block freed while a
    ``non_blocking`` copy still reads it counts until the copy is done."""
    return dict(_C.host_memory_stats())


def memory_allocated(device: Any = None) -> int:
    return _C.memory_allocated(_index(device))


def max_memory_allocated(device: Any = None) -> int:
    return _C.max_memory_allocated(_index(device))


def memory_reserved(device: Any = None) -> int:
    """Equal to memory_allocated: storages free their buffers when they die."""
    return torch.accelerator.memory_reserved(_index(device))


def max_memory_reserved(device: Any = None) -> int:
    return torch.accelerator.max_memory_reserved(_index(device))


def reset_peak_memory_stats(device: Any = None) -> None:
    _C.reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device: Any = None) -> None:
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: Any = None) -> None:
    torch.accelerator.reset_accumulated_memory_stats(_index(device))


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes: the plugin's memory limit where it reports one,
    host memory on the CPU plugin (whose device memory is host memory)."""
    return tuple(_C.mem_get_info(_index(device)))


def empty_cache() -> None:
    """Nothing is cached: storages free their device buffers as soon as they die."""
    torch.accelerator.empty_cache()


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A readable table of memory_stats(), as torch.cuda.memory_summary."""
    idx = _index(device)
    st = memory_stats(idx)

    def fmt(n):
        for unit in ("B", "KiB", "MiB", "GiB"):
            if abs(n) < 1024 or unit == "GiB":
                return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
            n /= 1024

    rows = [("Allocated memory", "allocated_bytes", fmt), ("Active memory", "active_bytes", fmt),
            ("Requested memory", "requested_bytes", fmt), ("Reserved memory", "reserved_bytes", fmt),
            ("Allocations", "allocation", str), ("Active allocs", "active", str)]
    free, total = mem_get_info(idx)
    lines = [f"torch_tpu memory summary, device tpu:{idx} ({get_device_name(idx)})",
             f"{'Metric':<20}{'Cur Usage':>14}{'Peak Usage':>14}{'Tot Alloc':>14}{'Tot Freed':>14}"]
    for label, key, f in rows:
        vals = [st.get(f"{key}.all.{k}", 0) for k in ("current", "peak", "allocated", "freed")]
        lines.append(f"{label:<20}" + "".join(f"{f(v):>14}" for v in vals))
    lines.append(f"OOMs: {st.get('num_ooms', 0)}   device free/total: {fmt(free)} / {fmt(total)}")
    return "\n".join(lines)


# --- runtime introspection ---------------------------------------------------

def host_op_stats() -> dict:
    """Calls per op overload that ran through the explicit host path
    (linalg decompositions StableHLO has no op for, FFTs): inputs copied to
    the host, PyTorch's CPU kernel, results copied back."""
    return _C.host_op_stats()


def compile_stats() -> dict:
    """Executables compiled, cache hits/misses, executions and transfers.

    ``compiles`` counts real compilations only; ``disk_loads`` counts
    executables taken from the persistent cache instead. The in-memory cache
    holds at most ``cache_capacity`` executables (least recently used ones
    are dropped, ``cache_evictions``; see ``set_executable_cache_capacity``)."""
    return _C.compile_stats()


def set_executable_cache_capacity(n: int) -> None:
    """Bound the in-memory executable cache to ``n`` executables (default
    4096, or ``TORCH_TPU_EXECUTABLE_CACHE_SIZE``). Each loaded executable
    holds code mappings (about 5 on XLA:CPU); a process that meets many
    shapes would otherwise reach the kernel's limit on mappings. Dropped
    executables come back from the disk cache when they are needed again."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_executable_cache_capacity: expected a positive int, got {n!r}")
    _C.set_executable_cache_capacity(n)


def compile_cache_stats() -> dict:
    """The persistent on-disk executable cache of this process.

    ``enabled``/``dir``/``max_bytes`` come from ``TORCH_TPU_CACHE_DIR``
    (default ``~/.cache/torch_tpu/xla``; empty or ``0`` disables) and
    ``TORCH_TPU_CACHE_MAX_BYTES`` (default 2 GiB). ``supported`` is whether the
    plugin can serialise executables (None until the first compile).
    ``disk_hits``/``disk_misses``/``disk_writes``/``disk_corrupt``/
    ``disk_errors``/``disk_evictions`` count this process's lookups, writes,
    entries rejected (deleted and rebuilt) and entries removed by the size
    bound; ``bytes_on_disk``/``entries_on_disk`` describe the directory now."""
    return _C.compile_cache_stats()


# --- streams and events (csrc/aten/streams.cpp says what they order) ----------

class _TpuKind(type):
    """isinstance(x, torch.tpu.Stream / Event) holds for torch.Stream /
    torch.Event objects on 'tpu': the constructors return torch's own types,
    which torch's C++ (Event.elapsed_time, Event.record(stream), ...) accepts
    where it would refuse a Python subclass."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._base) and obj.device.type == "tpu"


class Stream(metaclass=_TpuKind):
    """A 'tpu' stream (a torch.Stream), with torch.cuda.Stream's constructor."""
    _base = torch.Stream

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs):
        if kwargs:  # (stream_id, device_index, device_type): an existing stream
            return torch.Stream(**kwargs)
        return torch.Stream(device=torch.device("tpu", _index(device)), priority=priority)


class Event(metaclass=_TpuKind):
    """A 'tpu' event (a torch.Event), with torch.cuda.Event's constructor."""
    _base = torch.Event

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        return torch.Event("tpu", enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)


def current_stream(device: Any = None) -> torch.Stream:
    return torch._C._accelerator_getStream(_index(device))


def default_stream(device: Any = None) -> torch.Stream:
    cur = current_stream(device)
    return torch.Stream(stream_id=0, device_index=cur.device_index, device_type=cur.device_type)


def set_stream(stream: torch.Stream) -> None:
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """Makes `stream` current on its device for the block (torch.cuda.StreamContext)."""

    def __init__(self, stream):
        self.stream = stream
        self.prev = None

    def __enter__(self):
        if self.stream is None:
            return self
        self.prev = current_stream(self.stream.device_index)
        torch.accelerator.set_stream(self.stream)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            torch.accelerator.set_stream(self.prev)
        return False


def stream(s) -> StreamContext:
    return StreamContext(s)


def _is_in_bad_fork() -> bool:
    return False


from . import amp  # noqa: E402  (torch.tpu.amp, as torch.cuda.amp)
