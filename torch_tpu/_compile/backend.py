"""The torch.compile backend "tpu": Dynamo -> AOTAutograd -> one fused PJRT executable per graph.

    model = torch.compile(model, backend="tpu")          # forward (and its backward)
    step = torch.compile(train_step, backend="tpu")      # forward + backward + optimizer.step

How it works
------------
1. Dynamo captures a Python-level FX graph and calls `tpu_backend(gm, example_inputs)`.
2. AOTAutograd (`torch._dynamo.backends.common.aot_autograd`) functionalises it
   and traces it to ATen: a forward and a backward graph when gradients are
   needed (split by the partitioner, see below), else one inference graph.
   Input mutations (optimizer state, BatchNorm running stats, in-place ops on
   views of inputs): in an inference graph (no gradients, e.g. a compiled
   optimizer.step) they stay in the graph as trailing `copy_` nodes
   (keep_inference_input_mutations=True), which DeferAndFuse records as the
   input storage taking a graph result, so the old buffer is donated and the
   update happens in place. That saves one eager copy per mutated tensor after
   the graph (24 for AdamW on 6 parameters; about 10% of the compiled MLP
   step). In forward/backward graphs AOTAutograd's runtime wrappers write
   them back with `copy_` after our graph has run.
3. Each ATen graph becomes a `_FusedGraph`: it runs the graph's own generated
   `forward` (ATen ops through the dispatcher, i.e. exactly the eager 'tpu'
   kernels and lowerings, no second implementation of any op) with the eager
   mode switched to DEFER_AND_FUSE, then flushes with reason "compiled graph".
   The recorded ops therefore run as ONE StableHLO module, which the runtime
   caches by structure: the second call of a compiled function compiles
   nothing. Intermediates are never materialised (the generated code drops
   them as soon as they are dead, and the flush only materialises values
   still referenced: the graph's outputs).
   Ops on CPU tensors in the graph (e.g. the optimizer's `step` counters,
   which stay 0-d CPU tensors) run eagerly on CPU; mixing a 0-d CPU tensor
   with 'tpu' tensors is handled by the eager kernels as in PyTorch.
4. Errors: an op without a lowering raises the eager backend's
   NotImplementedError naming the op when the graph runs (the ops recorded
   before it still run, the previous mode is restored). Shape errors are
   caught by Dynamo/AOTAutograd tracing on fake tensors.

Partitioner
-----------
`min_cut_rematerialization_partition` (the default here; `options={"partitioner":
"default"}` selects AOTAutograd's `default_partition`). The forward and backward
graphs are separate fused executables, so every activation saved for the
backward is a device buffer that the forward must materialise and keep alive
until the backward runs. The min-cut partitioner saves fewer of them and
recomputes cheap pointwise ops inside the backward graph instead, where XLA
fuses the recomputation into the backward module's own kernels; that is the
trade every fusing compiler wants, while default_partition saves what eager
autograd would. It does not recompute random ops (dropout masks are drawn
once, in the forward), so both give the same results (tested). Measured on
bench/models.py's TinyGPT (2 layers, width 128, batch 8x32): the forward
returns 56 tensors instead of 58 and the step time is the same within noise
on this 2-core CPU machine; the difference grows with pointwise-heavy blocks.

Shapes and guards
-----------------
Dynamo guards on shape, dtype, device and requires_grad and calls the backend
again when they change (`stats()["invocations"]` counts those calls). Symbolic
sizes:
- `torch.compile(..., dynamic=True)` traces with symbolic sizes from the first
  call; with the default dynamic=None, Dynamo's "automatic dynamic" recompiles
  a function that saw a second input shape (or a second value of a Python
  number) with symbolic sizes, as does torch._dynamo.mark_dynamic. The backend
  detects this (SymInt/SymFloat placeholders or example inputs) and
  specialises at run time instead of compiling anything symbolic for the
  device: AOTAutograd traces the graph once, and since `_FusedGraph` runs it
  op by op with the concrete sizes of each call, every fused module it records
  is static; the executable cache (keyed by the module's structure, shapes
  included) holds one static executable per concrete shape, compiled the first
  time that shape is seen. `_ConcreteShapes` counts the distinct concrete
  signatures (`stats()["static_specialisations"]`). A Python float that Dynamo
  made dynamic arrives as a 0-d CPU tensor and stays a runtime scalar (the
  eager lowerings take scalars as runtime inputs), so a changing learning
  rate or loss scale does not recompile.
  Retracing a static AOTAutograd graph per shape was the alternative; it costs
  a trace per shape and cannot trace Dynamo's tensorified floats (`.item()` on
  a fake tensor), for nothing the runtime specialisation does not give.
- Buckets (buckets.py): an inference graph (no gradients) whose symbolic
  sizes are input dimensions runs at bucket sizes instead, where the pass
  proves that zero padding (plus the masks it inserts before reductions,
  softmax and contractions over a padded dimension) cannot change a real
  result; its results are narrowed back. Powers of two by default, capped by
  mark_dynamic's max; `options={"buckets": [sizes]}` or `"off"`. 100
  sequence lengths up to 128 run as 6 executables. Refused graphs (the
  reasons: `bucket_refusals()`) and training graphs specialise per shape as
  above.

Graph breaks
------------
Dynamo splits the function; each piece is compiled here, and the code in
between (print, .item(), unsupported Python) runs in the eager mode the user
chose, on 'tpu', as usual. `loss.backward()` inside a compiled function is a
graph break too (Dynamo does not trace the autograd engine unless compiled
autograd is switched on, which is untested here), so a compiled training step
runs three fused executables: zero_grad + forward + loss, the compiled
backward graph (called by the autograd engine), and optimizer.step.

Missing
-------
- Buckets for training graphs (forward + backward): the backward would need
  the same proof for every gradient; they specialise per shape.
- Persistent (on-disk) cache of the fused executables: being built in C++
  separately; until then every process compiles its graphs once.
- No graph-level passes of our own (no custom fusion, no layout planning):
  the graph is exactly the sequence of eager lowerings, fused by XLA.
- CUDA-graph-like "reduce-overhead" mode: `mode` is accepted and ignored.
- Functionalised RNG: random ops draw from the 'tpu' generator as in eager,
  so compiled and eager runs consume the same random stream.
"""
from __future__ import annotations

