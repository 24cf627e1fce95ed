# What every set-up here shares, sourced after `$ns rtproto Manual`:
#   route FROM TO [-default]: a static route from node FROM to its neighbour TO (with
#   -default, TO is FROM's default next hop). Manual routing keeps ns-2 from computing
#   routes for the thousands of nodes of the churn and session set-ups.
#   host_pair R1 R2 RATE SENDER_S RECEIVER_S LIMIT: a sender behind router R1 and a receiver
#   behind R2, each on its own duplex access link of RATE bit/s (one-way delays SENDER_S and
#   RECEIVER_S seconds, LIMIT packets of DropTail each way), routed; returns [list s d].
#   bernoulli_loss FROM TO RATE SEED: each packet on link FROM -> TO lost with probability
#   RATE, drawn from its own generator seeded SEED.
proc route {from to {default ""}} {
    if {$default != ""} {
        [$from get-module Manual] add-route-to-adj-node -default $to
    } else {
        [$from get-module Manual] add-route-to-adj-node $to
    }
}

proc host_pair {r1 r2 rate sender_s receiver_s limit} {
    global ns
    set s [$ns node]
    set d [$ns node]
    $ns duplex-link $s $r1 $rate $sender_s DropTail
    $ns duplex-link $d $r2 $rate $receiver_s DropTail
    foreach {a b} [list $s $r1 $r1 $s $d $r2 $r2 $d] { $ns queue-limit $a $b $limit }
    route $s $r1 -default
    route $d $r2 -default
    route $r1 $s
    route $r2 $d
    return [list $s $d]
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
