"""CPU use sampled beside a run: the machine's share and the server's, over a window."""

from __future__ import annotations

import time

from contend.load.cpu import CpuSampler, Sample, machine_jiffies


def test_shares_are_read_over_the_window_only():
    sampler = CpuSampler("redis://127.0.0.1:1/0")  # never entered: no thread, hand-made samples
    sampler.samples = [
        Sample(10.0, 100, 1000, 5.0),  # before the window
        Sample(11.0, 200, 1200, 5.1),
        Sample(12.0, 350, 1400, 5.4),
        Sample(13.0, 500, 1600, 5.7),
        Sample(14.0, 500, 2000, 9.0),  # after the window
    ]
    machine, server = sampler.shares(10.5, 13.5)
    assert machine == (500 - 200) / (1600 - 1200)
    assert server == (5.7 - 5.1) / 2.0
    # Fewer than two samples inside: the ones just around the window.
    assert sampler.shares(11.5, 11.8) == ((350 - 200) / (1400 - 1200), (5.4 - 5.1) / 1.0)
    assert sampler.shares(11.5, 12.5) == ((500 - 200) / (1600 - 1200), (5.7 - 5.1) / 2.0)
    assert sampler.shares(9.0, 9.5) == (None, None), "nothing sampled before it"
    sampler.samples = [Sample(11.0, None, None, None), Sample(12.0, None, None, None)]
    assert sampler.shares(10.0, 13.0) == (None, None)


def test_a_real_server_and_this_machine_are_sampled(contend_target, client):
    start = time.time()
    with CpuSampler(contend_target.url) as sampler:
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:
            client.ping()
    machine, server = sampler.shares(start, time.time())  # the first and the last sample at least
    assert server is not None and 0 < server < 2
    if machine_jiffies() is not None:  # Linux
        assert machine is not None and 0 < machine <= 1
    assert not sampler._thread or not sampler._thread.is_alive()
