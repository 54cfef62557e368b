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