import threading

import torch

from .. import _C

_DEFER_AND_FUSE = 2  # EagerMode.DEFER_AND_FUSE.value (execution_mode.py)

_lock = threading.Lock()
_stats = {
    "invocations": 0,            # calls of tpu_backend by Dynamo (one per captured graph)
    "graphs_compiled": 0,        # ATen graphs (forward/backward/inference) turned into fused callables
    "static_specialisations": 0,  # concrete input signatures run by graphs Dynamo traced symbolically
    "graph_runs": 0,             # executions of those fused graphs
    "graph_replays": 0,          # of which: the captured executable run directly (no op recording)
    "not_replayable": 0,         # captures refused (the reasons: replay_refusals())
    "bucketed_graphs": 0,        # symbolic inference graphs run at bucket sizes (buckets.py)
    "bucket_specialisations": 0,  # distinct bucket sizes those graphs ran at
}
_refusals: dict = {}
_bucket_refusals: dict = {}


def _count(key: str, n: int = 1) -> None:
    with _lock:
        _stats[key] += n


def stats() -> dict:
    """Counters of the "tpu" torch.compile backend (a copy)."""
    with _lock:
        return dict(_stats)


def reset_stats() -> None:
    with _lock:
        for k in _stats:
            _stats[k] = 0
        _refusals.clear()
        _bucket_refusals.clear()


def replay_refusals() -> dict:
    """Why captured graphs were not made replayable: reason -> count."""
    with _lock:
        return dict(_refusals)


def bucket_refusals() -> dict:
    """Why symbolic inference graphs were not run at bucket sizes: reason -> count."""
    with _lock:
        return dict(_bucket_refusals)


_DEBUG = 1  # EagerMode.DEBUG.value
_MAX_PROGRAMS = 8  # replayable argument layouts kept per graph


