"""The HTML report in headless Chromium: the page loads, every chart has both axes with ticks
and titles, the heat maps a colour legend, and nothing is logged to the console."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from draplan.cli.demo import demo_scenario
from draplan.report import ReportInfo, html_report
from draplan.sim.compare import compare
from draplan.sim.demo import demo_objects
from draplan.sim.scenario import build_input

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Runs inside the page: collects console errors, then inspects every chart.
PROBE = """<script>
window.__errors = [];
const origError = console.error;
console.error = (...a) => { window.__errors.push(a.join(' ')); origError(...a); };
window.addEventListener('error', e => window.__errors.push(String(e.message)));
window.addEventListener('load', () => {
  const charts = [...document.querySelectorAll('figure svg')].map(svg => ({
    title: (svg.querySelector('#axes_1 text') || {}).textContent || '',
    xticks: svg.querySelectorAll('[id^="xtick_"]').length,
    yticks: svg.querySelectorAll('[id^="ytick_"]').length,
    texts: [...svg.querySelectorAll('text')].map(t => t.textContent),
    width: svg.getBoundingClientRect().width,
  }));
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({charts, errors: window.__errors});
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sim = build_input([(o, "") for o in demo_objects()] + [(demo_scenario(jobs=10, seed=3), "")])
    page = html_report(sim.name, compare(sim), ReportInfo(("demo",), "2026-12-01", "test"))
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(page.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    return path


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium)")
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_report_in_chromium(report: Path) -> None:
    run = _chromium("--virtual-time-budget=5000", "--dump-dom", report.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    m = re.search(r'<pre id="probe">(.*?)</pre>', run.stdout, re.S)
    assert m, "the page did not finish loading"
    probe: dict[str, Any] = json.loads(html.unescape(m.group(1)))
    assert probe["errors"] == []
    assert not re.search(r"CONSOLE\(\d+\)|Uncaught", run.stderr)
    charts = probe["charts"]
    assert len(charts) == 7 + 3  # seven charts, one heat map per policy
    for chart in charts:
        assert chart["xticks"] >= 1 and chart["yticks"] >= 3, chart["texts"][:5]
        assert chart["width"] > 300
    lines = [c for c in charts if "simulated time (hours)" in c["texts"]]
    assert len(lines) == 4 + 3  # every time axis is in hours
    heat = [c for c in charts if "share of the node's GPUs allocated" in c["texts"]]
    assert len(heat) == 3 and all("node" in c["texts"] for c in heat)
    for c in heat:
        assert "100%" in c["texts"] and "0%" in c["texts"]  # the colour legend's ends


def test_report_screenshot(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    run = _chromium("--window-size=1100,3000", f"--screenshot={shot}", report.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.stat().st_size > 50_000  # a blank page is a few kilobytes
