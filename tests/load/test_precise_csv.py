"""contend.load.precise_csv against the installed Locust: the private method it replaces is there
with the parameters it was written for, and the CSV's percentiles keep their microseconds.

Locust monkey-patches the process with gevent when imported, so each check runs in a Python of
its own, as a Locust run does."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, locust, locust.stats
from contend.load import precise_csv
from contend.load.metrics import bucket_ms

out = {"version": locust.__version__, "applicable": precise_csv.applicable()}
locust.stats.bucket_response_time = bucket_ms  # as the harness buckets
entry = locust.stats.StatsEntry(locust.stats.RequestStats(), "ping", "redis")
for ms in (0.05, 0.12, 0.123, 0.9):
    entry.log(ms, 0)
writer = locust.stats.StatsCSV.__new__(locust.stats.StatsCSV)
writer.percentiles_to_report = [0.5, 1.0]
writer.percentiles_na = ["N/A", "N/A"]
out["before"] = writer._percentile_fields(entry)
out["applied"] = [precise_csv.apply(), precise_csv.apply()]
out["after"] = writer._percentile_fields(entry)
delattr(locust.stats.StatsCSV, precise_csv.PATCHED)
out["without"] = [precise_csv.applicable(), precise_csv.apply()]
print(json.dumps(out))
"""


def test_the_installed_locust_is_patched_as_written_for_and_keeps_microseconds():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["applicable"], f"locust {out['version']}: StatsCSV._percentile_fields is not the one replaced"
    assert out["before"] == [0, 0]  # Locust cuts 0.12 ms and 0.9 ms to whole ms
    assert out["applied"] == [True, True]
    low, high = out["after"]
    assert abs(low - 0.12) <= 0.005 and abs(high - 0.9) <= 0.005
    assert out["without"] == [False, False]  # a Locust without it is left alone
