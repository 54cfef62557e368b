"""The scheduler's trace: how a trace and a schedule read."""

from contend.schedule.trace import TraceEntry, compress, schedule_expression


def test_compress_shows_a_polling_loop_once():
    steps = [TraceEntry(i, "c0", [["GET", "k"]], [None]) for i in range(10)]
    lines = compress(steps)
    assert len(lines) == 2 and "9 more times" in lines[1]
    assert schedule_expression([1] + [2] * 10) == "[1] + [2] * 10"


def test_a_step_reads_as_what_it_sent_and_what_came_back():
    step = TraceEntry(3, "c1", [["SET", "k", "v", "NX"]], [b"OK"])
    assert step.describe() == "#3   c1   SET k v NX  →  'OK'"
    assert TraceEntry(4, "--", [], note="+1 s").describe() == "#4   --   +1 s"


def test_a_long_key_keeps_its_end_the_part_that_tells_keys_apart():
    key = "contend:3f2a9c1b7d4e:transfer_watch_some:schedule:1557:{bank}:acct:a"
    step = TraceEntry(1, "c0", [["GET", key]], [b"10"])
    shown = step.sent_text()
    assert shown.endswith("{bank}:acct:a") and shown.startswith("GET contend:3f2a9c1b") and "…" in shown
    assert len(shown) == len("GET ") + 60
