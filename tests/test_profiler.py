"""PyTorch's profiler on 'tpu' (issue #16, item 5): the Kineto device track
(torch.profiler.profile(activities=[CPU, PrivateUse1])): every PJRT execution
(eager executable, DeferAndFuse graph, compiled replay) on row "TPU 0" of the
Chrome trace with real timestamps, linked to the ATen op that issued it, so
key_averages() has device time per op and per graph, in every mode; device
time per op through the PrivateUse1 profiler stubs, host <-> device copies as
memcpy events (autograd.profiler.profile(
use_device="tpu", use_kineto=False)), record_function ranges, Chrome traces,
and the default torch.profiler.profile() working beside the device."""
import json
import os
import threading
import warnings

import pytest
import torch
import torch.profiler as tp

from _helpers import DEV, tpu_only

pytestmark = tpu_only


def _work(m, x, n=4):
    y = m(x)
    for _ in range(n):
        y = torch.tanh(y @ m.weight)
    return y.sum().item()


def test_device_time_per_op_with_the_legacy_profiler(tmp_path):
    m = torch.nn.Linear(384, 384).to(DEV)
    x = torch.randn(256, 384, device=DEV)
    _work(m, x)  # compile outside the profiled region
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "PrivateUse1 used in profiler but not enabled" must not appear
        with torch.autograd.profiler.profile(use_device=DEV, use_kineto=False) as prof:
            with torch.autograd.profiler.record_function("my_block"):
                _work(m, x)
    # Summed over events, not read from key_averages(): it groups ops with and
    # without device time apart (FunctionEvent.is_legacy). The stubs time each
    # op by the completion stamps around it, so when a completion callback
    # arrives after that of work chained behind it (the CPU plugin with two
    # devices) an op's time can land on its neighbour: the matmul chain (mm and
    # tanh) is checked as a whole. The device track has no such limit
    # (test_device_track_in_key_averages_and_chrome_trace).
    events = prof.function_events
    mm = [e for e in events if e.name == "aten::mm"]
    assert len(mm) == 4 and sum(e.name == "my_block" for e in events) == 1
    chain = sum(e.self_device_time_total for e in events if e.name in ("aten::mm", "aten::tanh"))
    assert chain > 0
    # the enclosing range covers them
    block = [e for e in events if e.name == "my_block"][0]
    assert block.device_time_total >= chain * 0.9
    path = str(tmp_path / "trace.json")
    prof.export_chrome_trace(path)
    names = {e.get("name") for e in json.load(open(path))["traceEvents"]}
    assert "aten::mm" in names and "my_block" in names


def test_default_torch_profiler_beside_the_device(tmp_path):
    m = torch.nn.Linear(64, 64).to(DEV)
    x = torch.randn(8, 64, device=DEV)
    _work(m, x)
    with tp.profile(activities=[tp.ProfilerActivity.CPU], record_shapes=True) as prof:
        with tp.record_function("outer"):
            with tp.record_function("inner"):
                _work(m, x)
    keys = {e.key for e in prof.key_averages()}
    assert {"outer", "inner", "aten::mm"} <= keys
    path = os.path.join(tmp_path, "t.json")
    prof.export_chrome_trace(path)
    assert os.path.getsize(path) > 0


# --- the Kineto device track --------------------------------------------------

MODES = ["STRICT", "DEBUG", "DEFER_AND_FUSE", "compiled"]


def _device_track(mode, tmp_path):
    from torch_tpu.execution_mode import EagerMode, eager_mode
    torch.manual_seed(0)
    m = torch.nn.Linear(96, 96).to(DEV)
    x = torch.randn(32, 96).to(DEV)
    if mode == "compiled":
        f = torch.compile(lambda a: torch.tanh(m(a) @ m.weight).sum(), backend="tpu")
        work = lambda: f(x).item()  # noqa: E731
        ctx = eager_mode(EagerMode.STRICT)
    else:
        work = lambda: _work(m, x, n=3)  # noqa: E731
        ctx = eager_mode(EagerMode[mode])
    with ctx:
        for _ in range(3):  # compile (and, compiled, reach the replay) outside the profiled region
            work()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.PrivateUse1]) as prof:
                with tp.record_function("outer"):
                    with tp.record_function("inner"):
                        value = work()
    path = str(tmp_path / "trace.json")
    prof.export_chrome_trace(path)
    return prof, json.load(open(path))["traceEvents"], value


