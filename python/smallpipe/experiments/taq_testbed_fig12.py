"""TAQ paper, Figure 12 on the testbed: object download-time CDFs while two client hosts
replay a web log at 1 Mbit/s, each over up to 4 connections, TAQ with admission control
against DropTail, on real Linux TCP through ``smallpipe-box``.

What the paper reports (Section 5.5, its testbed): TAQ with admission control cuts the
download time of short objects about 5x in the median and the worst case, of large objects
2x in the median and 1.6x in the worst case; CDFs per 10 KB bucket.

Set-up: the paper-scale set-up of :mod:`smallpipe.experiments.taq_fig12` unchanged (its
synthetic log, 2 clients x 4 connections, as fast as possible, 1 Mbit/s, 50 packets of
buffer, RTTs uniform in 150-300 ms, NewReno-era settings, SYN retries 20), each run through
:func:`smallpipe.testbed.run_testbed`; the buckets, summary and gains are that module's.
On the testbed each client connects and sends a 16-byte request, so an object's time
includes the request's trip as a real HTTP client's does (the simulator's sender-initiated
connections lack it: half an RTT).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

import polars as pl

from smallpipe.experiments import taq_fig12
from smallpipe.experiments.provenance import write_csv

__all__ = ["PAPER", "QUEUES", "reproduce", "run"]

QUEUES: tuple[str, ...] = ("droptail", "taq+ac")
PAPER = taq_fig12.PAPER
LOG_S, DURATION_S = 1200.0, 1800.0
QUICK_LOG_S, QUICK_DURATION_S = 300.0, 450.0
SCALES = {"full": (LOG_S, DURATION_S), "session": (200.0, 300.0), "quick": (QUICK_LOG_S, QUICK_DURATION_S),
          "stress": (LOG_S, DURATION_S)}
"""(log seconds replayed, run seconds); ``session`` (what fits an hour of quiet cores with the
rest of the testbed measurements): a 200 s log replayed for 300 s; ``stress``: the full set-up
with the simulator's stress clients (:data:`CLIENTS`)."""
CLIENTS = {"stress": "stress"}
"""The scales whose log is split among the stress scale's 50 clients of
:data:`smallpipe.experiments.taq_fig12.SCALES` (the others: the paper's 2); their files are
named with the scale (``taq-testbed-fig12-stress.csv``, ...)."""


def run(*, queues: Sequence[str] = QUEUES, log_s: float = LOG_S, duration_s: float = DURATION_S,
        congestion_control: str = "reno", seed: int = 1, clients: str = "paper",
        log: Path | None = None) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(per object, per bucket, per run) as :func:`smallpipe.experiments.taq_fig12.run`, on the
    testbed; ``clients`` names a scale of that module (``paper``: 2 clients, ``stress``: 50);
    ``log`` replaces the synthetic log."""
    from smallpipe.testbed import run_testbed  # runs need root and the binaries

    objects, buckets, runs = taq_fig12.run(scales=(clients,), queues=queues, log_s=log_s, duration_s=duration_s,
                                           seed=seed, execute=partial(run_testbed, congestion_control=congestion_control),
                                           log=log)
    cc = pl.lit(congestion_control).alias("congestion_control")
    return objects.with_columns(cc), buckets.with_columns(cc), runs.with_columns(cc)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1, scale: str = "full") -> pl.DataFrame:
    """DropTail and TAQ+AC over the 1200 s log for 1800 s each (300 s log, 450 s runs with
    ``quick``; 50 clients with ``scale="stress"``); writes taq-testbed-fig12.csv (buckets),
    taq-testbed-fig12-runs.csv, taq-testbed-fig12-tables.md and a PNG (with ``-stress`` in
    their names for the stress scale). Needs root and the testbed binaries."""
    if scale not in SCALES:
        raise ValueError(f"scale: {scale!r} is not a scale; expected {', '.join(SCALES)}")
    scale = "quick" if quick else scale
    log_s, duration_s = SCALES[scale]
    clients = CLIENTS.get(scale, "paper")
    objects, buckets, runs = run(log_s=log_s, duration_s=duration_s, seed=seed, clients=clients)
    name = "taq-testbed-fig12" + (f"-{scale}" if scale in CLIENTS else "")
    write_csv(buckets, out / f"{name}.csv")
    write_csv(runs, out / f"{name}-runs.csv")
    (out / f"{name}-tables.md").write_text(taq_fig12.markdown(buckets, runs))
    clients_text = f"{taq_fig12.SCALES[clients]} clients"
    taq_fig12.plot(objects, out / f"{name}.png",
                   title=f"TAQ Figure 12 on the testbed: replayed log, {clients_text}, 1 Mbit/s, Linux reno")
    return runs.select("scale", "queue", "mean_s", "loss_rate", *PAPER)
