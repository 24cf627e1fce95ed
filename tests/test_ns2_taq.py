"""benches/ns2's TAQ verdict drivers (taq_hangs, taq_fig3, taq_fig6, taq_fig9): their own
arithmetic on hand-made inputs, and one small ns-2 run each for the two that read new
driver output (per-slice packets sent), checked against what follows from the set-up.
The ns-2 runs are skipped when Debian's `ns` is not installed."""


import pytest
from ns2_drivers import load, requires_ns


def test_a_users_hang_is_its_longest_run_of_slices_with_no_connection_served():
    hangs = load("taq_hangs")
    # Two users of two connections; slices in rows, flows in columns.
    slices = [[1, 0, 0, 0],
              [0, 0, 0, 3],
              [0, 2, 0, 0],
              [0, 0, 0, 0],
              [0, 0, 0, 0],
              [5, 0, 0, 0]]
    # User 0 (flows 0, 1) is silent in slices 1, 3, 4: longest run 2. User 1 (flows 2, 3) is
    # silent in 0, 2, 3, 4, 5: longest run 4.
    assert hangs.longest_hangs(slices, 2) == [2, 4]


def test_flow_evolution_classes_each_flow_once_per_pair_of_epochs():
    fig9 = load("taq_fig9")
    # Three flows over four slices: flow 0 always served, flow 1 never, flow 2 alternating.
    slices = [[1, 0, 1], [1, 0, 0], [1, 0, 1], [1, 0, 0]]
    one = fig9.evolution(slices, 1)
    assert one == [{"maintained": 1, "dropped": 1, "arriving": 0, "stalled": 1},
                   {"maintained": 1, "dropped": 0, "arriving": 1, "stalled": 1},
                   {"maintained": 1, "dropped": 1, "arriving": 0, "stalled": 1}]
    # Epochs of two slices: flow 2 is served in both, so it is maintained.
    assert fig9.evolution(slices, 2) == [{"maintained": 2, "dropped": 0, "arriving": 0, "stalled": 1}]


@requires_ns
@pytest.mark.parametrize("queue", ["DropTail", "RED", "SFQ"])
def test_figure_6_counts_every_flow_epoch_and_its_sent_packets_add_up(queue):
    fig6 = load("taq_fig6")
    row = fig6.row(250_000, 40_000, 30.0, 1, "Sack1", queue)
    assert row["queue"] == queue
    flows, epochs = row["flows"], round((30.0 - fig6.WARMUP_S) / fig6.EPOCH_S)
    assert row["flow_epochs"] == flows * epochs
    shares = [row[f"sim_sent_{k}"] for k in range(3)]
    assert all(0 <= x <= 1 for x in shares) and sum(shares) <= 1
    # Six flows at a 40 kbit/s share send about 4 packets per 400 ms epoch on average (one
    # epoch carries 25 packets of the link): more than two in most epochs.
    assert sum(shares) < 0.9
    assert 0 < row["loss_rate"] < 0.5


@requires_ns
def test_figure_9_sees_at_most_as_many_active_flows_as_the_link_sends_packets():
    fig9 = load("taq_fig9")
    rows = fig9.rows("DropTail", 40.0, 1)
    short = next(r for r in rows if r["epoch_s"] == fig9.EPOCH_S)
    # 600 kbit/s sends 60 packets of 500 bytes per 0.4 s: a flow is active in an epoch only if
    # one of them was its, so at most 60 flows are active, and at least the floor is stalled.
    active = short["maintained_mean"] + short["arriving_mean"]
    assert active <= 60 + 1e-9
    assert short["stalled_mean"] >= short["stalled_lower_bound"] - 1e-9
    total = sum(short[f"{s}_mean"] for s in fig9.STATES)
    assert abs(total - fig9.FLOWS) < 1e-9
