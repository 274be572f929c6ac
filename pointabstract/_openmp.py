"""Shorter busy-waiting of torch's OpenMP threads when torch was imported before pointabstract.

GNU OpenMP (the runtime torch's CPU wheels bundle) reads ``OMP_WAIT_POLICY`` once, when torch is
imported. Without it, idle threads spin for a long time after every parallel region, and when
another process wants the same cores those spinning threads steal them from the thread that
has work: a training step measured 5-20x slower. The runtime spins for a much shorter time
(its "throttled" spin count) whenever it manages more threads than there are CPUs, and that
can still be arranged after the fact: one parallel region started from a second Python thread
gives the runtime a second team of worker threads, which then sleep for the life of the
process. Measured on 2 cores with another process busy: capsules_demo_ca steps of 0.35-0.78 s
at best (torch first, nothing done) against 0.10 s with the second team and 0.07-0.10 s with
the policy set before torch loads (``python tools/openmp_contention.py`` repeats it).
"""

from __future__ import annotations

import threading

__all__ = ["THREAD_NAME", "throttle_spinning"]

THREAD_NAME = "pointabstract-openmp-team"


def throttle_spinning(timeout: float = 10.0) -> bool:
    """Start the idle second OpenMP team (once per process); True if it is running."""
    import torch

    if torch.get_num_threads() <= 1:
        return False  # one thread: no team, nothing spins
    if any(t.name == THREAD_NAME for t in threading.enumerate()):
        return True
    started = threading.Event()

    def hold() -> None:
        x = torch.ones(1 << 22)
        for _ in range(2):
            (x * 2).sum()  # large enough for torch to run it as an OpenMP parallel region
        started.set()
        threading.Event().wait()  # keep this thread, hence its team, alive

    threading.Thread(target=hold, name=THREAD_NAME, daemon=True).start()
    return started.wait(timeout)
