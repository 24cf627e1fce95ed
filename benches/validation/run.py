#!/usr/bin/env python3
"""Cross-validation of smallpipe against ns-3 3.44: runs every scenario of ``specs.py`` in
both simulators, writes the raw results and a comparison table, and re-renders the tables
of docs/validation.md.

    python3 benches/validation/run.py --out docs/validation            # everything (~15 min)
    python3 benches/validation/run.py --out /tmp/v --quick             # 1 seed, short runs
    python3 benches/validation/run.py --out /tmp/v --only scripted     # one section
    sudo python3 benches/validation/run.py --linux --out docs/validation   # the Linux column

Needs smallpipe (``pip install -e .``) and the ns-3 bindings (``pip install 'smallpipe[bench]'``)
in the same interpreter. ns-3 runs in one child process (its bindings take ~10-30 s to load),
at the same time as the smallpipe runs.

``--linux`` runs no ns-3: it runs the many-flow (N = 10, 50, 100), Bernoulli and web-pool
specs in smallpipe and on real Linux TCP (``linux_side.py``: root, network namespaces, the
testbed binaries; one run at a time, in real time), compares Linux with smallpipe on the same
specs, writes ``linux_summary.csv``, ``linux_runs.jsonl`` and ``linux_meta.json`` and
re-renders the page, which shows them as a Linux column (the ns-3 results are not touched).

``--linux --congestion reno cubic bbr`` runs the Linux matrix instead (``matrix.py``): the
same specs and TAQ Figure 11's points (``--only fig11``) on Linux with each congestion
control, against smallpipe's Linux stack with the same one; it writes
``linux_matrix_<cc>_*`` files and the matrix's table. Without ``--congestion``, ``--linux``
is the Linux column as before (Linux reno against smallpipe's RFC stack).
"""

import argparse
import csv
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import render
import specs

SECTIONS = ("scripted", "bernoulli", "many", "fct")
LINUX_SECTIONS = ("many", "bernoulli", "web")
LINUX_MANY_FLOWS = (10, 50, 100)
WEB_TAIL_S = 60.0
"""Web objects opened in the last WEB_TAIL_S of a run are left out: the end cuts them, not slowness."""


def build(args):
    seeds = range(1, args.seeds + 1)
    out = []
    if "scripted" in args.only:
        out += [specs.scripted(sack=True), specs.scripted(sack=False)]
    if "bernoulli" in args.only:
        out += [specs.bernoulli(p, s, args.bernoulli_s) for p in specs.LOSS_RATES for s in seeds]
    if "many" in args.only:
        out += [specs.many(n, s, duration_s=args.many_s) for n in specs.MANY_FLOWS for s in seeds]
    if "fct" in args.only:
        out += [specs.fct(s, args.fct_reps) for s in seeds]
    return out


def build_linux(args):
    seeds = range(1, args.seeds + 1)
    out = []
    if "many" in args.only:
        out += [specs.many(n, s, duration_s=args.many_s) for n in LINUX_MANY_FLOWS for s in seeds]
    if "bernoulli" in args.only:
        out += [specs.bernoulli(p, s, args.bernoulli_s) for p in specs.LOSS_RATES for s in seeds]
    if "web" in args.only:
        out += [specs.web(s, duration_s=args.web_s) for s in seeds]
    return out


def run_linux(spec_list):
    """smallpipe and Linux on each spec, one after the other; returns {name: (smallpipe, linux)}."""
    import linux_side
    import sp_side

    out = {}
    for spec in spec_list:
        t0 = time.perf_counter()
        out[spec["name"]] = (sp_side.run(spec), linux_side.run(spec))
        print(f"{spec['name']}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def run_all(spec_list, sp_overrides=None):
    """ns-3 in a child process while smallpipe runs here; returns {name: (ns3, smallpipe)}.
    `sp_overrides`: scenario overrides for the smallpipe side (--sp-set)."""
    import sp_side

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec_list, f)
    child = subprocess.Popen([sys.executable, str(HERE / "ns3_side.py"), f.name], stdout=subprocess.PIPE, text=True)
    t0 = time.perf_counter()
    ours = {s["name"]: sp_side.run(s, sp_overrides) for s in spec_list}
    sp_wall = time.perf_counter() - t0
    theirs = {}
    for line in child.stdout:
        r = json.loads(line)
        theirs[r["name"]] = r
    if child.wait() != 0:
        sys.exit(f"ns-3 side failed (exit {child.returncode})")
    ns3_wall = time.perf_counter() - t0
    return {n: (theirs[n], ours[n]) for n in ours}, sp_wall, ns3_wall


