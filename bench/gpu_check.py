"""One prepared check for a borrowed NVIDIA GPU (run by bench/gpu_smoke.sh):
torch_tpu on the XLA CUDA PJRT plugin, compared with CPU for values and with
PyTorch's own CUDA backend for speed, in one process. Each section runs on
its own so one failure leaves the others' results; everything is printed and
written as JSON to $OUT/gpu_check.json.

    TORCH_TPU_PLATFORM=cuda python3 bench/gpu_check.py
"""
import json
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

# PyTorch allows one accelerator per process: with 'tpu' registered, a CUDA
# backward trips the autograd engine's stream assertion (seen with torch
# 2.11: "opt_ready_stream && opt_parent_stream"). So torch.cuda's numbers come
# from a child process that never imports torch_tpu.
BASELINE = "--cuda-baseline" in sys.argv
if not BASELINE:
    import torch_tpu  # noqa: F401
    from torch_tpu.execution_mode import EagerMode, eager_mode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
from timing import measure  # noqa: E402

OUT = os.environ.get("OUT", os.path.join(os.path.dirname(__file__), "results"))
RESULTS = {}
DEADLINE = time.perf_counter() + float(os.environ.get("GPU_CHECK_BUDGET_S", "330"))


def section(fn):
    name = fn.__name__
    if BASELINE and name != "speed_vs_torch_cuda":
        return
    t = time.perf_counter()
    try:
        RESULTS[name] = fn()
    except Exception as e:  # report and go on: the next section may still work
        RESULTS[name] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        traceback.print_exc()
    RESULTS[name + "_s"] = round(time.perf_counter() - t, 1)
    print(f"== {name} ({RESULTS[name + '_s']} s):", json.dumps(RESULTS[name], indent=1)[:4000], flush=True)


def median_ms(fn, dev, warm=3, reps=10, inner=1):
    return round(measure(fn, dev, reps, inner, warmup=warm)[0], 4)


@section
def plugin():
    info = torch_tpu._C._plugin_info()
    return {"info": {k: str(v) for k, v in dict(info).items()} if hasattr(info, "items") else str(info),
            "device_name": torch.tpu.get_device_name(0), "count": torch.tpu.device_count(),
            "torch": torch.__version__, "cuda_available": torch.cuda.is_available()}


@section
def ops_vs_cpu():
    torch.manual_seed(0)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    img, w = torch.randn(4, 8, 16, 16), torch.randn(16, 8, 3, 3)
    q = torch.randn(2, 4, 32, 16)
    idx = torch.randint(0, 256, (64,))
    nan = a.clone()
    nan[3, 5] = float("nan")
    cases = {
        "add": lambda x, y, *_: x + y,
        "matmul f32": lambda x, y, *_: x @ y,
        "matmul bf16": lambda x, y, *_: (x.bfloat16() @ y.bfloat16()).float(),
        "softmax": lambda x, *_: torch.softmax(x, -1),
        "sum/mean/var": lambda x, *_: torch.stack([x.sum(0), x.mean(0), x.var(0)]),
        "cumsum": lambda x, *_: x.cumsum(1),
        "sort": lambda x, *_: x.sort(1).values,
        "topk": lambda x, *_: x.topk(5, 1).values,
        "index_select": lambda x, y, i, *_: x.index_select(0, i),
        "view in-place": lambda x, *_: x.clone()[1:100].mul_(2).sum(0),
        "layer_norm": lambda x, *_: F.layer_norm(x, (256,)),
        "gelu tanh": lambda x, *_: F.gelu(x, approximate="tanh"),
        "nan max": lambda x, y, i, n, *_: n.max(1).values,
        "conv2d": lambda *r: F.conv2d(r[4], r[5], padding=1),
        "sdpa causal": lambda *r: F.scaled_dot_product_attention(r[6], r[6], r[6], is_causal=True),
    }
    args = (a, b, idx, nan, img, w, q)
    out = {}
    for name, f in cases.items():
        want = f(*args)
        got = f(*(t.to("tpu") for t in args)).cpu()
        same_nan = bool(torch.equal(want.isnan(), got.isnan()))
        err = (torch.nan_to_num(got) - torch.nan_to_num(want)).abs().max().item()
        scale = want.abs().nan_to_num().max().item() or 1.0
        tol = 2e-2 if "bf16" in name else 1e-3
        out[name] = {"max_abs_err": err, "ok": same_nan and err <= tol * max(1.0, scale)}
    out["all_ok"] = all(v["ok"] for v in out.values())
    return out


@section
def training_vs_cpu():
    def losses(dev, mode, steps=6):
        torch.manual_seed(0)
        with eager_mode(EagerMode.DEFER_AND_FUSE if mode == "defer" else EagerMode.STRICT):
            step, _ = models.gpt_step(dev)
            if mode == "compiled":
                step = torch.compile(step, backend="tpu")
            return [round(step().item(), 5) for _ in range(steps)]
    ref = losses("cpu", "strict")
    out = {"cpu": ref}
    for mode in ("strict", "defer", "compiled"):
        got = losses("tpu", mode)
        out[mode] = got
        out[mode + "_max_diff"] = max(abs(x - y) for x, y in zip(got, ref))
    return out


