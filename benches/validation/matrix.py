"""The Linux matrix (issue 38 item 3): the validation scenarios on Linux 6.x's reno, cubic and
bbr through the testbed, each against smallpipe's Linux stack with the same congestion control.

Both sides run one scenario: the spec's (``specs.py``, as ``linux_side.scenario`` builds it)
with ``tcp.stack = "linux"`` and ``tcp.congestion`` set. Switching the stack gives every knob
a stack decides Linux's value (IW 10, minimum RTO 200 ms, RACK, PRR, tail-loss probes, F-RTO,
undo: docs/tcp.md, "Named stacks"), and the testbed sets the matching sysctls. One knob is
set against the stack: ``tcp.pacing = "none"`` for reno and cubic, because the testbed's Reno
and CUBIC senders do not pace (no fq qdisc; docs/testbed.md); BBR paces on both sides. The
smallpipe side also runs without the random send delay (``smallpipe_overrides``).

Sections: ``many`` (N = 10, 50, 100 on 1 Mbit/s), ``bernoulli`` (one flow, scripted
Bernoulli loss), ``web`` (the web pool) and ``fig11`` (two of TAQ Figure 11's points at
1 Mbit/s under TAQ, per-host FQ, FQ-CoDel and DropTail). Each congestion control writes its
own ``linux_matrix_<cc>_runs.jsonl``, ``linux_matrix_<cc>_summary.csv`` (a ``congestion``
column) and ``linux_matrix_<cc>_meta.json`` (a record per section), so a later run of another
one, or of another section, adds to the matrix; the Linux column's files (``linux_*.csv``) are
never written.
"""

import csv
import hashlib
import itertools
import json
import math
import statistics
import sys
import time

import specs

SECTIONS = ("many", "bernoulli", "web", "fig11")
CONGESTION_CONTROLS = ("reno", "cubic", "bbr")
MANY_FLOWS = (10, 50, 100)

# Issue 38 item 3's tolerances: (kind, bound), relative to smallpipe's value or absolute.
TOLERANCES = {
    "loss_rate": ("relative", 0.20),
    "timeouts": ("relative", 0.25),
    "jain": ("absolute", 0.05),
    "fct_median": ("relative", 0.20),
    "queue_pkts": ("absolute", 3.0),
}
NO_TOLERANCE = "none (reported)"
"""Tail-loss probes, goodput and FCT p90: the issue asks for them and sets no tolerance."""


def overrides(congestion):
    """The scenario overrides both sides run under: smallpipe's Linux stack with ``congestion``."""
    if congestion not in CONGESTION_CONTROLS:
        raise ValueError(f"congestion: {congestion!r} is not one of {', '.join(CONGESTION_CONTROLS)}")
    out = {"tcp.stack": "linux", "tcp.congestion": congestion}
    if congestion != "bbr":
        # The testbed's Reno and CUBIC senders do not pace (no fq qdisc); BBR always does.
        out["tcp.pacing"] = "none"
    return out


def smallpipe_overrides(congestion):
    """The smallpipe side's overrides: `overrides` and no random send delay. The stack switch
    sets the Linux stack's default, a delay uniform up to one bottleneck packet time (ns-2's
    `overhead_`, against phase effects); the testbed refuses the knob, its senders' own
    jitter being what it is. A capture showed that jitter is far below a packet time there:
    the box's departures and the timer-driven sends stay on fixed phases of the kernel's
    4 ms tick (docs/validation.md, "A harness bug, ours: the random send delay"), so the
    simulated senders send at once, as `sp_side` has them do against ns-3."""
    return overrides(congestion) | {"tcp.overhead_max_ms": 0.0}


def build(only, seeds, many_s, bernoulli_s, web_s, fig11_s):
    """The specs of the sections in ``only``, ``seeds`` seeds each."""
    seed_range = range(1, seeds + 1)
    out = []
    if "many" in only:
        out += [specs.many(n, s, duration_s=many_s) for n in MANY_FLOWS for s in seed_range]
    if "bernoulli" in only:
        out += [specs.bernoulli(p, s, bernoulli_s) for p in specs.LOSS_RATES for s in seed_range]
    if "web" in only:
        out += [specs.web(s, duration_s=web_s) for s in seed_range]
    if "fig11" in only:
        out += [specs.fig11(d, f, s, fig11_s) for d in specs.FIG11_DISCIPLINES for f in specs.FIG11_FAIR_SHARES_BPS
                for s in seed_range]
    return out