def rel(a, b):
    if not a:
        return 0.0 if b == a else float("inf")
    return (b - a) / a


def row(section, metric, ns3, sp, tol, ok, unit=""):
    return {"section": section, "metric": metric, "ns3": ns3, "smallpipe": sp, "tolerance": tol,
            "verdict": "pass" if ok else "FAIL", "unit": unit}


def scripted_rows(ns3, sp, spec):
    """cwnd/ssthresh after each loss event, and every segment's send time in 30 RTTs."""
    mss = sp["mss"]
    section = spec["name"]
    rows = []
    horizon = spec["flows"][0]["start_s"] + 30 * spec["flows"][0]["rtt_ms"] / 1000

    def events(tr):
        # A loss event sets ssthresh (fast retransmit, RTO) or, for a repeated RTO that keeps
        # ssthresh, collapses cwnd to one segment; NewReno's deflations are not events.
        # Compare the last value of each instant with the previous instant's.
        cw, ss = dict(tr["cwnd"]), dict(tr["ssthresh"])
        out, c, s = [], None, None
        for t in sorted(x for x in set(cw) | set(ss) if x <= horizon):
            c1, s1 = cw.get(t, c), ss.get(t, s)
            if c1 is not None and s1 is not None and c is not None and s is not None and (
                    s1 != s or (c1 <= mss < c)):
                out.append((t, c1 / mss, s1 / mss))
            c, s = c1, s1
        return out

    def when(event):
        return "none" if event[0] is None else f"t={event[0]:.3f} s"

    a, b = events(ns3["trace"]), events(sp["trace"])
    for k in range(max(len(a), len(b))):
        ea = a[k] if k < len(a) else (None, None, None)
        eb = b[k] if k < len(b) else (None, None, None)
        label = f"event {k + 1} (ns-3 {when(ea)}, ours {when(eb)})"
        for i, name in ((2, "ssthresh"), (1, "cwnd")):
            ok = ea[i] is not None and eb[i] is not None and abs(ea[i] - eb[i]) <= 1.0
            rows.append(row(section, f"{label}: {name}", ea[i], eb[i], "±1 segment", ok, "segments"))
    tx_a = [x for x in ns3["trace"]["tx"] if x[2] > 0 and x[0] <= horizon]
    tx_b = [x for x in sp["trace"]["tx"] if x[2] > 0 and x[0] <= horizon]
    rows.append(row(section, "data segments sent in 30 RTTs", len(tx_a), len(tx_b), "±1",
                    abs(len(tx_a) - len(tx_b)) <= 1, "segments"))
    one_seg_s = spec["tcp"]["packet_bytes"] * 8 / spec["rate_bps"]
    same = sum(1 for x, y in zip(tx_a, tx_b) if x[1] == y[1] and abs(x[0] - y[0]) <= one_seg_s)
    n = min(len(tx_a), len(tx_b))
    first_event = min(a[0][0], b[0][0]) if a and b else horizon
    before = sum(1 for x in tx_a if x[0] < first_event)
    same_before = sum(1 for x, y in zip(tx_a, tx_b) if x[0] < first_event and x[1] == y[1]
                      and abs(x[0] - y[0]) <= one_seg_s)
    rows.append(row(section, "segments before the first loss event: same seq, send time within one segment time",
                    before, same_before, "all", before == same_before, "segments"))
    rows.append(row(section, f"i-th segment: same seq, send time within one segment time ({one_seg_s * 1e3:g} ms)",
                    n, same, "all", same == n, "segments"))
    return rows


def goodput_bps(r, spec, flows=None):
    idx = range(len(spec["flows"])) if flows is None else flows
    return sum(r["rx_bytes"][i] for i in idx) * 8 / spec["duration_s"]


def mean_over(pairs, f):
    return statistics.mean(f(a, s) for a, _, s in pairs), statistics.mean(f(b, s) for _, b, s in pairs)


