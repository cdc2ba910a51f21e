"""One TorchTitan rank (issue #17): `torchrun --nproc_per_node 2 tools/titan/run.py
--device tpu|cpu --module tools.titan.config --config llama3_debug [titan flags]`.

`--device tpu` is TorchTitan unchanged: it finds the 'tpu' accelerator itself
(torch_tpu is autoloaded), places the model there and initialises the process
group with the device's backend ('tpu'). `--device cpu` is the reference run of
the same program: TorchTitan is told no accelerator exists, so it trains on CPU
tensors over gloo. Nothing else differs between the two runs.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class _CpuModule:
    """What TorchTitan asks of its device module (torch.cuda's functions), for
    the CPU reference run; torch.cpu lacks the memory and naming functions.
    CPU memory is not tracked, as for a device without an allocator."""

    @staticmethod
    def __getattr__(name):  # pragma: no cover - unused names raise as on torch.cpu
        raise AttributeError(name)

    device_count = staticmethod(lambda: 1)
    current_device = staticmethod(lambda: 0)
    set_device = staticmethod(lambda d: None)
    synchronize = staticmethod(lambda d=None: None)
    empty_cache = staticmethod(lambda: None)
    reset_peak_memory_stats = staticmethod(lambda d=None: None)
    memory_stats = staticmethod(lambda d=None: {})
    get_device_name = staticmethod(lambda d=None: "cpu")

    class _Props:
        total_memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

    get_device_properties = staticmethod(lambda d=None: _CpuModule._Props())


def _cpu_flex_reference():
    """PyTorch 2.14.1 refuses FlexAttention's backward on CPU (Inductor's CPU
    template has none). The reference run uses PyTorch's own dense form of
    the op instead, forward and backward (the same math 'tpu' runs), through
    torch.compile's aot_eager backend."""
    import torch
    import torch.nn.attention.flex_attention as fa
    from torchtitan.models.common import attention

    check = fa._validate_device

    def allow_cpu_backward(q, k, v):
        if q.device.type != "cpu":
            check(q, k, v)

    fa._validate_device = allow_cpu_backward
    attention.FlexAttention._compiled_flex_attn = torch.compile(fa.flex_attention, backend="aot_eager")

    # gloo has no PREMUL_SUM, which FSDP2 picks to divide gradients by
    # TorchTitan's token count: on CPU it sums, then divides (same value).
    from torch.distributed.fsdp._fully_shard import _fsdp_collectives as fc

    factors = fc._get_gradient_divide_factors

    def sum_then_divide(rs_group, ar_group, reduce_dtype, device_type="", factor=None, force=False):
        return factors(rs_group, ar_group, reduce_dtype, device_type, factor, True)

    fc._get_gradient_divide_factors = sum_then_divide


def main():
    argv = sys.argv[1:]
    device = "tpu"
    if "--device" in argv:
        i = argv.index("--device")
        device = argv[i + 1]
        del argv[i:i + 2]
    # 'tpu': torch_tpu is loaded the way a user gets it, by torch's backend
    # autoload; the CPU reference run is PyTorch alone, no 'tpu' in the process.
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0" if device == "cpu" else "1"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import torch
    import torch._utils

    if device == "cpu":
        torch._utils._get_available_device_type = lambda: "cpu"
        original_module = torch._utils._get_device_module
        torch._utils._get_device_module = lambda t=None: _CpuModule if t == "cpu" else original_module(t)
        _cpu_flex_reference()
    elif device != "tpu":
        raise SystemExit(f"--device must be tpu or cpu, got {device!r}")
    else:
        assert torch._utils._get_available_device_type() == "tpu", "torch_tpu is not loaded"
    sys.argv = [sys.argv[0]] + argv
    from torchtitan.train import main as titan_main

    titan_main()


if __name__ == "__main__":
    main()