def wall_estimate_s(spec_list):
    """Testbed seconds: each run lasts its warm-up and measured time (the smallpipe side and
    the namespaces' set-up come on top)."""
    return sum(s["warmup_s"] + s["duration_s"] for s in spec_list)


def classify(kind, smallpipe, linux):
    """``pass`` or ``FAIL`` against ``TOLERANCES[kind]``; ``report`` for a metric without one.
    A missing value (no slice, no object) fails: the row cannot be checked."""
    if kind not in TOLERANCES:
        return "report"
    if smallpipe is None or linux is None or not (math.isfinite(smallpipe) and math.isfinite(linux)):
        return "FAIL"
    how, bound = TOLERANCES[kind]
    if how == "absolute":
        return "pass" if abs(linux - smallpipe) <= bound + 1e-12 else "FAIL"
    if smallpipe == 0:
        return "pass" if linux == 0 else "FAIL"
    return "pass" if abs(linux - smallpipe) / abs(smallpipe) <= bound + 1e-12 else "FAIL"


def tolerance_text(kind):
    if kind not in TOLERANCES:
        return NO_TOLERANCE
    how, bound = TOLERANCES[kind]
    if how == "relative":
        return f"±{bound * 100:g}%"
    return f"±{bound:g} packets" if kind == "queue_pkts" else f"±{bound:g}"


def row(congestion, section, metric, kind, smallpipe, linux, unit=""):
    return {"congestion": congestion, "section": section, "metric": metric, "smallpipe": smallpipe, "linux": linux,
            "tolerance": tolerance_text(kind), "verdict": classify(kind, smallpipe, linux), "unit": unit}


def _mean(values):
    values = list(values)
    return None if not values or any(v is None for v in values) else statistics.mean(values)


def _per_seed(pairs, f):
    """Each side's mean over the seeds of ``f(result, spec)``."""
    return _mean(f(a, s) for a, _, s in pairs), _mean(f(b, s) for _, b, s in pairs)


def _goodput_kbps(r, s):
    return sum(r["rx_bytes"]) * 8 / s["duration_s"] / 1e3


def _timeouts_per_flow(r, s):
    return statistics.mean(r["timeouts"]) if r["timeouts"] else 0.0


def _probes_per_flow(r, s):
    return r["loss_probes"] / r["connections"] if r["connections"] else 0.0


def _link_rows(cc, section, label, pairs, per="flow"):
    """Loss rate, mean queue, timeouts and tail-loss probes per ``per``."""
    return [
        row(cc, section, f"{label}: bottleneck loss rate", "loss_rate", *_per_seed(pairs, lambda r, s: r["loss_rate"])),
        row(cc, section, f"{label}: mean queue", "queue_pkts", *_per_seed(pairs, lambda r, s: r["mean_queue_pkts"]),
            "packets"),
        row(cc, section, f"{label}: timeouts per {per}", "timeouts", *_per_seed(pairs, _timeouts_per_flow)),
        row(cc, section, f"{label}: tail-loss probes per {per} (whole run)", "tlp", *_per_seed(pairs, _probes_per_flow)),
    ]