# The argument layout a captured program is valid for (bytes: tensor sizes,
# strides, storage offsets, dtypes, devices, which arguments share a storage,
# and the values of Python scalars, which the recorded graph holds as
# constants), or None when the call cannot be replayed (a CPU tensor argument:
# its value is uploaded while recording). In C++: it runs on every call.
_replay_key = _C._replay_key


# ---------------------------------------------------------------------------
# AOTAutograd-only op variants -> the eager ops that have lowerings
#
# Functionalisation turns BatchNorm into the `_native_batch_norm_legit*` family,
# which eager 'tpu' code never reaches (eager uses native_batch_norm). These
# helpers express each variant through native_batch_norm itself, so the graph
# runs the same lowering as eager; they are graph rewrites, not lowerings.

def _bn_functional(x, weight, bias, running_mean, running_var, training, momentum, eps):
    # _native_batch_norm_legit_functional: returns the updated running stats
    # instead of writing them; native_batch_norm writes into fresh clones
    new_mean, new_var = running_mean.clone(), running_var.clone()
    out, mean, rstd = torch.ops.aten.native_batch_norm.default(
        x, weight, bias, new_mean, new_var, training, momentum, eps)
    return out, mean, rstd, new_mean, new_var


def _bn_no_training(x, weight, bias, running_mean, running_var, momentum, eps):
    return torch.ops.aten.native_batch_norm.default(
        x, weight, bias, running_mean, running_var, False, momentum, eps)


def _bn_no_stats(x, weight, bias, training, momentum, eps):
    # scratch running stats: the batch statistics do not depend on them
    # (native_batch_norm with None running stats fails in the eager lowering)
    c = x.shape[1]
    mean = torch.zeros(c, dtype=x.dtype, device=x.device)
    var = torch.ones(c, dtype=x.dtype, device=x.device)
    return torch.ops.aten.native_batch_norm.default(x, weight, bias, mean, var, training, momentum, eps)


def _bn_legit(x, weight, bias, running_mean, running_var, training, momentum, eps):
    # in-place variant (not produced by functionalisation, kept for completeness)
    return torch.ops.aten.native_batch_norm.default(
        x, weight, bias, running_mean, running_var, training, momentum, eps)


def _rewrites() -> dict:
    aten = torch.ops.aten
    return {
        aten._native_batch_norm_legit_functional.default: _bn_functional,
        aten._native_batch_norm_legit_no_training.default: _bn_no_training,
        aten._native_batch_norm_legit.no_stats: _bn_no_stats,
        aten._native_batch_norm_legit.default: _bn_legit,
    }


def _rewrite_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    table = _rewrites()
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in table:
            node.target = table[node.target]
            changed = True
    if changed:
        gm.recompile()
    return gm