@pytest.mark.parametrize("mode", MODES)
def test_device_track_in_key_averages_and_chrome_trace(mode, tmp_path):
    prof, events, _ = _device_track(mode, tmp_path)
    avg = {e.key: e for e in prof.key_averages()}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert kernels, "no device executions in the trace"
    names = [k["name"] for k in kernels]
    if mode in ("STRICT", "DEBUG"):
        # one execution per op, named by its ATen op and charged to it
        assert names.count("tpu op: aten::mm") == 3
        assert avg["aten::mm"].self_device_time_total > 0
        assert avg["aten::mm"].device_time_total == pytest.approx(avg["tpu op: aten::mm"].self_device_time_total)
    elif mode == "DEFER_AND_FUSE":
        graphs = [n for n in names if n.startswith("tpu graph (")]
        assert len(graphs) == 1 and "aten::mm x3" in graphs[0] and "aten::tanh x3" in graphs[0]
        # the graph runs at .item(): its device time is that op's
        assert avg["aten::_local_scalar_dense"].device_time_total > 0
    else:
        graphs = [n for n in names if n.startswith("tpu compiled graph (")]
        assert len(graphs) == 1 and "aten::mm" in graphs[0] and "aten::tanh" in graphs[0]
    # record_function ranges nest and cover the device time of what they ran
    total = _device_total(prof)
    assert total > 0
    assert avg["outer"].device_time_total == pytest.approx(avg["inner"].device_time_total)
    assert avg["inner"].device_time_total >= 0.99 * total
    assert avg["outer"].count == avg["inner"].count == 1
    # the device row: named, on its own pid, inside the profiled window, in issue order
    meta = {(e["pid"], e["name"]): e["args"] for e in events if e.get("ph") == "M"}
    assert meta[(0, "process_name")]["name"] == "TPU 0"
    assert all(k["pid"] == 0 and k["dur"] >= 0 for k in kernels)
    cpu = [e for e in events if e.get("cat") == "cpu_op"]
    start = min(e["ts"] for e in cpu)
    end = max(e["ts"] + e["dur"] for e in cpu)
    assert all(start <= k["ts"] and k["ts"] + k["dur"] <= end + 5e3 for k in kernels)
    ts = [k["ts"] for k in kernels]
    assert ts == sorted(ts)  # one at a time, in issue order: never overlapping
    assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(kernels, kernels[1:]))
    # each execution points at the op that issued it, with its host-side launch and a flow arrow
    assert all(k["args"]["External id"] > 0 for k in kernels)
    launches = [e["name"] for e in events if e.get("cat") == "privateuse1_runtime"]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]  # .item()'s device -> host copy
    assert launches.count("PJRT_LoadedExecutable_Execute") == len(kernels)
    assert len(launches) == len(kernels) + len(copies)
    flows = [e for e in events if e.get("cat") == "ac2g"]
    n = len(kernels) + len(copies)
    assert sorted(e["ph"] for e in flows) == ["f"] * n + ["s"] * n


def test_host_device_copies_on_the_device_track(tmp_path):
    """Uploads and downloads are device-track events as CUDA's memcpys are:
    named by direction, sized, linked to the op that issued them, in
    key_averages() and the Chrome trace."""
    host = torch.randn(256, 128)
    (host.to(DEV) * 2).cpu()  # compile outside the profiled region
    with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.PrivateUse1]) as prof:
        y = (host.to(DEV) * 2).cpu()
    assert torch.equal(y, host * 2)
    path = str(tmp_path / "trace.json")
    prof.export_chrome_trace(path)
    events = json.load(open(path))["traceEvents"]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    names = [e["name"] for e in copies]
    assert names == ["Memcpy HtoD (Host -> Tpu)", "Memcpy DtoH (Tpu -> Host)"], names
    assert all(e["args"]["bytes"] == 256 * 128 * 4 and e["pid"] == 0 and e["dur"] >= 0 for e in copies)
    ops = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    assert all(ops.get(e["args"]["External id"], "").startswith("aten::") for e in copies)
    kernel = [e for e in events if e.get("cat") == "kernel"]
    assert [k["name"] for k in kernel] == ["tpu op: aten::mul"]
    # on the device row in issue order: upload, the multiply, download
    assert copies[0]["ts"] <= kernel[0]["ts"] <= copies[1]["ts"]
    launches = [e["name"] for e in events if e.get("cat") == "privateuse1_runtime"]
    assert launches == ["PJRT_Client_BufferFromHostBuffer", "PJRT_LoadedExecutable_Execute", "PJRT_Buffer_ToHostBuffer"]
    keys = {e.key for e in prof.key_averages()}
    assert {"Memcpy HtoD (Host -> Tpu)", "Memcpy DtoH (Tpu -> Host)"} <= keys