def compare(cc, results, spec_list):
    """One congestion control's rows: smallpipe's Linux stack (mean over seeds) against Linux."""
    import run  # the Linux column's web helpers

    by = {s["name"]: s for s in spec_list}

    def pairs(prefix):
        return [(*results[n], by[n]) for n in by if n.startswith(prefix) and n in results]

    rows = []
    for n in MANY_FLOWS:
        p = pairs(f"many N={n} ")
        if p:
            rows += _link_rows(cc, "many", f"N = {n}", p)
            rows.append(row(cc, "many", f"N = {n}: goodput", "goodput", *_per_seed(p, _goodput_kbps), "kbit/s"))
            rows.append(row(cc, "many", f"N = {n}: 20 s Jain index", "jain", *_per_seed(p, lambda r, s: r["jain_20s"])))
    for loss in specs.LOSS_RATES:
        p = pairs(f"bernoulli p={loss} ")
        if p:
            rows.append(row(cc, "bernoulli", f"p = {loss}: loss rate", "loss_rate",
                            *_per_seed(p, lambda r, s: r["loss_rate"])))
            rows.append(row(cc, "bernoulli", f"p = {loss}: timeouts", "timeouts", *_per_seed(p, _timeouts_per_flow)))
            rows.append(row(cc, "bernoulli", f"p = {loss}: tail-loss probes (whole run)", "tlp",
                            *_per_seed(p, _probes_per_flow)))
            rows.append(row(cc, "bernoulli", f"p = {loss}: goodput", "goodput", *_per_seed(p, _goodput_kbps), "kbit/s"))
    p = pairs("web ")
    if p:
        rows += _link_rows(cc, "web", "web pool", p, per="connection")
        rows += web_rows(cc, p, run)
    for d, share in itertools.product(specs.FIG11_DISCIPLINES, specs.FIG11_FAIR_SHARES_BPS):
        p = pairs(f"fig11 {d} share={share / 1e3:g}k ")
        if p:
            label = f"{d}, {share / 1e3:g} kbit/s per flow"
            rows.append(row(cc, "fig11", f"{label}: 20 s Jain index", "jain", *_per_seed(p, lambda r, s: r["jain_20s"])))
            rows += _link_rows(cc, "fig11", label, p)
            rows.append(row(cc, "fig11", f"{label}: goodput", "goodput", *_per_seed(p, _goodput_kbps), "kbit/s"))
    return rows


def web_rows(cc, pairs, run):
    """Median (±20%) and p90 (reported) download time per size bucket, the Linux column's way
    (run.counted_objects, run.lower_quantile: an unfinished object is slower than any)."""
    from smallpipe.experiments.taq_fig12 import BUCKET_EDGES_BYTES

    rows = []
    edges = [*BUCKET_EDGES_BYTES, float("inf")]
    for lo, hi in itertools.pairwise(edges):
        samples = ([], [])
        for a, b, s in pairs:
            for side, r in enumerate((a, b)):
                samples[side].extend(t for _, t in run.counted_objects(r["objects"], s, lo, hi))
        if not all(samples):
            continue
        label = f"{lo / 1e3:g}–{hi / 1e3:g} KB" if hi != float("inf") else f"≥ {lo / 1e3:g} KB"
        n = f"(n = {len(samples[0])} / {len(samples[1])})"
        median = [run.lower_quantile(v, 0.5) for v in samples]
        p90 = [run.lower_quantile(v, 0.9) for v in samples]
        rows.append(row(cc, "web", f"{label}: median download time {n}", "fct_median", *median, "s"))
        rows.append(row(cc, "web", f"{label}: p90 download time {n}", "fct_p90", *p90, "s"))
    return rows


def section_of(name):
    """A spec's section: the first word of its name (``many N=10 seed=1`` is ``many``)."""
    return name.split()[0]


def _read_csv(path):
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _sections_meta(meta):
    """The per-section records of a meta file; one written before sections were merged
    (one record for the whole run) gives its record to each section it ran."""
    if not meta:
        return {}
    if "sections" in meta:
        return meta["sections"]
    whole = {k: v for k, v in meta.items() if k not in ("congestion", "overrides")}
    return {section: whole for section in meta.get("args", {}).get("only", ())}


SECTION_LENGTH_ARG = {"many": "many_s", "bernoulli": "bernoulli_s", "web": "web_s", "fig11": "fig11_s"}
"""The command-line argument that sets each section's run length."""


