#!/usr/bin/env python3
"""Per-flow fairness in ns-3 on the DropTail dumbbell of ``fig2_dumbbell.py``: runs it with
the same arguments, stopping every ``--slice-seconds`` to read each PacketSink's byte
count, and prints a second JSON line with Jain's index of the flows' goodput per slice
(the first slice skipped as start-up): mean, lowest, and every slice. Used beside
``slice_fairness_smallpipe.py`` for the DropTail baseline of class-isolation.md (Figure 7
diagnosis). The set-up is fig2_dumbbell's, untouched; only ``Simulator::Run`` is sliced.

Usage:  python3 slice_fairness.py [--slice-seconds 20] [--warmup-seconds S] [fig2_dumbbell.py arguments]
"""

import argparse
import itertools
import json
import sys

import fig2_dumbbell


def jain(xs):
    total = sum(xs)
    return total * total / (len(xs) * sum(x * x for x in xs)) if total > 0 else float("nan")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slice-seconds", type=float, default=20.0, help="slice length in s [20]")
    parser.add_argument("--warmup-seconds", type=float, default=None,
                        help="slices that start before this are left out of jain_mean and jain_min "
                             "[one slice: the first is start-up]")
    args, rest = parser.parse_known_args(argv)
    end_s = fig2_dumbbell.parse_args(rest).sim_seconds
    ns = fig2_dumbbell.import_ns3()
    whole_run = ns.Simulator.Run
    totals = []

    def sink_totals():
        rx = []
        for n in range(ns.NodeList.GetNNodes()):
            node = ns.NodeList.GetNode(n)
            for a in range(node.GetNApplications()):
                sink = ns.DynamicCast[ns.PacketSink](node.GetApplication(a))
                if sink:
                    rx.append(int(sink.GetTotalRx()))
        return rx

    def sliced_run():
        elapsed = 0.0
        while elapsed < end_s - 1e-9:
            ns.Simulator.Stop(ns.Seconds(args.slice_seconds))
            whole_run()
            elapsed += args.slice_seconds
            totals.append(sink_totals())

    ns.Simulator.Run = staticmethod(sliced_run)
    status = fig2_dumbbell.main(rest)
    indices = [jain([b - a for a, b in zip(prev, now, strict=True)]) for prev, now in itertools.pairwise(totals)]
    # indices[k] is the slice starting at (k + 1) slices.
    warmup_s = args.slice_seconds if args.warmup_seconds is None else args.warmup_seconds
    counted = [j for k, j in enumerate(indices) if (k + 1) * args.slice_seconds >= warmup_s - 1e-9]
    print(json.dumps({"slice_seconds": args.slice_seconds, "warmup_seconds": warmup_s,
                      "jain_mean": round(sum(counted) / len(counted), 3), "jain_min": round(min(counted), 3),
                      "slice_jain": [round(j, 3) for j in indices]}), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