@section
def amp_streams_memory():
    out = {}
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 10))
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = F.cross_entropy(model(x), y).item()
    mt = model.to("tpu")
    with torch.autocast("tpu", dtype=torch.bfloat16):
        logits = mt(x.to("tpu"))
        got = F.cross_entropy(logits, y.to("tpu")).item()
    out["autocast_bf16"] = {"logits_dtype": str(logits.dtype), "cpu": ref, "tpu": got}
    scaler = torch.amp.GradScaler("tpu")
    opt = torch.optim.SGD(mt.parameters(), lr=0.1)
    with torch.autocast("tpu", dtype=torch.float16):
        loss = F.cross_entropy(mt(x.to("tpu")), y.to("tpu"))
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    out["grad_scaler_scale"] = scaler.get_scale()
    s = torch.tpu.Stream()
    m = torch.randn(2048, 2048, device="tpu")
    start, end = torch.Event("tpu", enable_timing=True), torch.Event("tpu", enable_timing=True)
    with torch.tpu.stream(s):
        start.record()
        for _ in range(10):
            m = m @ m / 2048 ** 0.5
        end.record()
    end.synchronize()
    out["event_elapsed_ms_10_gemm_2048"] = start.elapsed_time(end)
    del m
    torch.tpu.synchronize()
    base = torch.tpu.memory_allocated()
    big = torch.empty(256 << 20, dtype=torch.uint8, device="tpu")
    out["memory"] = {"base": base, "with_256MiB": torch.tpu.memory_allocated(), "mem_get_info": torch.tpu.mem_get_info()}
    del big
    out["memory"]["after_free"] = torch.tpu.memory_allocated()
    try:
        torch.empty(1 << 40, dtype=torch.uint8, device="tpu")
        out["oom"] = "no error for 1 TiB"
    except torch.OutOfMemoryError as e:
        out["oom"] = "torch.OutOfMemoryError: " + str(e)[:200]
    return out


@section
def distributed_single_rank():
    import torch.distributed as dist
    store = dist.HashStore()
    dist.init_process_group("tpu", store=store, rank=0, world_size=1)
    try:
        t = torch.arange(8.0, device="tpu")
        dist.all_reduce(t)
        g = [torch.empty(8, device="tpu")]
        dist.all_gather(g, t)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 4).to("tpu"))
        model(torch.randn(8, 16, device="tpu")).sum().backward()
        return {"all_reduce": t.cpu().tolist(), "all_gather_ok": bool(torch.equal(g[0].cpu(), t.cpu())),
                "ddp_grad_norm": model.module.weight.grad.norm().item()}
    finally:
        dist.destroy_process_group()


@section
def speed_vs_torch_cuda():
    if not torch.cuda.is_available():
        return {"skipped": "torch.cuda not available"}
    out = {}
    if not BASELINE:
        import subprocess
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0",
                   GPU_CHECK_BUDGET_S=str(max(30, int((DEADLINE - time.perf_counter()) / 2))))
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--cuda-baseline"], env=env,
                           capture_output=True, text=True, timeout=max(60, DEADLINE - time.perf_counter()))
        try:
            out.update(json.loads(r.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            out["cuda baseline"] = f"failed (rc {r.returncode}): {r.stderr[-1500:]}"
        for k in list(out):
            print(f"   {k}: {out[k]}", flush=True)
    devices = ("cuda",) if BASELINE else ("tpu",)

    def measure(key, fn):
        if time.perf_counter() > DEADLINE:
            out[key] = "skipped: past the time budget (GPU_CHECK_BUDGET_S)"
            return
        try:
            out[key] = fn()
        except Exception as e:  # one failed measurement must not lose the rest
            out[key] = f"{type(e).__name__}: {str(e)[:300]}"
        print(f"   {key}: {out[key]}", flush=True)

    def gemm(dev, dtype, n):
        x = torch.randn(n, n, device=dev, dtype=dtype)
        ms = median_ms(lambda: x @ x, dev, reps=5, inner=5)
        return round(2 * n ** 3 / (ms / 1e3) / 1e12, 1)

    def in_mode(mode):
        if BASELINE:
            import contextlib
            return contextlib.nullcontext()
        return eager_mode(EagerMode.DEFER_AND_FUSE if mode == "defer" else EagerMode.STRICT)

    def chain_us(dev, mode):
        with in_mode(mode):
            v = torch.ones(1024, device=dev)

            def chain():
                y = v
                for _ in range(200):
                    y = y + 1
                return y
            return round(median_ms(chain, dev) * 1e3 / 200, 2)

    def train_ms(make, dev, mode):
        with in_mode(mode):
            torch.manual_seed(0)
            step, _ = make(dev)
            if mode == "compiled":
                step = torch.compile(step, backend="tpu")
            if mode == "inductor":
                step = torch.compile(step)
            return median_ms(step, dev, warm=4, reps=10, inner=3)

    for dtype, n in ((torch.float32, 4096), (torch.bfloat16, 8192)):
        for dev in devices:
            measure(f"GEMM {n}^3 {dtype} {dev} TFLOP/s", lambda: gemm(dev, dtype, n))
    for dev, mode in (("cuda", "eager"), ("tpu", "strict"), ("tpu", "defer")):
        if dev in devices:
            measure(f"op chain 200 adds {dev} {mode} us/op", lambda: chain_us(dev, mode))
    for dev in devices:
        measure(f"generate 32 tokens {dev} ms", lambda: median_ms(models.gpt_generate(dev, new_tokens=32), dev,
                                                                   warm=2, reps=5))
    for name, make in (("MLP", models.mlp_step), ("small-GPT", models.gpt_step)):
        for dev, mode in (("cuda", "eager"), ("tpu", "strict"), ("tpu", "defer"), ("tpu", "compiled"),
                          ("cuda", "inductor")):
            if dev in devices:
                measure(f"{name} train step {dev} {mode} ms", lambda: train_ms(make, dev, mode))
    return out


if BASELINE:
    print(json.dumps(RESULTS.get("speed_vs_torch_cuda", {})))
    sys.exit(0)
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "gpu_check.json"), "w") as f:
    json.dump(RESULTS, f, indent=1, default=str)
print("wrote", os.path.join(OUT, "gpu_check.json"))
