"""The same workloads on every system a user could pick to run PyTorch on an
XLA device, and on native CPU, each contender in a process of its own.

    python bench/peers.py [--rounds 2] [--quick] [--only mlp,gpt]
                          [--torchax-python PY] [--xla-python PY]

Contenders:
  cpu_eager, cpu_inductor        native PyTorch on CPU (torch_tpu never imported)
  tpu_strict, tpu_defer,         ours: Strict, DeferAndFuse and
  tpu_compiled                   torch.compile(backend="tpu")
  tpu_compiled_warm              the same in a new process whose persistent
                                 cache an earlier process filled (warm start)
  torchax_eager, torchax_jit     torchax on the 'jax' device; jit: a whole
                                 training step from torchax.train.make_train_step
                                 (optax AdamW) under jax.jit with params and
                                 optimizer state donated, JittableModule /
                                 jax_jit for inference
  torch_xla_lazy,                torch_xla on PJRT_DEVICE=CPU: LazyTensor with a
  torch_xla_openxla              sync per step, and torch.compile(backend="openxla")

Workloads: a dependent op chain, MLP / small-GPT / CNN AdamW training steps
(bench/models.py) and greedy generation over a static KV cache. Each
(contender, workload) runs in a fresh process, so the first step is a cold
start (our persistent cache points at an empty folder; the peers have none by
default). Every round runs each workload on every contender (order reversed
every other round) and divides by native CPU eager of the same round; the
table shows the median over rounds of those ratios, the first step (compile)
time, and the peak host memory the workload added to its process (Linux's
resident high-water mark, reset before the workload and after the
contender's runtime has started; on the XLA CPU plugins device memory is
host memory, so it is counted).

A contender whose interpreter or package is missing is reported as absent;
one that fails on a workload is reported with its error (torchax's eager
mode cannot train: its F.linear runs outside autograd). torchax 0.0.13 names
ATen overloads that torch 2.14 removed; `_import_torchax` lets it import.
Speed is reported here, never asserted.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["chain", "mlp", "gpt", "cnn", "generate"]
CONTENDERS = ["cpu_eager", "cpu_inductor", "tpu_strict", "tpu_defer", "tpu_compiled", "tpu_compiled_warm",
              "torchax_eager", "torchax_jit", "torch_xla_lazy", "torch_xla_openxla"]
# (steps per timed sample, samples)
SHAPE = {"chain": (10, 7), "mlp": (5, 7), "gpt": (3, 7), "cnn": (3, 7), "generate": (1, 5)}
MARK = "PEERS_RESULT "


# -- worker: one contender, one workload, this process -----------------------

def _rss_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def _reset_peak_rss():
    """Linux: writing 5 to clear_refs sets the peak resident size to the current one."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _start_runtime(torch, device):
    """One small op on the device and a host read: the runtime (client,
    thread pools, allocator) exists before the memory baseline is taken, so
    the peak memory column measures the workload, not the runtime's start."""
    (torch.ones(8, device=device) * 2).sum().item()


class Contender:
    """How one system runs the shared workloads: its device, how a training
    step / a function / a decoder is compiled, how to wait for its results."""
    device = "cpu"

    def setup(self):
        import torch  # noqa: F401

    def compile(self, fn):
        """What the contender does to any callable it runs (the default for
        all three workload kinds below); eager contenders run it as is."""
        return fn

    def train_step(self, make):
        step, _ = make(self.device)
        return self.compile(step)

    def function(self, fn):
        return self.compile(fn)

    def decoder(self, module):
        return self.compile(module)

    def sync(self, out):
        pass


class CpuEager(Contender):
    pass


class CpuInductor(Contender):
    def compile(self, fn):
        import torch
        return torch.compile(fn)  # a train step's backward() is a graph break: forward, backward, optimizer graphs


class Tpu(Contender):
    device = "tpu"

    def __init__(self, mode):
        self.mode = mode

    def setup(self):
        import torch
        import torch_tpu  # noqa: F401
        from torch_tpu.execution_mode import EagerMode, set_eager_mode
        set_eager_mode(EagerMode.DEFER_AND_FUSE if self.mode == "defer" else EagerMode.STRICT)
        _start_runtime(torch, self.device)

    def compile(self, fn):
        import torch
        return torch.compile(fn, backend="tpu") if self.mode == "compiled" else fn

    def sync(self, out):
        import torch
        torch.tpu.synchronize()


