"""Streams and events on 'tpu' (issue #16, item 1), with torch.cuda's API and
semantics: per-thread current stream, new and pooled streams, the stream
context, events that really wait for the device's work (query False while it
runs, True after synchronize), device-measured elapsed_time, and values that do
not depend on the stream work was issued on, in every execution mode."""
import threading

import pytest
import torch

from _helpers import DEV, make_tensor, tpu_only

pytestmark = tpu_only

MODES = ["strict", "debug", "defer"]


def in_mode(mode):
    from torch_tpu.execution_mode import EagerMode, eager_mode
    return eager_mode(EagerMode[{"strict": "STRICT", "debug": "DEBUG", "defer": "DEFER_AND_FUSE"}[mode]])


def test_stream_objects_and_current_stream():
    default = torch.tpu.default_stream()
    assert default.stream_id == 0 and default.device.type == DEV
    assert torch.tpu.current_stream() == default
    s = torch.tpu.Stream()
    t = torch.Stream(device=DEV)
    assert isinstance(s, torch.tpu.Stream) and isinstance(s, torch.Stream)
    assert s != default and t != s and t.device.type == DEV
    with torch.tpu.stream(s):
        assert torch.tpu.current_stream() == s
        assert torch.accelerator.current_stream() == s
        with torch.tpu.stream(t):
            assert torch.tpu.current_stream() == t
        assert torch.tpu.current_stream() == s
    assert torch.tpu.current_stream() == default
    torch.tpu.set_stream(s)
    try:
        assert torch.tpu.current_stream() == s
        seen = []
        th = threading.Thread(target=lambda: seen.append(torch.tpu.current_stream()))
        th.start()
        th.join(timeout=60)
        assert seen == [default]  # the current stream is per thread, as on CUDA
    finally:
        torch.tpu.set_stream(default)


def _busy(n=6):
    x = torch.randn(768, 768, device=DEV)
    for _ in range(n):
        x = torch.tanh(x @ x * 1e-3)
    return x


@pytest.mark.parametrize("mode", MODES)
def test_events_wait_for_the_device_and_time_it(mode):
    with in_mode(mode):
        _busy(1).cpu()  # compile first, so the timed region is execution
        start = torch.tpu.Event(enable_timing=True)
        end = torch.Event(DEV, enable_timing=True)
        assert isinstance(end, torch.tpu.Event)
        start.record()
        y = _busy()
        end.record()
        end.synchronize()
        assert end.query() and start.query()
        ms = start.elapsed_time(end)
        assert ms > 0
        # a longer region takes longer, as measured by the device
        e3 = torch.tpu.Event(enable_timing=True)
        y = _busy(18)
        e3.record()
        if not e3.query():  # as CUDA: no elapsed time before the work is done
            with pytest.raises(RuntimeError, match="completed"):
                end.elapsed_time(e3)
        e3.synchronize()
        assert end.elapsed_time(e3) > 0
        torch.testing.assert_close(y.cpu(), y.cpu())


def test_an_event_is_not_ready_while_its_work_runs():
    _busy(1).cpu()
    seen_pending = False
    for _ in range(5):  # the device may finish fast; a big enough region is caught running
        e = torch.tpu.Event()
        _busy(30)
        e.record()
        seen_pending = seen_pending or not e.query()
        e.synchronize()
        assert e.query()
        if seen_pending:
            break
    assert seen_pending


def test_elapsed_time_needs_timing_events():
    a, b = torch.tpu.Event(), torch.tpu.Event()
    a.record()
    b.record()
    b.synchronize()
    with pytest.raises((RuntimeError, ValueError), match="enable_timing|timing"):
        a.elapsed_time(b)


@pytest.mark.parametrize("mode", MODES)
def test_work_on_side_streams_gives_the_same_values(mode):
    x = make_tensor((64, 64))
    ref = ((x @ x).relu() + x.sum(0)).sin()
    with in_mode(mode):
        main, side = torch.tpu.current_stream(), torch.tpu.Stream()
        d = x.to(DEV)
        with torch.tpu.stream(side):
            a = (d @ d).relu()  # issued on the side stream
            ev = side.record_event()
        main.wait_event(ev)
        b = d.sum(0)
        side.wait_stream(main)
        with torch.tpu.stream(side):
            out = (a + b).sin()
        a.record_stream(main)
        torch.tpu.current_stream().wait_stream(side)
        side.synchronize()
        assert side.query()
        torch.testing.assert_close(out.cpu(), ref, atol=1e-4, rtol=1e-4)


def test_stream_query_issues_work_defer_and_fuse_still_holds():
    # a stream with recorded, unrun work must not report itself idle without running it
    import torch_tpu
    with in_mode("defer"):
        x = torch.randn(64, device=DEV)
        torch_tpu.sync()
        before = torch_tpu.defer_stats()["graphs_executed"]
        y = x * 2
        torch.tpu.current_stream().query()
        assert torch_tpu.defer_stats()["graphs_executed"] == before + 1
        torch.tpu.current_stream().synchronize()
        assert torch.tpu.current_stream().query()
        torch.testing.assert_close(y.cpu(), x.cpu() * 2)