def test_device_time_agrees_with_events():
    """The device track and torch.tpu.Event read the same completion stamps."""
    m = torch.nn.Linear(256, 256).to(DEV)
    x = torch.randn(128, 256, device=DEV)
    _work(m, x)
    start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.PrivateUse1]) as prof:
        start.record()
        _work(m, x)
        end.record()
    event_us = start.elapsed_time(end) * 1e3
    device_us = _device_total(prof)
    assert 0 < device_us <= event_us * 1.05 + 100


def test_autograd_profiler_with_kineto_and_cpu_only_profiles():
    m = torch.nn.Linear(64, 64).to(DEV)
    x = torch.randn(8, 64, device=DEV)
    _work(m, x)
    with torch.autograd.profiler.profile(use_device=DEV, use_kineto=True) as prof:
        _work(m, x)
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::mm"].device_time_total > 0
    # CPU-only: no device session, no device rows
    with tp.profile(activities=[tp.ProfilerActivity.CPU]) as cpu_only:
        _work(m, x)
    assert all(e.device_time_total == 0 for e in cpu_only.key_averages())
    # the trace is off again: executions are not noted outside a profile
    assert not torch_tpu_trace_on()


def test_values_unchanged_under_the_profiler(tmp_path):
    _, _, profiled = _device_track("DEFER_AND_FUSE", tmp_path)
    _, _, plain = _device_track("STRICT", tmp_path)
    assert profiled == pytest.approx(plain, rel=1e-5)


def _device_total(prof):
    """Device time of the executions (the op rows carry the same time again)."""
    return sum(e.self_device_time_total for e in prof.key_averages() if e.key.startswith("tpu "))


def torch_tpu_trace_on():
    import torch_tpu
    return torch_tpu._C._device_trace_on()


def test_schedule_cycles_and_backward_ops():
    """A scheduled profile gets one device track per active cycle; executions
    issued by the autograd engine's device thread are linked to the backward ops."""
    m = torch.nn.Linear(64, 64).to(DEV)
    x = torch.randn(8, 64, device=DEV)

    def step():
        m.zero_grad()
        m(x).square().sum().backward()
        return m.weight.grad.sum().item()

    step()
    traces = []

    def ready(p):
        traces.append({e.key: e for e in p.key_averages()})

    with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.PrivateUse1],
                    schedule=tp.schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as p:
        for _ in range(8):
            step()
            p.step()
    assert len(traces) == 2
    for avg in traces:
        assert avg["tpu op: aten::addmm"].count == 2      # forward, twice per cycle
        assert avg["tpu op: aten::mm"].count >= 2         # weight gradient in backward
        assert avg["aten::mm"].device_time_total > 0      # charged to the backward op
    assert not torch_tpu_trace_on()



def _on_fresh_thread(work):
    """Runs work() in DeferAndFuse on a new thread (whose first recorded op is
    then inside work) and returns what it returned; its exception re-raised."""
    from torch_tpu.execution_mode import EagerMode, eager_mode
    result = {}

    def run():
        try:
            with eager_mode(EagerMode.DEFER_AND_FUSE):
                result["value"] = work()
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            result["error"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=120)
    assert not t.is_alive()
    if "error" in result:
        raise result["error"]
    return result["value"]


def test_profiling_a_defer_region_whose_first_recorded_op_is_inside_it():
    # A thread's first DeferAndFuse record used to push the backend's
    # thread-local entry above the profiler's own, and the profiler's exit
    # raised "Expected debug info of type PROFILER_STATE". A new thread makes
    # the region hold that first record; the pending work runs at exit.
    x = torch.randn(8, 8)

    def work():
        xt = x.to("tpu")
        with torch.profiler.profile() as prof:
            y = (xt @ xt).tanh()
        names = {e.name for e in prof.events()}
        with torch.profiler.profile():  # and again, now that the thread has recorded
            (y + 1).sum().item()
        return names, y.cpu()
    names, y = _on_fresh_thread(work)
    assert "aten::mm" in names
    torch.testing.assert_close(y, (x @ x).tanh(), atol=1e-5, rtol=1e-5)


def test_backward_inside_a_profiled_defer_region_on_a_fresh_thread():
    # The thread's owner goes under the profiler's entry, so the autograd
    # engine's thread records the backward into the same graph: gradients
    # equal CPU's, and the profiler exits cleanly.
    torch.manual_seed(0)
    m = torch.nn.Linear(8, 4)
    x = torch.randn(5, 8)

    def work():
        mt = torch.nn.Linear(8, 4)
        mt.load_state_dict(m.state_dict())
        mt.to("tpu")
        with torch.profiler.profile():
            mt(x.to("tpu")).tanh().sum().backward()
        return mt.weight.grad.cpu()
    grad = _on_fresh_thread(work)
    m(x).tanh().sum().backward()
    torch.testing.assert_close(grad, m.weight.grad, atol=1e-5, rtol=1e-5)
