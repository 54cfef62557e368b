"""The timeline in a real headless browser: the page's own script runs, the violation's operations are
highlighted and on the first screen, and "back to the violation" brings them back after zooming out.

Chromium (or Chrome) is looked for on PATH; no Python package ships a browser, so where none is
installed (a fresh CI machine) the test is skipped and says so. `apt-get install chromium` makes it run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from contend.history.checker import check_history
from contend.history.invariants import Violation
from contend.history.timeline import write_timeline
from contend.models.cas_register import CasRegisterModel
from tests.history.test_timeline import long_run

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
BROWSER = next((found for name in BROWSERS if (found := shutil.which(name))), None)

# Run after the page's own script: what the first screen shows, then the same after "whole run" and
# "back to the violation" are clicked. The answer is written into the page for --dump-dom to carry.
PROBE = """
<script>
window.addEventListener("load", () => {
  const screen = () => {
    const involved = Array.from(document.querySelectorAll("#timeline rect.involved"));
    return {
      involved: involved.length,
      inView: involved.filter((r) => {
        const b = r.getBoundingClientRect();
        return b.width > 0 && b.left >= 0 && b.right <= window.innerWidth && b.top >= 0 && b.bottom <= window.innerHeight;
      }).length,
      dimmed: document.querySelectorAll("#timeline rect.dim").length,
      ticks: Array.from(document.querySelectorAll("#axis text")).map((t) => t.textContent),
      pageWidth: document.documentElement.scrollWidth,
    };
  };
  const first = screen();
  document.querySelector('button[data-view="all"]').click();
  const whole = screen();
  document.querySelector('button[data-view="focus"]').click();
  const back = screen();
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({ first, whole, back });
  document.body.appendChild(out);
});
</script>
"""


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no Chromium or Chrome on PATH (apt-get install chromium)")
def test_the_violation_is_highlighted_on_the_first_screen_of_a_real_browser(tmp_path: Path) -> None:
    verdict = check_history(long_run(), CasRegisterModel())
    by_start = sorted(verdict.calls, key=lambda c: c.start)
    two = (
        next(c for c in by_start if c.process == 0 and c.start > 310e6),
        next(c for c in by_start if c.process == 2 and c.start > 311e6),
    )
    page = write_timeline(
        verdict,
        tmp_path / "timeline.html",
        title="two holders",
        violations=[Violation("critical sections", "two holders at once", two)],
    )
    page.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    assert BROWSER is not None
    dom = subprocess.run(
        [
            BROWSER,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1280,900",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, f"the page's probe did not run in {BROWSER}: {dom[:500]}"
    seen = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    first, whole, back = seen["first"], seen["whole"], seen["back"]
    # The first screen: both operations of the violation highlighted, in the window; the rest dimmed;
    # the script drew a time axis in ms; the page is a screen wide, not 20,000 px.
    assert first["involved"] == 2 and first["inView"] == 2, first
    assert first["dimmed"] > 100, first
    assert len(first["ticks"]) >= 4 and all(t.endswith(" ms") for t in first["ticks"]), first
    assert first["pageWidth"] <= 1280, first
    # Zoomed out to the whole run the axis spans more; "back to the violation" shows it again.
    assert whole["ticks"] != first["ticks"], whole
    assert back["inView"] == 2 and back["ticks"] == first["ticks"], back
