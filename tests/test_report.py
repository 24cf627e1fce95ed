"""The HTML report of a sweep, rendered and checked in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

import smallpipe
from smallpipe import store
from smallpipe import sweep as sweep_module
from smallpipe.cli import app
from smallpipe.report import render_report, write_report
from smallpipe.sweep import load_grid, run_sweep

runner = CliRunner()

GRID = """
[base]
seed = 1
duration_s = 10.0
slice_s = 2.0

[base.link]
rate_bps = 1_000_000
queue = { kind = "droptail", limit_pkts = 10 }

[base.tcp]
packet_size_bytes = 500

[[base.flows]]
count = 6
app = "bulk"
rtt_ms = 100.0
start_s = [0.0, 1.0]

[grid]
"link.queue.limit_pkts" = [5, 20, 80]
"tcp.recovery" = ["reno", "sack"]
seed = [1, 2]
"""
# Two keys with several values besides the seed: one plot each. Seed 2 with
# limit 80 is made to fail below: 12 points, 10 ok, 2 errors.
EXPECTED_PLOTS = 2
FAILING = {"seed": 2, "limit_pkts": 80}


@pytest.fixture(scope="module")
def sweep_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    grid_path = tmp / "grid.toml"
    grid_path.write_text(GRID)
    real = sweep_module.simulate

    def failing(scenario):
        if scenario["seed"] == FAILING["seed"] and scenario["link"]["queue"]["limit_pkts"] == FAILING["limit_pkts"]:
            raise smallpipe.SimulationError("injected failure <b>not markup</b>")
        return real(scenario)

    patch = pytest.MonkeyPatch()
    patch.setattr(sweep_module, "simulate", failing)
    try:
        outcome = run_sweep(load_grid(grid_path), tmp / "r.duckdb", workers=0)
    finally:
        patch.undo()
    assert (outcome.ok, outcome.error) == (10, 2)
    return tmp / "r.duckdb"


@pytest.fixture(scope="module")
def report_text(sweep_db):
    return render_report(sweep_db)


def test_report_lists_grid_points_and_errors(report_text):
    text = report_text
    assert text.count('<img class="plot"') == EXPECTED_PLOTS
    assert "<code>link.queue.limit_pkts</code>" in text and "<code>tcp.recovery</code>" in text
    assert "<b>10</b> points ok, <b>2</b> failed" in text
    # One table row per point (12), the failed ones marked and listed with their error,
    # escaped (the error text holds markup).
    points_table = text.split("<h2>Points</h2>")[1].split("<h2>Failed points</h2>")[0]
    assert points_table.count("<tr") == 1 + 12
    assert points_table.count('<tr class="error">') == 2
    failed = text.split('<table id="failed">')[1]
    assert failed.count("injected failure &lt;b&gt;not markup&lt;/b&gt;") == 2
    assert "<b>not markup</b>" not in text


def test_report_shows_t_intervals_over_seeds(sweep_db, report_text):
    # One row per (buffer, recovery) pair; the interval of two seeds is
    # t(0.975, 1) · s / √2 with t(0.975, 1) = 12.706 (printed t table); the pairs whose
    # second seed failed have one seed and no interval.
    table = report_text.split('<table id="replications">')[1].split("</table>")[0]
    found = re.findall(r'data-metric="short_term_jain" data-mean="([^"]+)" data-ci95="([^"]+)"', table)
    ok = store.read_points(sweep_db).filter(pl.col("status") == "ok")
    expected = []
    for limit in (5, 20, 80):
        for recovery in ("reno", "sack"):
            values = ok.filter(
                (pl.col("link.queue.limit_pkts") == limit) & (pl.col("tcp.recovery") == recovery)
            )["short_term_jain"].to_numpy()
            half = 12.706 * values.std(ddof=1) / np.sqrt(2) if values.size == 2 else float("nan")
            expected.append((values.mean(), half, values.size))
    assert len(found) == len(expected) == 6
    for (mean_text, half_text), (mean, half, seeds) in zip(found, expected, strict=True):
        assert float(mean_text) == pytest.approx(mean, rel=1e-12)
        if seeds == 2:
            assert float(half_text) == pytest.approx(half, rel=1e-4)
        else:
            assert half_text == "nan"


def test_report_intervals_when_only_seeds_vary(tmp_path):
    grid_path = tmp_path / "seeds.toml"
    grid_path.write_text(GRID.split("[grid]")[0] + "[grid]\nseed = [1, 2, 3]\n")
    run_sweep(load_grid(grid_path), tmp_path / "s.duckdb", workers=0)
    table = render_report(tmp_path / "s.duckdb").split('<table id="replications">')[1].split("</table>")[0]
    assert table.count("<tr>") == 2  # the header and one row: all three seeds
    values = store.read_points(tmp_path / "s.duckdb")["long_term_jain"].to_numpy()
    found = re.search(r'data-metric="long_term_jain" data-mean="([^"]+)" data-ci95="([^"]+)"', table)
    assert found
    assert float(found.group(1)) == pytest.approx(values.mean(), rel=1e-12)
    # t(0.975, 2) = 4.303 (printed t table)
    assert float(found.group(2)) == pytest.approx(4.303 * values.std(ddof=1) / np.sqrt(3), rel=1e-3)


def test_report_is_self_contained(report_text):
    text = report_text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text, re.IGNORECASE)
    assert "<link" not in text and "@import" not in text
    assert len(re.findall(r'src="data:image/png;base64,', text)) == EXPECTED_PLOTS


def test_report_command(sweep_db, tmp_path):
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(sweep_db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    missing = runner.invoke(app, ["report", str(tmp_path / "nope.duckdb")])
    assert missing.exit_code == 2
    assert "not found" in missing.output


# ---------------------------------------------------------------- in a real browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not on PATH (Debian: apt-get install -y chromium)"
)


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args]
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)


def saturated(pixels: np.ndarray) -> int:
    """Strongly coloured pixels: the plot lines and markers (text, tables and the pale
    error rows are grey or nearly white)."""
    return int((pixels.max(axis=1) - pixels.min(axis=1) > 80).sum())


def images_decoded(html_path: Path) -> tuple[int, int]:
    """(loaded, total) plot images, as counted by the report's own script in Chromium."""
    dom = chromium("--virtual-time-budget=10000", "--dump-dom", html_path.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body, dom.stdout[:500]
    loaded = re.search(r'data-images-loaded="(\d+)"', body.group(0))
    total = re.search(r'data-images-total="(\d+)"', body.group(0))
    assert loaded and total, f"the load handler did not run: {body.group(0)}"
    return int(loaded.group(1)), int(total.group(1))


@needs_chromium
def test_plots_decode_in_chromium(sweep_db, tmp_path):
    html_path = write_report(sweep_db, tmp_path / "report.html")
    assert images_decoded(html_path) == (EXPECTED_PLOTS, EXPECTED_PLOTS)


@needs_chromium
def test_a_broken_image_is_caught_by_the_browser_check(report_text, tmp_path):
    text = report_text
    broken = text.replace('src="data:image/png;base64,iVBOR', 'src="data:image/png;base64,AAAA', 1)
    assert broken != text
    html_path = tmp_path / "broken.html"
    html_path.write_text(broken)
    assert images_decoded(html_path) == (EXPECTED_PLOTS - 1, EXPECTED_PLOTS)


@needs_chromium
def test_screenshot_shows_the_plots(sweep_db, report_text, tmp_path):
    from PIL import Image

    html_path = write_report(sweep_db, tmp_path / "report.html")
    shot = tmp_path / "report.png"
    result = chromium("--window-size=1280,1800", f"--screenshot={shot}", "--virtual-time-budget=10000", html_path.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 1800)
    pixels = np.asarray(image, dtype=np.int16).reshape(-1, 3)
    non_white = int((pixels.min(axis=1) < 245).sum())
    colored = saturated(pixels)
    assert non_white > 0.02 * len(pixels), non_white
    assert colored > 2000, colored

    # The same page with its images removed has (almost) no colour: the check above
    # is about the plots.
    bare = tmp_path / "bare.html"
    bare.write_text(re.sub(r'<img class="plot"[^>]*>', "", report_text))
    bare_shot = tmp_path / "bare.png"
    chromium("--window-size=1280,1800", f"--screenshot={bare_shot}", bare.as_uri())
    bare_pixels = np.asarray(Image.open(bare_shot).convert("RGB"), dtype=np.int16).reshape(-1, 3)
    assert saturated(bare_pixels) < colored / 10
