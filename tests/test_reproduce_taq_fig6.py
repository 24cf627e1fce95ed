"""TAQ Figure 6: the sender-epoch recorder through the bindings, and the experiment's
classes of sender and TAQ state, checked on hand-built epochs."""

from types import SimpleNamespace

import polars as pl
import pytest
from smallpipe import simulate
from smallpipe.experiments import taq_fig6
from smallpipe.presets import taq_dumbbell
from smallpipe.result import SENDER_EPOCHS_SCHEMA


def _scenario(record: bool):
    return taq_dumbbell(flows=8, rate_bps=250_000, duration_s=30.0, slice_s=0.4, queue={"kind": "taq"}).with_overrides(
        {"record_sender_epochs": record}
    )


def test_sender_epochs_are_opt_in_and_leave_the_run_unchanged():
    off, on = simulate(_scenario(False)), simulate(_scenario(True))
    assert off.sender_epochs.is_empty()
    assert off.flows.equals(on.flows) and off.links.equals(on.links)
    # Every segment a sender emitted is counted in exactly one of its epochs.
    per_flow = on.sender_epochs.group_by("flow_id").agg(pl.col("segments_sent").sum()).sort("flow_id")
    expected = on.flows.select("flow_id", "segments_sent").sort("flow_id")
    assert per_flow["segments_sent"].to_list() == expected["segments_sent"].to_list()
    # 30 s of 0.4 s slices, each of the 8 bulk flows open throughout once started (in the first second).
    assert on.sender_epochs.filter(pl.col("slice") >= 3).height == 8 * (75 - 3)
    assert on.sender_epochs["taq_state"].drop_nulls().len() > 0


def _fake_result(rows: list[tuple]) -> SimpleNamespace:
    columns = ["flow_id", "slice", "segments_sent", "cwnd_segments", "rto_backoff", "in_timeout", "taq_state"]
    epochs = pl.DataFrame(rows, schema=SENDER_EPOCHS_SCHEMA, orient="row")
    assert epochs.columns == columns
    return SimpleNamespace(meta={"slice_ns": 1_000_000_000}, sender_epochs=epochs)


def test_epoch_classes_and_taq_scores_by_hand():
    result = _fake_result([
        (0, 5, 0, 1, 1, False, "normal"),  # warm-up (before 20 s): dropped
        (0, 25, 0, 1, 1, True, "timeout_silence"),  # silent, TAQ silent: match
        (0, 26, 1, 1, 2, True, "extended_silence"),  # recovering, TAQ silent: timeout both, no match
        (0, 27, 3, 2, 2, False, "timeout_recovery"),  # window, TAQ recovering: TAQ timeout only
        (1, 25, 4, 4, 0, False, "normal"),  # window, window: match
        (1, 26, 0, 1, 1, True, "slow_start"),  # silent, TAQ window: sender timeout only
        (1, 27, 2, 2, 0, False, None),  # not tracked by TAQ
    ])
    classes = taq_fig6.epoch_classes(result)
    assert classes["sender_class"].to_list() == ["silent", "recovering", "window", "window", "silent", "window"]
    assert classes["taq_class"].to_list() == ["silent", "silent", "recovering", "window", "window", None]
    scores = taq_fig6.taq_agreement(result)
    assert scores["taq_flow_epochs"] == 5
    assert scores["taq_match"] == pytest.approx(2 / 5)
    # Sender timeouts: rows 2, 3, 6; TAQ puts rows 2, 3 in a timeout state.
    assert scores["taq_timeout_recall"] == pytest.approx(2 / 3)
    # TAQ timeouts: rows 2, 3, 4; the sender is in a timeout in rows 2, 3.
    assert scores["taq_timeout_precision"] == pytest.approx(2 / 3)
