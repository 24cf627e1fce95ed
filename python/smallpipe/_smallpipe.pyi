"""Native core of smallpipe (Rust, built by maturin from ``crates/py``).

This module is private: use :mod:`smallpipe` instead, which wraps it in
:class:`smallpipe.Scenario` and :class:`smallpipe.Result`. The stubs below are the
contract between the Rust bindings and the Python package.
"""

from collections.abc import Callable
from typing import Any, final

__version__: str
"""The package version, taken from the Cargo workspace (``CARGO_PKG_VERSION``)."""

TCP_STACK_KNOBS: list[str]
TCP_NS2_STACK_KNOBS: list[str]
"""The ``[tcp]`` keys a named stack (``tcp.stack``) decides: switching the stack with an
override resets each of them to the new stack's value (docs/tcp.md, "Named stacks")."""

@final
class ConfigError(ValueError):
    """A scenario field has a value the simulator does not accept.

    The message reads ``"<field>: <value> is not allowed; expected <allowed>"``, e.g.
    ``"link.rate_bps: -5 is not allowed; expected a positive integer"``.

    Constructible from Python as ``ConfigError(message)``; the three attributes are
    plain instance attributes set after construction.
    """

    field: str
    """Dotted path of the offending field, e.g. ``"link.queue.limit_pkts"`` or
    ``"flows.0.count"``; ``"<file>"`` for an unreadable scenario file."""
    value: str
    """The rejected value, rendered for humans."""
    allowed: str
    """What would have been accepted, e.g. ``"a positive integer"``."""

    def __init__(self, *args: object) -> None: ...

class SimulationError(RuntimeError):
    """The simulator failed while running a valid scenario: an internal invariant broke
    (the message carries the panic's). Nothing of the run is returned."""

def validate_config(config_json: str) -> str:
    """Check a scenario and fill in every default.

    Arguments:
        config_json: the scenario as JSON: the TOML scenario converted to a dict,
            then ``json.dumps``.

    Returns:
        The canonical scenario as JSON, with every default filled in. Validating the
        canonical JSON again returns it unchanged.

    Raises:
        ConfigError: a field is missing, unknown, of the wrong type or out of range;
            ``field`` names its dotted path.
    """

