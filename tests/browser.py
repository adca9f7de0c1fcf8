"""A report page as a browser shows it: headless Chromium (Debian's `chromium`) loads a copy of
the page with a probe script and dumps the DOM, into which the probe wrote what it measured.

The probe runs first in <head>, so it sees every console error and uncaught exception of the
page's own scripts; on load it records the page's width (scrollWidth), every image and whether
it decoded, and where the elements with ids `answer` (the first screen's answer) and
`verdict` (its first sentence) sit."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

PROBE = """<script>
window.__errors = [];
const __error = console.error.bind(console);
console.error = (...a) => { window.__errors.push(a.join(' ')); __error(...a); };
window.addEventListener('error', e => window.__errors.push(String(e.message)));
window.addEventListener('load', () => {
  const images = [...document.images];
  const answer = document.getElementById('answer');
  const box = answer ? answer.getBoundingClientRect() : null;
  const verdict = document.getElementById('verdict');
  const line = verdict ? verdict.getBoundingClientRect() : null;
  // A table too wide for the page scrolls inside its own box (.tw): the page stays narrow, so
  // each box's own overflow is measured too.
  const boxes = [...document.querySelectorAll('.tw')].map(b => b.scrollWidth - b.clientWidth);
  const out = {width: document.documentElement.scrollWidth, viewport: window.innerWidth,
               box_overflow: boxes,
               images: images.length,
               broken: images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt),
               answer_top: box ? box.top + window.scrollY : null,
               answer_bottom: box ? box.bottom + window.scrollY : null,
               verdict_bottom: line ? line.bottom + window.scrollY : null,
               errors: window.__errors};
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def measure(page: Path, width: int = 1400, height: int = 900) -> dict:
    """What the probe saw of `page` in a width x height window."""
    text = page.read_text()
    probed = page.with_name(f".probe_{page.name}")  # beside it: relative links still resolve
    probed.write_text(text.replace("<head>", "<head>" + PROBE, 1))
    try:
        result = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--window-size={width},{height}", "--virtual-time-budget=5000", "--dump-dom",
             probed.as_uri()], capture_output=True, text=True, timeout=120)
    finally:
        probed.unlink()
    found = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout, re.S)
    assert found, f"no probe output; chromium said: {result.stderr[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&")
                      .replace("&lt;", "<").replace("&gt;", ">"))


def screenshot(page: Path, out: Path, width: int = 1400, height: int = 900) -> None:
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--window-size={width},{height}",
                    f"--screenshot={out}", page.as_uri()], capture_output=True, timeout=120)