class _Removed:
    """Stands for an ATen op or overload this torch no longer has (torchax
    0.0.13, written for an older torch, names `aten.cholesky`,
    `aten.prod.dim_Dimname` and others in its tables at import). torch never
    dispatches to an op it lacks, so no entry that could run is lost."""

    def __init__(self, name):
        self.name = name

    def __getattr__(self, key):  # an overload of a removed op
        if key.startswith("_"):
            raise AttributeError(key)
        return _Removed(f"{self.name}.{key}")

    def __repr__(self):
        return f"<removed from this torch: aten.{self.name}>"


def _import_torchax():
    import torch._ops

    def lenient(cls, what):
        original = cls.__getattr__

        def get(self, key):
            try:
                return original(self, key)
            except AttributeError:
                caller = sys._getframe(1).f_globals.get("__name__", "")
                tables = caller in ("torchax.amp", "torchax.decompositions") or caller.startswith("torchax.ops")
                if key.startswith("_") or not tables or (
                        what == "op" and getattr(self, "name", "") != "aten"):
                    raise
                return _Removed(f"{getattr(self, '_qualified_op_name', 'aten')}.{key}")
        cls.__getattr__ = get
    # kept for the process (torchax loads its op tables lazily, at first use),
    # but only for lookups from the modules holding torchax's op tables
    lenient(torch._ops._OpNamespace, "op")
    lenient(torch._ops.OpOverloadPacket, "overload")
    import torchax
    return torchax


class TorchaxEager(Contender):
    device = "jax"

    def setup(self):
        import torch
        _import_torchax().enable_globally()
        _start_runtime(torch, self.device)

    def sync(self, out):
        import jax
        from torchax.interop import jax_view
        jax.block_until_ready(jax_view(out))


class TorchaxJit(TorchaxEager):
    def train_step(self, make):
        """torchax's own recipe: make_train_step (forward, loss, gradients and
        an optax AdamW update in one function) under jax.jit, parameters and
        optimizer state donated, the model's buffers passed as inputs."""
        import jax
        import optax
        import torch
        import torchax.train
        from torchax.interop import jax_view, torch_view
        _, parts = make(self.device)
        model, loss_fn, (x, y), lr = parts["model"], parts["loss"], parts["batch"], parts["lr"]
        params = {k: v for k, v in model.named_parameters()}
        buffers = {k: v for k, v in model.named_buffers()}

        def model_fn(weights, bufs, args):
            return torch.func.functional_call(model, {**weights, **bufs}, args)

        opt = optax.adamw(lr)
        step_fn = torchax.train.make_train_step(model_fn, loss_fn, opt)
        state = {"params": params, "opt": torch_view(opt.init(jax_view(params)))}
        jitted = torch_view(jax.jit(jax_view(step_fn), donate_argnums=(0, 2)))

        def step():
            loss, state["params"], state["opt"] = jitted(state["params"], buffers, state["opt"], x, y)
            return loss
        return step

    def function(self, fn):
        from torchax.interop import jax_jit
        return jax_jit(fn)

    def decoder(self, module):
        from torchax.interop import JittableModule
        return JittableModule(module)


class TorchXla(Contender):
    def __init__(self, compiled):
        self.compiled = compiled

    def setup(self):
        os.environ.setdefault("PJRT_DEVICE", "CPU")  # torch_xla needs it to pick its CPU client
        import torch_xla
        self.torch_xla = torch_xla
        self.device = str(torch_xla.device())
        import torch
        _start_runtime(torch, self.device)

    def compile(self, fn):
        if self.compiled:
            import torch
            return torch.compile(fn, backend="openxla")
        xla = self.torch_xla

        def stepped(*args):
            out = fn(*args)
            xla.sync()  # LazyTensor: cut and run the graph traced since the last sync
            return out
        return stepped

    def sync(self, out):
        import torch_xla.core.xla_model as xm
        self.torch_xla.sync()
        xm.wait_device_ops()


def make_contender(name):
    return {"cpu_eager": lambda: CpuEager(), "cpu_inductor": lambda: CpuInductor(),
            "tpu_strict": lambda: Tpu("strict"), "tpu_defer": lambda: Tpu("defer"),
            "tpu_compiled": lambda: Tpu("compiled"), "tpu_compiled_warm": lambda: Tpu("compiled"),
            "torchax_eager": lambda: TorchaxEager(),
            "torchax_jit": lambda: TorchaxJit(), "torch_xla_lazy": lambda: TorchXla(False),
            "torch_xla_openxla": lambda: TorchXla(True)}[name]()


