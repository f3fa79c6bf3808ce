"""Host time of work enqueued while the GPU is kept busy, shared by the PyTorch benchmarks.

A sleep kernel long enough for every call is queued first, so no launch waits for the GPU and the
launch queue never fills: the host's perf_counter time then is what the host needs to enqueue the
work, not the GPU's time.
"""
import time

import torch


def sleep_cycles_per_second():
    """Clock cycles of torch.cuda._sleep per second on the current device (measured)."""
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda._sleep(1_000_000)
    torch.cuda.synchronize()
    return 1_000_000 / (time.perf_counter() - t0)


def busy_host_us(fn, calls, rounds, ms_per_call=4.0, cycles_per_s=None):
    """The smallest per-call host time of fn() over `rounds` rounds of `calls` calls each, the GPU
    kept busy ms_per_call per call (more than any call needs to enqueue); one warm-up call first."""
    cps = cycles_per_s if cycles_per_s is not None else sleep_cycles_per_second()
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        torch.cuda._sleep(int(cps * ms_per_call * 1e-3 * calls))
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) * 1e6 / calls)
        torch.cuda.synchronize()
    return best