def recorded_linux_runs(out, cc, spec_list, args=None):
    """For ``reuse_linux``: the Linux run recorded for each spec, by name, from
    ``linux_matrix_<cc>_runs.jsonl``. Refuses, naming what is missing or differs, a spec with
    no recorded Linux run, or a section recorded with other seeds or another run length."""
    runs_path = out / f"linux_matrix_{cc}_runs.jsonl"
    meta_path = out / f"linux_matrix_{cc}_meta.json"
    lines = runs_path.read_text().splitlines() if runs_path.is_file() else []
    linux = {r["name"]: r for r in map(json.loads, lines) if r["simulator"] == "linux"}
    missing = [s["name"] for s in spec_list if s["name"] not in linux]
    if missing:
        raise ValueError(f"reuse_linux: {runs_path} has no Linux run of {', '.join(missing)}; "
                         "run these on the testbed first (without --reuse-linux)")
    sections = _sections_meta(json.loads(meta_path.read_text())) if meta_path.is_file() else {}
    for section in sorted({section_of(s["name"]) for s in spec_list}):
        recorded = sections.get(section, {}).get("args", {})
        for key in ("seeds", SECTION_LENGTH_ARG[section]):
            if args and key in recorded and recorded[key] != args.get(key):
                raise ValueError(f"reuse_linux: --{key.replace('_', '-')} {args.get(key)} differs from the "
                                 f"{recorded[key]} that {cc}'s recorded {section} runs used; allowed: "
                                 f"{recorded[key]}")
    return {s["name"]: linux[s["name"]] for s in spec_list}


def _partial_header(cc, spec_list, stamp):
    """What a partial file's first line says of the run writing it: enough for ``resume`` to
    tell whether its pairs are this run's (a spec's name does not hold its run length)."""
    digest = hashlib.sha256(json.dumps(spec_list, sort_keys=True).encode()).hexdigest()
    return {"congestion": cc, "smallpipe_commit": stamp.get("smallpipe_commit"),
            "specs": [s["name"] for s in spec_list], "specs_digest": digest}


def resumed_pairs(partial_path, cc, spec_list, stamp):
    """For ``resume``: the pairs a stopped run left in ``partial_path``, by spec name, each
    with its wall time. Refuses, naming what differs, a partial file of another congestion
    control, commit or list of specs (its pairs would not be this run's). A pair cut off by
    the stop (no ``pair_done`` line after it) is dropped and runs again."""
    if not partial_path.is_file():
        return {}
    lines = partial_path.read_text().splitlines()
    try:
        header = json.loads(lines[0])["partial_of"] if lines else None
    except (json.JSONDecodeError, KeyError, TypeError):
        header = None
    if header is None:
        raise ValueError(f"resume: {partial_path} has no `partial_of` header line; allowed: a partial file "
                         "written by this harness (delete it to start over)")
    ours = _partial_header(cc, spec_list, stamp)
    for key in ("congestion", "smallpipe_commit", "specs", "specs_digest"):
        if header.get(key) != ours[key]:
            theirs, wanted = header.get(key), ours[key]
            if key == "specs":
                theirs, wanted = ", ".join(theirs or []), ", ".join(wanted)
            if key == "specs_digest":
                theirs, wanted = "other run lengths or settings", "the same specs as this run"
            raise ValueError(f"resume: {partial_path} holds a run with {key} {theirs}; allowed: {wanted}")
    done, pending = {}, []
    for line in lines[1:]:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            break  # the line the stop cut
        if "pair_done" in record:
            if len(pending) == 2 and all(r["name"] == record["pair_done"] for r in pending):
                done[record["pair_done"]] = (tuple(pending), record["wall_s"])
            pending = []
        else:
            pending.append(record)
    return done