class _FusedGraph:
    """Runs one AOTAutograd ATen graph as one DeferAndFuse graph.

    Uses AOTAutograd's boxed calling convention (one list of arguments, which
    we clear so that inputs can be freed as soon as the graph drops them)."""

    def __init__(self, gm: torch.fx.GraphModule, kind: str):
        # an instance attribute: Dynamo's disable() wrapper copies __dict__
        self._boxed_call = True
        self.gm = _rewrite_graph(gm)
        self.kind = kind
        self.reason = f"compiled graph ({kind})"
        self._forward = gm.forward
        self._programs: dict = {}  # replay key -> _C._GraphProgram, or None (not replayable)
        _count("graphs_compiled")

    def __call__(self, args):
        args = list(args) if not isinstance(args, list) else args
        call_args = list(args)
        args.clear()
        previous = _C._get_mode()
        key = _replay_key(call_args) if previous != _DEBUG else None
        program = self._programs.get(key) if key is not None else None
        if program is not None:
            out = _C._replay(program, call_args)
            if out is not None:
                _count("graph_runs")
                _count("graph_replays")
                return self._out_type(out)
        capture = key is not None and key not in self._programs and len(self._programs) < _MAX_PROGRAMS
        if previous != _DEFER_AND_FUSE:
            _C._set_mode(_DEFER_AND_FUSE)
        try:
            if capture:
                _C._capture_begin(call_args)
            out = self._forward(*call_args)
            if not capture:
                del call_args  # inputs the graph dropped may be freed before it runs
        except BaseException:
            # run what was recorded before the failure, restore the mode, and
            # raise the original error (e.g. NotImplementedError naming the op)
            if capture:
                self._programs[key] = None
                _C._capture_end([], [])  # disarms
            try:
                _C._flush(self.reason + " before an error")
            except Exception:
                pass
            finally:
                if previous != _DEFER_AND_FUSE:
                    _C._set_mode(previous)
            raise
        try:
            _C._flush(self.reason)
            if capture:
                outs = list(out) if isinstance(out, (list, tuple)) else [out]
                program, why = _C._capture_end(call_args, outs)
                if program is not None and not isinstance(out, (list, tuple)):
                    program = None
                    why = "the graph returns a single value"
                self._out_type = type(out)
                self._programs[key] = program
                if program is None:
                    _count("not_replayable")
                    with _lock:
                        _refusals[why] = _refusals.get(why, 0) + 1
        finally:
            if previous != _DEFER_AND_FUSE:
                _C._set_mode(previous)
        _count("graph_runs")
        return out

    def __repr__(self):
        return f"<torch_tpu fused {self.kind} graph>"


def _compiler(kind: str):
    def compile_graph(gm: torch.fx.GraphModule, example_inputs):
        return _FusedGraph(gm, kind)
    compile_graph.__name__ = f"tpu_{kind}_compiler"
    return compile_graph


_fw_compiler = _compiler("forward")
_bw_compiler = _compiler("backward")
_inference_compiler = _compiler("inference")


def _bucketing_inference_compiler(sizes):
    """Inference graphs with symbolic sizes run at bucket sizes where
    buckets.py proves padding cannot change a result (`sizes`: a list of
    bucket sizes, or None for powers of two); elsewhere as _FusedGraph."""
    from . import buckets

    def compile_graph(gm: torch.fx.GraphModule, example_inputs):
        if not _has_symbols(gm, example_inputs):
            return _FusedGraph(gm, "inference")
        try:
            plan = buckets.plan(gm)
        except Exception as why:  # Refused, or a graph the pass does not understand: exact sizes
            reason = str(why) if isinstance(why, buckets.Refused) else f"pass error: {type(why).__name__}: {why}"
            with _lock:
                _bucket_refusals[reason] = _bucket_refusals.get(reason, 0) + 1
            return _FusedGraph(gm, "inference")
        _count("bucketed_graphs")
        exact = []

        def run_exact(args):
            if not exact:
                exact.append(_FusedGraph(gm, "inference"))
            return exact[0](args)

        seen = set()

        def on_run(key):
            if key not in seen:
                seen.add(key)
                _count("bucket_specialisations")

        return buckets.BucketedGraph(plan, _FusedGraph(plan.gm, "inference"), run_exact, sizes, on_run)
    compile_graph.__name__ = "tpu_inference_compiler"
    return compile_graph


def _partitioner(name: str):
    from torch._functorch import partitioners
    if name == "min_cut":
        return partitioners.min_cut_rematerialization_partition
    if name == "default":
        return partitioners.default_partition
    raise ValueError(f"torch_tpu: unknown partitioner {name!r}; use 'min_cut' or 'default'")


def _aot_compile(gm, example_inputs, partitioner: str, buckets):
    from torch._dynamo.backends.common import aot_autograd

    # a fresh AotAutograd per graph: it stores its wrapped bw_compiler in its kwargs
    return aot_autograd(
        fw_compiler=_fw_compiler,
        bw_compiler=_bw_compiler,
        inference_compiler=_inference_compiler if buckets is False else _bucketing_inference_compiler(buckets),
        partition_fn=_partitioner(partitioner),
        keep_inference_input_mutations=True,
    )(gm, example_inputs)


# ---------------------------------------------------------------------------
# symbolic graphs -> one static executable per concrete signature