def compare(results, spec_list):
    by = {s["name"]: s for s in spec_list}
    rows = []
    for name in ("scripted", "scripted-newreno"):
        if name in by:
            rows += scripted_rows(*results[name], by[name])
    for p in specs.LOSS_RATES:
        pairs = [(*results[n], by[n]) for n in by if n.startswith(f"bernoulli p={p} ")]
        if pairs:
            x, y = mean_over(pairs, goodput_bps)
            rows.append(row("bernoulli", f"p = {p}: goodput", x / 1e3, y / 1e3, "±10%", abs(rel(x, y)) <= 0.10, "kbit/s"))
    for n in specs.MANY_FLOWS:
        pairs = [(*results[k], by[k]) for k in by if k.startswith(f"many N={n} ")]
        if not pairs:
            continue
        x, y = mean_over(pairs, lambda r, s: r["loss_rate"])
        rows.append(row("many", f"N = {n}: bottleneck loss rate", x, y, "±15%", abs(rel(x, y)) <= 0.15))
        x, y = mean_over(pairs, lambda r, s: r["mean_queue_pkts"])
        rows.append(row("many", f"N = {n}: mean queue", x, y, "±3 packets", abs(x - y) <= 3, "packets"))
        x, y = mean_over(pairs, lambda r, s: statistics.mean(r["timeouts"]))
        rows.append(row("many", f"N = {n}: timeouts per flow", x, y, "±25%", abs(rel(x, y)) <= 0.25))
        x, y = mean_over(pairs, goodput_bps)
        rows.append(row("many", f"N = {n}: goodput", x / 1e3, y / 1e3, "±3%", abs(rel(x, y)) <= 0.03, "kbit/s"))
    fct_pairs = [(*results[k], by[k]) for k in by if k.startswith("fct ")]
    for size in specs.FCT_SIZES:
        samples = ([], [])
        for a, b, s in fct_pairs:
            for i, f in enumerate(s["flows"]):
                if f["size_pkts"] == size:
                    for side, r in enumerate((a, b)):
                        if r["fct_s"][i] is not None:
                            samples[side].append(r["fct_s"][i])
        if fct_pairs and all(samples):
            x, y = statistics.median(samples[0]), statistics.median(samples[1])
            rows.append(row("fct", f"{size}-packet transfer: median FCT (n = {len(samples[0])} / {len(samples[1])})",
                            x, y, "±15%", abs(rel(x, y)) <= 0.15, "s"))
    return rows


def counted_objects(objects, spec, lo, hi):
    """(size, download s) of the objects of ``lo <= size < hi`` bytes opened after the
    warm-up and before the last WEB_TAIL_S; an unfinished one takes infinitely long."""
    first, last = spec["warmup_s"], spec["warmup_s"] + spec["duration_s"] - WEB_TAIL_S
    return [(size, np.inf if t is None else t) for size, start, t, _ in objects
            if lo <= size < hi and first <= start <= last]


def lower_quantile(values, q):
    """The lower empirical quantile: an actual sample (infinite if it is an unfinished object)."""
    return float(np.quantile(np.asarray(values), q, method="inverted_cdf"))


def web_rows(pairs):
    """Median and p90 download time per size bucket (the TAQ Figure 12 buckets) of the objects
    opened after the warm-up; an unfinished object is slower than any finished one."""
    from smallpipe.experiments.taq_fig12 import BUCKET_EDGES_BYTES

    rows = []
    edges = list(BUCKET_EDGES_BYTES) + [float("inf")]
    for lo, hi in itertools.pairwise(edges):
        samples = ([], [])
        for a, b, s in pairs:
            for side, r in enumerate((a, b)):
                samples[side].extend(t for _, t in counted_objects(r["objects"], s, lo, hi))
        if not all(samples):
            continue
        label = f"{lo / 1e3:g}–{hi / 1e3:g} KB" if hi != float("inf") else f"≥ {lo / 1e3:g} KB"
        for q, name in ((0.5, "median"), (0.9, "p90")):
            x, y = (lower_quantile(v, q) for v in samples)
            rows.append(row("web", f"{label}: {name} download time (n = {len(samples[0])} / {len(samples[1])})",
                            x, y, "±20%", np.isfinite(x) and abs(rel(x, y)) <= 0.20, "s"))
    return rows