def run_matrix(out, congestion_list, spec_list, stamp, args=None, reuse_linux=False, resume=False):
    """Every spec on both sides per congestion control. The sections run replace that
    congestion control's earlier results for them; its other sections' runs, rows and meta
    are kept, so the matrix can be filled one section per session. Each pair is appended to
    ``linux_matrix_<cc>_runs.partial.jsonl`` as it ends (a session that stops keeps what ran);
    the merged files are written when the congestion control's runs are all done.
    ``resume``: keep the pairs such a stopped run of the same specs at the same commit left
    there and run only the rest (``resumed_pairs``).
    ``reuse_linux``: run only the smallpipe side, against the Linux runs recorded for these
    specs (a change of smallpipe or of its harness needs no testbed); the section's meta
    keeps the record of the run that measured Linux. Returns {cc: rows}."""
    import linux_side
    import sp_side

    out.mkdir(parents=True, exist_ok=True)
    running = {section_of(s["name"]) for s in spec_list}
    order = {section: i for i, section in enumerate(SECTIONS)}
    all_rows = {}
    for cc in congestion_list:
        sets = overrides(cc)
        runs_path = out / f"linux_matrix_{cc}_runs.jsonl"
        summary_path = out / f"linux_matrix_{cc}_summary.csv"
        meta_path = out / f"linux_matrix_{cc}_meta.json"
        partial_path = out / f"linux_matrix_{cc}_runs.partial.jsonl"
        recorded = recorded_linux_runs(out, cc, spec_list, args) if reuse_linux else None
        done = resumed_pairs(partial_path, cc, spec_list, stamp) if resume else {}
        if resume:
            print(f"{cc}: {len(done)} of {len(spec_list)} pairs kept from {partial_path}", file=sys.stderr, flush=True)
        results, new_runs, wall_s = {}, [], dict.fromkeys(running, 0.0)
        header = {"partial_of": _partial_header(cc, spec_list, stamp)}
        with open(partial_path, "w") as partial:
            partial.write(json.dumps(header) + "\n")
            for spec in spec_list:
                if spec["name"] in done:
                    pair, took_s = done[spec["name"]]
                else:
                    t = time.perf_counter()
                    linux = (recorded[spec["name"]] if reuse_linux
                             else linux_side.run(spec, congestion_control=cc, overrides=sets))
                    pair = (sp_side.run(spec, smallpipe_overrides(cc)), linux)
                    took_s = time.perf_counter() - t
                    print(f"{cc} {spec['name']}: {took_s:.0f} s", file=sys.stderr, flush=True)
                results[spec["name"]] = pair
                lines = [json.dumps(r | {"congestion": cc}) + "\n" for r in pair]
                new_runs += lines
                partial.writelines([*lines, json.dumps({"pair_done": spec["name"], "wall_s": took_s}) + "\n"])
                partial.flush()
                wall_s[section_of(spec["name"])] += took_s
        earlier = runs_path.read_text().splitlines(keepends=True) if runs_path.is_file() else []
        kept_runs = [line for line in earlier if section_of(json.loads(line)["name"]) not in running]
        runs_path.write_text("".join(kept_runs + new_runs))
        kept_rows = [r for r in _read_csv(summary_path) if r["section"] not in running]
        new_rows = [r | stamp for r in compare(cc, results, spec_list)]
        rows = sorted(kept_rows + new_rows, key=lambda r: order[r["section"]])  # stable: metrics keep their order
        with open(summary_path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(new_rows[0]))
            w.writeheader()
            w.writerows(rows)
        old_meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        old_sections = _sections_meta(old_meta)
        sections = {k: v for k, v in old_sections.items() if k not in running}
        for section in running:
            ran = [s for s in spec_list if section_of(s["name"]) == section]
            sections[section] = {"runs": len(ran), "wall_s": round(wall_s[section], 1), "args": args or {}, **stamp}
            if reuse_linux:
                # The section's wall time stays the run that measured both sides.
                measured = old_sections.get(section, {})
                measured = measured.get("linux_measured_by", measured)
                sections[section] |= {"wall_s": measured.get("wall_s", 0.0), "smallpipe_rerun_wall_s":
                                      round(wall_s[section], 1), "linux_measured_by": measured}
        sections = dict(sorted(sections.items(), key=lambda kv: order[kv[0]]))
        meta = {"congestion": cc, "overrides": sets, "smallpipe_overrides": smallpipe_overrides(cc),
                "runs": sum(v["runs"] for v in sections.values()),
                "wall_s": round(sum(v["wall_s"] for v in sections.values()), 1),
                "sections": sections}
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
        partial_path.unlink()
        all_rows[cc] = rows
    return all_rows