def simulate(
    config_json: str,
    progress: Callable[[int, int], object] | None = None,
    chunk_events: int = 20_000,
    on_rows: Callable[[dict[str, Any]], object] | None = None,
) -> dict[str, Any]:
    """Run one simulation, ``chunk_events`` events at a time (the results do not depend on
    it). Between chunks Python's signal handlers run and ``progress(now_ns, end_ns)`` is
    called; a KeyboardInterrupt from either stops the run and returns what was computed so
    far, with ``meta["partial"]`` true and ``meta["stopped_at_ns"]``.

    Arguments:
        config_json: the scenario as JSON (validated again on the Rust side).
        on_rows: with the scenario's ``[output] stream_flows_every = N``, called between
            chunks once N or more finished flows are ready, with their ``flows``,
            ``slices``, ``bursts`` and ``progress`` columns; those rows are then not in
            the returned tables.

    Returns:
        ``{"flows", "slices", "units", "links", "bursts", "progress", "queue_delays", "link_counters",
        "udp_flows", "queue_states", "trace",
        "flow_series", "link_series", "events"}``, each a dict of equal-length column lists,
        ``"pcap"`` (bytes, or None), and ``"meta"``, a dict of scalars:

        - flows (one row per TCP connection): ``flow_id``, ``unit_id``, ``group``
          (index into the scenario's ``[[flows]]``), ``app`` (``"bulk" | "transfer" |
          "interactive" | "session" | "web" | "poisson" | "replay"``), ``rtt_ms`` (base
          propagation RTT), ``start_ns``, ``end_ns`` (receiver has all data; None if
          unfinished), ``size_bytes`` (None = unlimited), ``bytes_delivered``
          (in-order bytes to the receiving app), ``segments_sent``, ``retransmits``,
          ``timeouts`` (and its parts by where they fired: ``timeouts_in_recovery``,
          ``timeouts_after_dupacks``, ``timeouts_repeated``), ``syn_timeouts``,
          ``fast_retransmits``, ``longest_silence_ns``.
        - slices: ``flow_id``, ``slice``, ``start_ns``, ``bytes`` (in-order bytes
          delivered in the slice); dense over each flow's lifetime, zeros included.
        - units (one row per flow, session, web user or Poisson host pair):
          ``unit_id``, ``group``, ``app``, ``rtt_ms``, ``connections``,
          ``bytes_delivered``, ``longest_hang_ns`` (longest time, while one of the
          unit's connections was open, in which none received data), ``pages_done``.
        - links: ``name``, ``rate_bps``, ``tx_pkts``, ``tx_bytes``, ``utilization``,
          ``arrived_pkts``, ``dropped_pkts``, ``drop_overlimit``, ``drop_early``,
          ``drop_flow_limit``, ``drop_admission``, ``drop_size_policy``,
          ``drop_link_loss``, ``drop_ack_filter``, ``marked_pkts`` (CE marks),
          ``loss_rate``, ``mean_backlog_pkts``,
          ``mean_queue_delay_ms``, ``size_aware_mean_target_pkts_per_rtt`` (the
          size-aware discipline's target averaged over the run; None for others).
        - link_counters (each link's discipline's own counters at the end, ``tc -s``
          style): ``link``, ``counter``, ``class`` (CAKE's tin, TAQ's queue, ...; None for
          the whole discipline), ``kind`` (``"total"`` since the start or ``"level"``
          now), ``value``.
        - udp_flows (one row per UDP source, ``app = "udp_*"``): ``udp_flow_id``,
          ``unit_id``, ``group``, ``app``, ``rtt_ms``, ``packets_sent``/``bytes_sent``,
          ``packets_delivered``/``bytes_delivered``, ``packets_dropped``/``bytes_dropped``
          (queue drops and wire loss), ``packets_in_flight`` (queued or on a wire at the
          end), ``delay_sum_ns`` and ``delay_max_ns`` (one-way delays of the delivered
          datagrams, to the µs).
        - bursts (interactive flows): ``flow_id``, ``sent_ns``, ``acked_ns``,
          ``response_ns`` (None when not acknowledged before the end).
        - progress (flows with ``record_progress``): ``flow_id``, ``packets``,
          ``fct_ns`` (time since the flow's start when its first ``packets`` MSS of
          data had arrived in order).
        - queue_states (links whose queue is TAQ, one row per link and slice, at the
          slice's end): ``link``, ``slice``, ``time_ns``, ``flows_<state>`` for the
          seven states of TAQ's flow model and ``queued_<queue>`` for its seven queues.
        - trace (the scenario's ``trace_conn`` sender; empty without it): ``time_ns``,
          ``sent``, ``seq`` (relative to the ISS), ``payload_len``, ``flags``,
          ``cwnd_bytes``, ``ssthresh_bytes``; one row per packet emitted, or one with
          ``sent`` False when an event only changed cwnd or ssthresh.
        - sender_epochs (with the scenario's ``record_sender_epochs``; empty without
          it): ``flow_id``, ``slice``, ``segments_sent``, ``cwnd_segments``,
          ``rto_backoff``, ``in_timeout``, ``taq_state`` (a TAQ state name or None).
        - flow_series, link_series, events, pcap: the scenario's ``[trace]`` outputs
          (empty or None without it), as ``smallpipe.result.FLOW_SERIES_SCHEMA``,
          ``LINK_SERIES_SCHEMA`` and ``EVENTS_SCHEMA`` describe them.
        - meta: ``seed``, ``duration_ns``, ``slice_ns``, ``events``, ``packets``
          (transmissions on all links), ``wall_seconds``, ``skipped_log_lines``,
          ``partial`` (and ``stopped_at_ns`` when true), ``trace_truncated`` (the
          ``[trace]`` parts that hit their cap), ``flows_opened`` (connections opened,
          streamed ones included), ``packets_to_closed_flows`` (packets that reached a
          host after their connection was recycled, dropped there).

    Raises:
        ConfigError: the scenario is invalid.
        SimulationError: the run failed.
    """

def size_aware_transfer_time_s(
    d: int,
    p: list[float],
    *,
    rtt_s: float,
    t0_s: float,
    b: float,
    w1_pkts: float,
    w_max_pkts: float | None = None,
) -> float:
    """Expected time (s) for TCP Reno to transfer ``d`` packets when the i-th transmitted
    packet is lost with probability ``p[i-1]`` (the last value repeats): Tokuda et al.,
    Section 3. See :mod:`smallpipe.models.size_aware`.

    Raises:
        ValueError: a probability outside [0, 1] or a TCP parameter out of range.
    """

def size_aware_drop_curve(
    target_pkts_per_rtt: float,
    m_pkts: int,
    *,
    thresholds: int = 0,
    max_p: float = 0.5,
    rtt_s: float,
    t0_s: float,
    b: float,
    w1_pkts: float,
    w_max_pkts: float | None = None,
) -> tuple[list[int], list[float]]:
    """The size-aware discipline's drop probabilities for a target throughput: ``(ends,
    probs)`` where ``probs[j]`` applies up to packet ``ends[j]`` (per packet when
    ``thresholds`` is 0, else the log-spaced intervals of Section 6.2).

    Raises:
        ValueError: an argument out of range.
    """

def red_params(queue_json: str, rate_bps: int, delay_ns: int) -> dict[str, float | bool]:
    """RED's parameters as the simulator resolves them for a link of ``rate_bps`` and
    ``delay_ns`` (the automatic ``min_th``, ``max_th`` and ``w_q`` filled in), for either
    variant.

    Arguments:
        queue_json: a ``link.queue`` table of kind ``"red"`` as JSON.

    Returns:
        ``min_th_pkts``, ``max_th_pkts`` (packets), ``min_th``, ``max_th`` (the queue's
        unit: bytes in byte mode), ``w_q``, ``max_p``, ``pkts_per_sec`` (ns-2 ``ptc``) and
        ``byte_mode``.

    Raises:
        ConfigError: a knob is out of range; ``field`` names it.
        ValueError: the JSON is not a queue table, or its kind is not ``"red"``.
    """
