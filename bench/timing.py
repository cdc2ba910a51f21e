"""Timing helpers shared by the benchmarks. Imports only torch, so a
baseline process that must not load torch_tpu (bench/gpu_check.py's
torch.cuda child) can use them too."""
import statistics
import time

import torch


def sync(device):
    """Waits for the device's queued work ('tpu...' or 'cuda...'; CPU runs eagerly)."""
    if device.startswith("tpu"):
        torch.tpu.synchronize()
    elif device.startswith("cuda"):
        torch.cuda.synchronize()


def measure(fn, device, repeats, inner, warmup=2):
    """Median and spread (min, max) in ms of `inner` calls of fn, over repeats."""
    for _ in range(warmup):
        fn()
    sync(device)
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        sync(device)
        samples.append((time.perf_counter() - t) / inner * 1e3)
    return statistics.median(samples), min(samples), max(samples)