def _is_symbolic_value(v) -> bool:
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(v, torch.Tensor):
        return any(isinstance(s, torch.SymInt) for s in (*v.shape, *v.stride())) or \
            isinstance(v.storage_offset(), torch.SymInt)
    return False


def _has_symbols(gm: torch.fx.GraphModule, example_inputs) -> bool:
    if any(_is_symbolic_value(x) for x in example_inputs):
        return True
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        if _is_symbolic_value(node.meta.get("example_value")) or _is_symbolic_value(node.meta.get("val")):
            return True
    return False


def _signature(args) -> tuple:
    """What a static executable depends on: tensor shapes/strides/dtypes/devices
    and the values of int/bool arguments (sizes). Float arguments (Dynamo's
    dynamic Python floats) are runtime scalars of the executable, not part of it."""
    key = []
    for a in args:
        if isinstance(a, torch.Tensor):
            key.append((tuple(a.shape), a.stride(), a.dtype, a.device))
        elif isinstance(a, (int, bool)):
            key.append(a)
        else:
            key.append(type(a))
    return tuple(key)


class _ConcreteShapes:
    """Wraps the compiled callable of a Dynamo graph with symbolic sizes.

    Every call runs with concrete sizes, so the ops recorded (and the fused
    module built from them) are static; the executable cache, keyed by the
    module's structure, holds one executable per concrete signature. This
    counts the signatures (stats()["static_specialisations"])."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.seen: set = set()

    def __call__(self, *args):
        key = _signature(args)
        if key not in self.seen:
            self.seen.add(key)
            _count("static_specialisations")
        return self.compiled(*args)


# ---------------------------------------------------------------------------

_optimizer_patched = False


def _capturable_tpu_optimizers() -> None:
    """Dynamo compiles a fresh optimizer on CUDA/XPU as capturable (its step
    counters live on the device, so the whole step is one device graph); it
    does the same for 'tpu' parameters from here on. Without it the counters
    stay CPU tensors, updated by CPU ops inside the graph, and the optimizer
    graph can never be replayed."""
    global _optimizer_patched
    if _optimizer_patched:
        return
    _optimizer_patched = True
    try:
        from torch._dynamo.variables.optimizer import OptimizerVariable
    except Exception:  # pragma: no cover - a torch without this Dynamo internals
        return
    original = OptimizerVariable._set_capturable

    def _set_capturable(self, tx):
        for group in self.value.param_groups:
            params = group.get("params", [])
            if ("capturable" in group and params and all(p.device.type == "tpu" for p in params)
                    and all(p not in self.value.state for p in params)):
                group["capturable"] = True
        return original(self, tx)

    OptimizerVariable._set_capturable = _set_capturable


def _bucket_option(value):
    """options={"buckets": ...}: "pow2" (default: powers of two, capped by
    mark_dynamic's max), a list of sizes, or None / "off" (exact sizes)."""
    if value is None or value is False or value == "off":
        return False
    if value == "pow2":
        return None
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) and v > 0 for v in value):
        return sorted(value)
    raise ValueError("torch_tpu: options['buckets'] must be 'pow2', 'off' or a list of positive sizes, "
                     f"got {value!r}")


def tpu_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """Dynamo backend "tpu" (see the module docstring).

    kwargs (from torch.compile): `mode` is accepted and ignored;
    `options={"partitioner": "min_cut" | "default", "buckets": "pow2" | [sizes] | "off"}`."""
    _count("invocations")
    _capturable_tpu_optimizers()
    options = dict(kwargs.get("options") or {})
    partitioner = options.pop("partitioner", "min_cut")
    buckets = _bucket_option(options.pop("buckets", "pow2"))
    if options:
        raise ValueError(f"torch_tpu: unknown torch.compile options for backend 'tpu': {sorted(options)}")
    _partitioner(partitioner)  # validate early
    compiled = _aot_compile(gm, example_inputs, partitioner, buckets)
    if _has_symbols(gm, example_inputs):
        return _ConcreteShapes(compiled)
    return compiled
