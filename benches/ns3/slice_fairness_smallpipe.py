#!/usr/bin/env python3
"""smallpipe's side of ``slice_fairness.py``: the same dumbbell — five long-lived NewReno
flows on one path of Matta & Guo's Figure 7 (5 Mbit/s, 250-packet DropTail, 220 ms RTT,
576-byte packets, IW 1, 1 s min RTO, no delayed ACKs, a 64 KiB window) — with the senders'
random delay on (the default) and off; Jain's index of the flows' goodput per 20 s slice,
the first skipped, and the link's utilization and goodput fraction, one JSON line each.

Usage:  python3 slice_fairness_smallpipe.py [SECONDS]
"""

import json
import sys

import numpy as np
import polars as pl
from smallpipe import metrics
from smallpipe.result import simulate


def main(duration_s: float) -> None:
    for overhead in ({}, {"overhead_max_ms": 0.0}):
        tcp = {"packet_size_bytes": 576, "recovery": "newreno", "initial_window_pkts": 1, "delayed_ack": False,
               "timestamps": False, "rwnd_bytes": 65535, "min_rto_ms": 1000.0, **overhead}
        result = simulate({
            "seed": 1, "duration_s": duration_s, "slice_s": 20.0, "tcp": tcp,
            "link": {"rate_bps": 5e6, "delay_ms": 100.0, "receiver_delay_ms": 6.0, "access_rate_bps": 15e6,
                     "queue": {"kind": "droptail", "limit_pkts": 250}},
            "flows": [{"app": "bulk", "count": 5, "rtt_ms": 220.0, "start_s": [0.0, 1.0]}],
        })
        per_slice = result.slices.group_by("slice", "flow_id").agg(pl.col("bytes").sum())
        indices = [metrics.jain(g["bytes"].to_numpy()) for (s,), g in per_slice.group_by("slice")
                   if 1 <= s < duration_s / 20.0]
        link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
        goodput = 8 * int(result.flows["bytes_delivered"].sum()) / (5e6 * duration_s)
        print(json.dumps({"jitter": "off" if overhead else "on", "jain_mean": round(float(np.mean(indices)), 3),
                          "jain_min": round(float(np.min(indices)), 3),
                          "utilization": round(link["utilization"], 3), "goodput_fraction": round(goodput, 3)}))


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 300.0)
