# What every set-up here shares, sourced after `$ns rtproto Manual`:
#   route FROM TO [-default]: a static route from node FROM to its neighbour TO (with
#   -default, TO is FROM's default next hop). Manual routing keeps ns-2 from computing
#   routes for the thousands of nodes of the churn and session set-ups.
#   bernoulli_loss FROM TO RATE SEED: each packet on link FROM -> TO lost with probability
#   RATE, drawn from its own generator seeded SEED.
proc route {from to {default ""}} {
    if {$default != ""} {
        [$from get-module Manual] add-route-to-adj-node -default $to
    } else {
        [$from get-module Manual] add-route-to-adj-node $to
    }
}

proc bernoulli_loss {from to rate seed} {
    global ns
    set em [new ErrorModel]
    $em unit pkt
    $em set rate_ $rate
    set lossrng [new RNG]
    $lossrng seed $seed
    set u [new RandomVariable/Uniform]
    $u use-rng $lossrng
    $em ranvar $u
    $ns lossmodel $em $from $to
}
