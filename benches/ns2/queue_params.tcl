# Prints the parameters ns-2 2.35 gives its queues with their defaults (ns-default.tcl),
# RED's automatic ones resolved from the link as `$ns run` resets the queues.
#
#   ns benches/ns2/queue_params.tcl
#
# One line per queue, `key=value` fields. tests/test_ns2_queues.py compares the RED lines
# with smallpipe's ns2 variant; crates/core/src/qdisc/ns2/red.rs quotes them.

set ns [new Simulator]

# rate (bit/s), delay (s): the links whose RED parameters are printed.
set links {1000000 0.001 10000000 0.010 10000000 0.050}
set reds {}
foreach {rate delay} $links {
    set a [$ns node]
    set b [$ns node]
    $ns duplex-link $a $b $rate $delay RED
    lappend reds [list $rate $delay [[$ns link $a $b] queue]]
}

set c [$ns node]
set d [$ns node]
$ns duplex-link $c $d 1000000 0.001 SFQ
$ns queue-limit $c $d 100
set sfq [[$ns link $c $d] queue]
set e [$ns node]
$ns duplex-link $c $e 1000000 0.001 DRR
set drr [[$ns link $c $e] queue]
set f [$ns node]
$ns duplex-link $c $f 1000000 0.001 DropTail
set droptail [[$ns link $c $f] queue]

# The queues are reset (and RED's automatic parameters resolved) when the run starts; a
# UDP agent gives the scheduler something to run.
set udp [new Agent/UDP]
$ns attach-agent $c $udp
set null [new Agent/Null]
$ns attach-agent $d $null
$ns connect $udp $null

proc report {} {
    global reds sfq drr droptail
    foreach r $reds {
        lassign $r rate delay q
        puts [format "red rate_bps=%s delay_s=%s thresh=%s maxthresh=%s q_weight=%s thresh_queue=%s maxthresh_queue=%s max_p=%s limit=%s mean_pktsize=%s bytes=%s queue_in_bytes=%s gentle=%s wait=%s setbit=%s mark_p=%s drop_front=%s" \
            $rate $delay [$q set thresh_] [$q set maxthresh_] [$q set q_weight_] \
            [$q set thresh_queue_] [$q set maxthresh_queue_] [$q set cur_max_p_] [$q set limit_] \
            [$q set mean_pktsize_] [$q set bytes_] [$q set queue_in_bytes_] [$q set gentle_] \
            [$q set wait_] [$q set setbit_] [$q set mark_p_] [$q set drop_front_]]
    }
    puts "sfq maxqueue=[$sfq set maxqueue_] buckets=[$sfq set buckets_] limit=[$sfq set limit_]"
    puts "drr buckets=[$drr set buckets_] blimit=[$drr set blimit_] quantum=[$drr set quantum_] mask=[$drr set mask_]"
    puts "droptail limit=[$droptail set limit_] drop_front=[$droptail set drop_front_] queue_in_bytes=[$droptail set queue_in_bytes_] mean_pktsize=[$droptail set mean_pktsize_] summarystats=[$droptail set summarystats_]"
}

$ns at 0.001 "report"
$ns at 0.002 "exit 0"
$ns run