def compare_linux(results, spec_list):
    """Linux against smallpipe on the same specs, with the ns-3 comparison's rules and
    tolerances (loss ±15%, mean queue ±3 packets, ...) and the web buckets at ±20%."""
    by = {s["name"]: s for s in spec_list}
    rows = compare(results, spec_list)
    rows += web_rows([(*results[n], by[n]) for n in by if by[n].get("web")])
    # compare() names its columns for ns-3 against smallpipe: here they are smallpipe and Linux.
    return [{"section": r["section"], "metric": r["metric"], "smallpipe": r["ns3"], "linux": r["smallpipe"],
             "tolerance": r["tolerance"], "verdict": r["verdict"], "unit": r["unit"]} for r in rows]


def main_linux(args):
    spec_list = build_linux(args)
    t0 = time.perf_counter()
    results = run_linux(spec_list)
    wall = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "linux_runs.jsonl", "w") as f:
        for a, b in results.values():
            f.writelines(json.dumps(r) + "\n" for r in (a, b))
    rows = stamped(compare_linux(results, spec_list))
    with open(out / "linux_summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    meta = {"runs": len(spec_list), "wall_s": round(wall, 1), "args": dict(vars(args)), **provenance()}
    (out / "linux_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    render.render(out, Path(args.doc))
    failed = [r for r in rows if r["verdict"] != "pass"]
    print(f"Linux: {len(rows) - len(failed)} passed, {len(failed)} failed")
    return 0


def provenance() -> dict:
    """The columns every reproduction CSV ends with: the code that made the rows."""
    from smallpipe import __version__
    from smallpipe.provenance import source_commit

    return {"smallpipe_version": __version__, "smallpipe_commit": source_commit()}


def stamped(rows: list[dict]) -> list[dict]:
    return [row | provenance() for row in rows]


def main_matrix(args):
    import matrix

    spec_list = matrix.build(args.only, args.seeds, args.many_s, args.bernoulli_s, args.web_s, args.fig11_s)
    testbed = ("the recorded Linux runs reused" if args.reuse_linux
               else f"{matrix.wall_estimate_s(spec_list) / 60:.0f} min of testbed time each")
    print(f"Linux matrix: {len(spec_list)} runs per congestion control, {testbed}", file=sys.stderr, flush=True)
    rows = matrix.run_matrix(Path(args.out), args.congestion, spec_list, provenance(), dict(vars(args)),
                             reuse_linux=args.reuse_linux, resume=args.resume)
    render.render_matrix(Path(args.out), Path(args.doc))
    for cc, cc_rows in rows.items():
        checked = [r for r in cc_rows if r["verdict"] != "report"]
        failed = [r for r in checked if r["verdict"] == "FAIL"]
        print(f"Linux matrix, {cc}: {len(checked) - len(failed)} of {len(checked)} rows within tolerance")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="docs/validation", help="directory for the CSVs [docs/validation]")
    ap.add_argument("--doc", default="docs/validation.md", help="markdown file whose tables are rewritten")
    ap.add_argument("--only", nargs="+", choices=sorted(set(SECTIONS) | set(LINUX_SECTIONS) | {"fig11"}),
                    help=f"sections [ns-3: {' '.join(SECTIONS)}; --linux: {' '.join(LINUX_SECTIONS)}; "
                         "--linux --congestion: the same and fig11]")
    ap.add_argument("--seeds", type=int, help="seeds per row [5; the Linux matrix: 3]")
    ap.add_argument("--many-s", type=float, default=200.0, help="measured seconds after the 10 s warm-up")
    ap.add_argument("--bernoulli-s", type=float, default=1000.0)
    ap.add_argument("--fct-reps", type=int, default=10, help="transfers of each size per seed")
    ap.add_argument("--web-s", type=float, default=300.0, help="--linux: measured seconds of the web-pool runs")
    ap.add_argument("--ns3-patch", choices=("flightsize", "deflate"),
                    help="diagnosis (docs/validation.md): ns-3's ssthresh from FlightSize, not BytesInFlight; "
                         "'deflate' also no window growth on the ACK that ends recovery")
    ap.add_argument("--sp-set", action="append", default=[], metavar="KEY=VALUE",
                    help="an override of the smallpipe side, e.g. tcp.ssthresh_from=bytes_in_flight (repeatable)")
    ap.add_argument("--quick", action="store_true", help="1 seed, 60 s runs, 4 transfers per size")
    ap.add_argument("--linux", action="store_true", help="Linux against smallpipe (no ns-3): root, the testbed")
    ap.add_argument("--congestion", nargs="+", choices=("reno", "cubic", "bbr"),
                    help="--linux: the Linux matrix with these congestion controls, against smallpipe's Linux stack "
                         "[unset: the Linux column, Linux reno against smallpipe's RFC stack]")
    ap.add_argument("--fig11-s", type=float, default=200.0, help="the Linux matrix: seconds of each Figure 11 run")
    ap.add_argument("--reuse-linux", action="store_true",
                    help="the Linux matrix: run only the smallpipe side, against the Linux runs recorded for these "
                         "sections (no root, no testbed); for a change of smallpipe or of its harness")
    ap.add_argument("--resume", action="store_true",
                    help="the Linux matrix: keep the pairs a stopped run of the same sections, seeds and lengths at "
                         "the same commit left in linux_matrix_<cc>_runs.partial.jsonl, and run only the rest")
    args = ap.parse_args(argv)
    if args.resume and not args.congestion:
        ap.error("--resume: only the Linux matrix (--linux --congestion CC ...) keeps a partial file to resume")
    if args.reuse_linux and not args.congestion:
        ap.error("--reuse-linux: only the Linux matrix (--linux --congestion CC ...) keeps Linux runs to reuse")
    if args.congestion and not args.linux:
        ap.error("--congestion: the Linux matrix needs --linux")
    if args.linux and args.congestion:
        matrix_sections = (*LINUX_SECTIONS, "fig11")
        bad = [s for s in args.only or () if s not in matrix_sections]
        if bad:
            ap.error(f"--only: {' '.join(bad)} is not a Linux matrix section ({' '.join(matrix_sections)})")
        args.only = args.only or list(matrix_sections)
        args.seeds = args.seeds or 3
        if args.quick:
            args.seeds, args.many_s, args.bernoulli_s, args.web_s, args.fig11_s = 1, 60.0, 120.0, 120.0, 60.0
        return main_matrix(args)
    if "fig11" in (args.only or ()):
        ap.error("--only fig11: only the Linux matrix (--linux --congestion CC ...) runs Figure 11's points")
    args.seeds = args.seeds or 5
    if args.linux:
        args.only = args.only or list(LINUX_SECTIONS)
        if args.quick:
            args.seeds, args.many_s, args.bernoulli_s, args.web_s = 1, 60.0, 120.0, 120.0
        return main_linux(args)
    args.only = args.only or list(SECTIONS)
    if args.quick:
        args.seeds, args.many_s, args.bernoulli_s, args.fct_reps = 1, 60.0, 300.0, 4
    spec_list = build(args)
    for spec in spec_list:
        spec["tcp"]["ns3_patch"] = args.ns3_patch
    sp_overrides = dict(kv.split("=", 1) for kv in args.sp_set)
    results, sp_wall, ns3_wall = run_all(spec_list, sp_overrides)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "runs.jsonl", "w") as f:
        for a, b in results.values():
            f.writelines(json.dumps({k: v for k, v in r.items() if k != "trace"}) + "\n" for r in (a, b))
    for name in ("scripted", "scripted-newreno"):
        for r in results.get(name, ()):
            with open(out / f"{name}_{r['simulator']}.csv", "w", newline="") as f:
                w = csv.writer(f)
                stamp = list(provenance().values())
                w.writerow(["time_s", "kind", "seq", "payload_bytes", "cwnd_bytes", "ssthresh_bytes", *provenance()])
                for t, s, n, _ in r["trace"]["tx"]:
                    w.writerow([f"{t:.9f}", "send", s, n, "", "", *stamp])
                for t, v in r["trace"]["cwnd"]:
                    w.writerow([f"{t:.9f}", "cwnd", "", "", v, "", *stamp])
                for t, v in r["trace"]["ssthresh"]:
                    w.writerow([f"{t:.9f}", "ssthresh", "", "", "", v, *stamp])
    rows = stamped(compare(results, spec_list))
    with open(out / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    meta = {"runs": len(spec_list), "smallpipe_wall_s": round(sp_wall, 1), "ns3_process_wall_s": round(ns3_wall, 1),
            "args": {k: v for k, v in vars(args).items()}, **provenance()}
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    render.render(out, Path(args.doc))
    failed = [r for r in rows if r["verdict"] != "pass"]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