def build(contender, workload):
    """The workload's step (no arguments, returns what to wait for) on the contender."""
    sys.path.insert(0, HERE)
    import models
    import torch
    torch.manual_seed(0)
    if workload == "chain":
        fn, x = models.op_chain(contender.device)
        fn = contender.function(fn)
        return lambda: fn(x)
    if workload == "generate":
        generate, _ = models.gpt_kv_generate(contender.device, wrap=contender.decoder)
        return generate
    maker = {"mlp": models.mlp_step, "gpt": models.gpt_step, "cnn": models.cnn_step}[workload]
    return contender.train_step(maker)


def worker(name, workload, quick):
    started = time.perf_counter()
    contender = make_contender(name)
    contender.setup()
    import torch
    rss_before = _rss_mb("VmRSS")
    can_reset = _reset_peak_rss()
    step = build(contender, workload)
    inner, samples = SHAPE[workload]
    samples = max(3, samples - 2) if quick else samples
    compiles = (lambda: torch.tpu.compile_stats()["compiles"]) if name.startswith("tpu") else (lambda: None)
    before = compiles()
    t = time.perf_counter()
    contender.sync(step())
    first_ms = (time.perf_counter() - t) * 1e3
    first_compiles = None if before is None else compiles() - before
    to_first_s = time.perf_counter() - started
    for _ in range(2):
        out = step()
    contender.sync(out)
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        for _ in range(inner):
            out = step()
        contender.sync(out)
        times.append((time.perf_counter() - t) / inner * 1e3)
    peak = _rss_mb("VmHWM") - rss_before if can_reset else None
    return {"contender": name, "workload": workload, "ms": statistics.median(times), "min_ms": min(times),
            "first_ms": first_ms, "start_to_first_s": to_first_s, "first_step_compiles": first_compiles,
            "peak_host_mb": peak,
            "torch": torch.__version__}


# -- driver ----------------------------------------------------------------------

def interpreter(name, args):
    if name.startswith("torchax"):
        return args.torchax_python
    if name.startswith("torch_xla"):
        return args.xla_python
    return sys.executable


def _env(name):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_TPU_BENCH_SIDE"}
    if not name.startswith("tpu"):
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # the others never load torch_tpu (installed beside them)
    return env


def probe(name, python):
    """None when the contender can run here (its setup succeeds in a process
    of its own), else why not."""
    if not python or not os.path.exists(python):
        return f"no interpreter ({python or 'not given'})"
    r = subprocess.run([python, os.path.abspath(__file__), "--probe", name], capture_output=True, text=True,
                       timeout=300, env=_env(name))
    return None if r.returncode == 0 else f"{(r.stderr.strip().splitlines() or ['?'])[-1]}"


def run_one(name, workload, python, quick, timeout):
    env = _env(name)
    env["TORCH_TPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="peers-cache-")  # a cold start for us too, but *_warm
    cmd = [python, os.path.abspath(__file__), "--worker", name, "--workload", workload] + (["--quick"] if quick else [])
    try:
        if name.endswith("_warm"):  # an earlier process fills the persistent cache
            subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"contender": name, "workload": workload, "error": f"timed out after {timeout} s"}
    finally:
        subprocess.run(["rm", "-rf", env["TORCH_TPU_CACHE_DIR"]])
    for line in r.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = [ln for ln in (r.stderr or r.stdout).strip().splitlines() if ln.strip()]
    err = next((ln for ln in reversed(tail) if "Error" in ln or "error" in ln), tail[-1] if tail else "no output")
    return {"contender": name, "workload": workload, "error": err.strip()[:200]}


def summarise(results, contenders, workloads, rounds):
    rows = {}
    for c in contenders:
        for w in workloads:
            ratios, ms, first, start, peak, err = [], [], [], [], [], None
            for rnd in range(rounds):
                mine = results.get((rnd, c, w))
                base = results.get((rnd, "cpu_eager", w))
                if not mine or "error" in mine:
                    err = (mine or {}).get("error", err)
                    continue
                ms.append(mine["ms"])
                first.append(mine["first_ms"])
                start.append(mine["start_to_first_s"])
                if mine.get("peak_host_mb") is not None:
                    peak.append(mine["peak_host_mb"])
                if base and "error" not in base:
                    ratios.append(mine["ms"] / base["ms"])
            rows[(c, w)] = {"ratio": statistics.median(ratios) if ratios else None,
                            "ratio_range": [min(ratios), max(ratios)] if ratios else None,
                            "ms": statistics.median(ms) if ms else None,
                            "first_ms": statistics.median(first) if first else None,
                            "start_to_first_s": statistics.median(start) if start else None,
                            "peak_host_mb": max(peak) if peak else None, "error": None if ms else err}
    return rows


