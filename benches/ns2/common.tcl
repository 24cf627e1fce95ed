# What every set-up here shares, sourced after `$ns rtproto Manual`:
#   route FROM TO [-default]: a static route from node FROM to its neighbour TO (with
#   -default, TO is FROM's default next hop). Manual routing keeps ns-2 from computing
#   routes for the thousands of nodes of the churn and session set-ups.
proc route {from to {default ""}} {
    if {$default != ""} {
        [$from get-module Manual] add-route-to-adj-node -default $to
    } else {
        [$from get-module Manual] add-route-to-adj-node $to
    }
}
