"""The HTML report of a sweep, rendered and checked in headless Chromium."""

from __future__ import annotations

import html
import json
import math
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


# ------------------------------------------- titles, units, marks, legends (issue 40)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# What each plotted quantity is measured in, by the words of its title: a delay in ms, a
# rate in kbit/s, a share in %, a completion time in s. Jain indices and counts per flow
# have no unit.
UNITS = (
    ("queueing delay", "(ms)"),
    ("goodput", "(kbit/s)"),
    ("utilization", "(%)"),
    ("loss rate", "(%)"),
    ("no bytes", "(%)"),
    ("completion time", "(s)"),
    ("response time", "(ms)"),
)
UNITLESS = ("jain index", "timeouts per flow", "retransmissions per flow")
# The x axis of each swept key of GRID: the buffer in packets, recovery a name.
KEY_UNITS = {"link.queue.limit_pkts": "(packets)", "tcp.recovery": ""}


def dom_of(html_path: Path) -> str:
    dom = chromium("--virtual-time-budget=10000", "--dump-dom", html_path.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    return dom.stdout


def plots_axes(dom: str) -> list[list[dict]]:
    """Each plot's panels as the page carries them (``data-axes`` of its ``<img>``)."""
    found = re.findall(r'<img class="plot"[^>]*data-axes="([^"]*)"', dom)
    return [json.loads(html.unescape(text)) for text in found]


def cells(dom: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", dom, re.DOTALL)]


def check_units(label: str) -> None:
    lowered = label.lower()
    expected = [unit for word, unit in UNITS if word in lowered]
    if expected:
        assert label.endswith(expected[0]), f"{label!r}: expected the unit {expected[0]}"
    else:
        assert any(word in lowered for word in UNITLESS), f"{label!r} is neither a known quantity nor unitless"


@needs_chromium
def test_sweep_report_axes_have_titles_and_units_in_chromium(sweep_db, tmp_path):
    dom = dom_of(write_report(sweep_db, tmp_path / "report.html"))
    plots = plots_axes(dom)
    assert len(plots) == EXPECTED_PLOTS
    for key, panels in zip(KEY_UNITS, plots, strict=True):  # the grid's keys in order
        assert len(panels) >= 6, panels
        for panel in panels:
            assert panel["title"] and panel["xlabel"] and panel["ylabel"], panel
            check_units(panel["ylabel"])
            assert panel["xlabel"].endswith(KEY_UNITS[key]), panel["xlabel"]
        titles = " | ".join(p["ylabel"].lower() for p in panels)
        for word in ("utilization", "loss rate", "queueing delay", "goodput"):
            assert word in titles, f"no {word} panel: {titles}"
    # Over the buffer (a number) the seeds' means are joined by lines; over the recovery
    # (a name) no line joins reno to sack.
    limit, recovery = plots
    assert all(p["x"] == "numeric" and p["connected"] for p in limit)
    assert all(p["x"] == "categorical" and not p["connected"] for p in recovery)


@needs_chromium
def test_sweep_report_cells_never_show_none_and_constants_are_no_metric(sweep_db, tmp_path):
    dom = dom_of(write_report(sweep_db, tmp_path / "report.html"))
    shown = cells(dom)
    assert shown and not any(c in ("None", "nan", "NaN", "null") for c in shown)
    assert not any(re.search(r"± 0(?![.\d])", c) for c in shown)
    # Every point of GRID has 6 flows: a setting, not an outcome, so no column of it.
    assert 'data-metric="flows"' not in dom
    constants = re.search(r'<p class="muted" id="constants">(.*?)</p>', dom)
    assert constants and "Flows 6" in constants.group(1)
    # No point has sized or interactive flows: no FCT column full of dashes.
    assert 'data-metric="fct_median_s"' not in dom and "Median flow completion time" in dom


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def legends_clear_of_panels(figure) -> None:
    """No legend's box overlaps a panel's data area."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    legends = list(figure.legends) + [a.get_legend() for a in figure.get_axes() if a.get_legend()]
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for axes in figure.get_axes():
            if axes.get_visible() and axes.axison:
                assert not _overlaps(box, axes.get_window_extent(renderer)), (legend, axes.get_title())


def test_sweep_figure_limits_marks_and_legend(sweep_db):
    import matplotlib.pyplot as plt
    from smallpipe.report import PLOTTED_METRICS, key_figure

    ok = store.read_points(sweep_db).filter(pl.col("status") == "ok")
    sweep = store.read_sweep(sweep_db)
    metrics = [m for m in PLOTTED_METRICS if ok[m].drop_nulls().len() and ok[m].drop_nulls().n_unique() > 1]
    for key in KEY_UNITS:
        figure = key_figure(ok, key, sweep, metrics)
        try:
            panels = {a.get_title(): a for a in figure.get_axes() if a.get_visible()}
            bottom, top = panels["Bottleneck utilization"].get_ylim()
            # A share is drawn from 0 and never past 105%: near-equal utilizations (0.99
            # against 0.98) stay near each other, not spread over the whole panel.
            assert bottom == 0 and 100 * ok["utilization"].max() < top <= 105, (bottom, top)
            for axes in panels.values():
                assert axes.get_ylim()[0] == 0, axes.get_title()
                drawn = [line for line in axes.get_lines()
                         if line.get_linestyle() not in ("None", "none", "", " ") and len(line.get_xdata()) > 1]
                assert bool(drawn) == (key == "link.queue.limit_pkts"), (key, axes.get_title())
            legends_clear_of_panels(figure)
            assert figure.legends, "one legend for the series (the other key's values)"
        finally:
            plt.close(figure)


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory):
    """The dumbbell for 20 s with 12 flows, and with one."""
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for flows in (12, 1):
        out[flows] = root / f"flows{flows}"
        result = runner.invoke(app, ["run", str(EXAMPLES / "dumbbell.toml"), "--set", "duration_s=20",
                                     "--set", f"flows.0.count={flows}", "--out", str(out[flows])])
        assert result.exit_code == 0, result.output
    return out


RUN_UNITS = {"time": "(s)", "queue length": "(packets)", "queueing delay": "(ms)", "throughput": "(Mbit/s)",
             "goodput": "(kbit/s"}
"""The run figure's axes: time in s, the queue in packets, delays in ms, the link's rate in
Mbit/s, a flow's (a few kbit/s in the small-packet regime) in kbit/s."""


@needs_chromium
def test_run_report_axes_and_tables_carry_units_in_chromium(run_dirs, tmp_path):
    from smallpipe.run_report import write_run_report

    dom = dom_of(write_run_report(run_dirs[12], tmp_path / "run.html"))
    plots = plots_axes(dom)
    assert len(plots) == 2, "the run's figure and the delay histograms"
    for panel in plots[0]:
        assert panel["title"] and panel["xlabel"] and panel["ylabel"], panel
        for label in (panel["xlabel"], panel["ylabel"]):
            for word, unit in RUN_UNITS.items():
                if label.lower().startswith(word):
                    assert unit in label, (label, unit)
    titles = {p["title"] for p in plots[0]}
    assert {"Short-term fairness", "Per-flow goodput"} <= titles
    headers = [html.unescape(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", dom)]
    for expected in ("Rate (Mbit/s)", "Utilization (%)", "Mean queueing delay (ms)", "Drops (packets)",
                     "Propagation RTT (ms)", "p99 RTT (ms)", "Jitter (ms)"):
        assert expected in headers, headers
    assert not any(c in ("None", "nan") for c in cells(dom))


def test_one_flow_run_figure_has_no_fairness_panels(run_dirs):
    import matplotlib.pyplot as plt
    from smallpipe.plots import run_figure
    from smallpipe.result import Result

    titles = {}
    for flows, folder in run_dirs.items():
        figure = run_figure(Result.read(folder))
        try:
            titles[flows] = {a.get_title() for a in figure.get_axes() if a.axison}
            legends_clear_of_panels(figure)
        finally:
            plt.close(figure)
    # Jain's index of one flow is 1 whatever happens, and its goodput "CDF" one step.
    meaningless = {"Short-term fairness", "Per-flow goodput"}
    assert meaningless <= titles[12]
    assert not meaningless & titles[1]
    assert {"Bottleneck queue", "Per-flow goodput over time"} <= titles[1]


# ------------------------------------------------------------- reproduce list (issue 40)

TIME_CLASS_BOUNDS_S = (("seconds", 0, 60), ("minutes", 60, 1200), ("tens of minutes", 1200, 3600),
                       ("hours", 3600, math.inf))


def _seconds(text: str) -> float:
    """``75 s``, ``18 min``, ``5 h 50 min`` → seconds."""
    total = 0.0
    for value, unit in re.findall(r"(\d+) (h|min|s)\b", text):
        total += int(value) * {"h": 3600, "min": 60, "s": 1}[unit]
    return total


def test_reproduce_list_shows_whole_descriptions_time_and_root():
    from smallpipe.experiments import REPRODUCTIONS

    result = runner.invoke(app, ["reproduce", "list"], terminal_width=100)
    assert result.exit_code == 0, result.output
    header = re.compile(r"^(\S+) · (seconds|minutes|tens of minutes|hours) \(([^)]*)\) · root: (yes|no)\b")
    rows: dict[str, tuple[str, str, str, list[str]]] = {}
    current = None
    for line in result.output.splitlines():
        if match := header.match(line):
            current = match.group(1)
            rows[current] = (match.group(2), match.group(3), match.group(4), [])
        elif current and line.startswith("    "):
            rows[current][3].append(line.strip())
    assert list(rows) == list(REPRODUCTIONS)
    for name, (time_class, measured, root, text) in rows.items():
        described = " ".join(text)
        assert described.endswith((".", "?")), f"{name}: {described[-60:]!r} is cut mid-sentence"
        # The whole first paragraph of the module's docstring, not its first line.
        paragraph = " ".join(REPRODUCTIONS[name].__doc__.strip().split("\n\n")[0].split()).replace("``", "`")
        assert described == paragraph, name
        assert root == ("yes" if name.startswith("taq-testbed-") else "no"), name
        longest = _seconds(measured.split("–")[-1])  # "75–286 s", "5 h 22 min–5 h 50 min", "9 s"
        low, high = next((lo, hi) for c, lo, hi in TIME_CLASS_BOUNDS_S if c == time_class)
        assert low <= longest < high, (name, time_class, measured)


def test_reproduce_table_shows_a_dash_not_none(tmp_path):
    # Matta & Guo's table leaves the per-class columns empty on its aggregate rows.
    result = runner.invoke(app, ["reproduce", "isolation-matta-guo", "--quick", "--out", str(tmp_path)],
                           terminal_width=400)
    assert result.exit_code == 0, result.output
    table = result.output[result.output.index("┏"):]
    assert "None" not in table and "nan" not in table
    assert "—" in table


def test_replications_leave_out_what_the_keys_decide_and_round_to_the_interval():
    from smallpipe.report import _replications

    # Two flow counts over three seeds: the flow count follows the key (a setting), the
    # utilization varies with the seed (an outcome).
    ok = pl.DataFrame({
        "flows.0.count": [2, 2, 2, 4, 4, 4],
        "seed": [1, 2, 3, 1, 2, 3],
        "flows": [2, 2, 2, 4, 4, 4],
        "utilization": [0.90, 0.92, 0.94, 0.97, 0.97, 0.97],
    })
    sweep = {"types": {"flows.0.count": "BIGINT", "seed": "BIGINT"}, "keys": {"flows.0.count": [2, 4], "seed": [1, 2, 3]}}
    page = "\n".join(_replications(ok, sweep, ["flows", "utilization"], ["flows.0.count"]))
    assert 'data-metric="flows"' not in page and 'id="determined"' in page
    shown = cells(page)
    # Seeds 0.90, 0.92, 0.94: mean 92%, s = 2 points, half-width t(0.975, 2) · 2 / √3 =
    # 4.303 · 1.1547 = 4.97 points, to two digits 5.0, and the mean to the same place.
    assert shown == ["2", "3", "92.0 ± 5.0", "4", "3", "97"]


def test_overlaid_runs_share_axes_that_span_every_run(run_dirs, tmp_path):
    import matplotlib.pyplot as plt
    from smallpipe.plots import runs_figure
    from smallpipe.result import Result

    bigger = tmp_path / "buffer100"
    result = runner.invoke(app, ["run", str(EXAMPLES / "dumbbell.toml"), "--set", "duration_s=20",
                                 "--set", "flows.0.count=12", "--set", "link.queue.limit_pkts=100",
                                 "--out", str(bigger)])
    assert result.exit_code == 0, result.output
    # The 50-packet buffer first, the 100-packet one second: the queue axis must reach the
    # second run's 100 packets, not stop at the first run's range.
    figure = runs_figure([("b50", Result.read(run_dirs[12])), ("b100", Result.read(bigger))])
    try:
        for axes in figure.get_axes()[:3]:
            highest = max(np.nanmax(np.asarray(line.get_ydata(), dtype=float)) for line in axes.get_lines())
            bottom, top = axes.get_ylim()
            assert bottom == 0 and top >= highest, (axes.get_title(), top, highest)
        assert figure.get_axes()[0].get_ylim()[1] > 50
        legends_clear_of_panels(figure)
    finally:
        plt.close(figure)