def table(rows, contenders, workloads, absent):
    def cell(r):
        if r["error"]:
            return "fails"
        return f"{r['ratio']:.2f} ({r['ms']:.2f} ms)" if r["ratio"] is not None else f"{r['ms']:.2f} ms"
    lines = ["| ratio to CPU eager (ms per step) | " + " | ".join(workloads) + " |",
             "|---|" + "---|" * len(workloads)]
    for c in contenders:
        if c in absent:
            lines.append(f"| {c} | " + " | ".join(["absent"] * len(workloads)) + " |")
        else:
            lines.append(f"| {c} | " + " | ".join(cell(rows[(c, w)]) for w in workloads) + " |")
    lines += ["", "| first step s (process start to end of first step s) / peak host MB added | " +
              " | ".join(workloads) + " |",
              "|---|" + "---|" * len(workloads)]
    for c in contenders:
        if c in absent:
            continue
        cells = []
        for w in workloads:
            r = rows[(c, w)]
            first = "–" if r["error"] else f"{r['first_ms'] / 1e3:.2f} s ({r['start_to_first_s']:.1f} s)"
            cells.append(first + (f" / {r['peak_host_mb']:.0f} MB" if not r["error"] and r["peak_host_mb"] else ""))
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    errors = [f"- {c} on {w}: {rows[(c, w)]['error']}" for c in contenders if c not in absent
              for w in workloads if rows[(c, w)]["error"]]
    lines += [""] + [f"- {c}: absent ({why})" for c, why in absent.items()] + errors
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker")
    p.add_argument("--workload")
    p.add_argument("--quick", action="store_true", help="fewer samples per process")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--only", default="", help="comma-separated workloads")
    p.add_argument("--contenders", default="", help="comma-separated contenders")
    p.add_argument("--torchax-python", default=os.environ.get("TTPU_TORCHAX_PYTHON"))
    p.add_argument("--xla-python", default=os.environ.get("TTPU_XLA_PYTHON"))
    p.add_argument("--timeout", type=int, default=600, help="seconds per process")
    p.add_argument("--out", default=os.path.join(HERE, "results", "peers.json"))
    p.add_argument("--probe", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.probe:
        make_contender(args.probe).setup()
        return
    if args.worker:
        print(MARK + json.dumps(worker(args.worker, args.workload, args.quick)), flush=True)
        return
    workloads = [w for w in args.only.split(",") if w] or WORKLOADS
    contenders = [c for c in args.contenders.split(",") if c] or CONTENDERS
    if "cpu_eager" not in contenders:
        contenders.insert(0, "cpu_eager")  # the reference of every ratio
    absent = {}
    for c in contenders:
        why = probe(c, interpreter(c, args))
        if why:
            absent[c] = why
            print(f"{c}: absent ({why})", flush=True)
    present = [c for c in contenders if c not in absent]
    results = {}
    for rnd in range(args.rounds):
        order = present if rnd % 2 == 0 else present[::-1]
        for w in workloads:
            for c in order:
                r = run_one(c, w, interpreter(c, args), args.quick, args.timeout)
                results[(rnd, c, w)] = r
                shown = r.get("error") or f"{r['ms']:.2f} ms/step, first {r['first_ms'] / 1e3:.2f} s"
                print(f"round {rnd + 1} {w:<9} {c:<18} {shown}", flush=True)
    rows = summarise(results, contenders, workloads, args.rounds)
    text = table(rows, contenders, workloads, absent)
    meta = {"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cpus, {platform.platform()}",
            "command": "python bench/peers.py " + " ".join(sys.argv[1:]), "rounds": args.rounds}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "absent": absent,
                   "runs": [dict(v, round=k[0]) for k, v in results.items()],
                   "summary": [dict(v, contender=c, workload=w) for (c, w), v in rows.items()]}, f, indent=1)
    print(f"\nMeasured {meta['when']} on {meta['machine']}, command `{meta['command']}`.\n")
    print(text)


if __name__ == "__main__":
    main()
