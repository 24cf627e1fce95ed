# The thesis's half-dumbbell (its §4.2) in ns-2 2.35: n flows from their own sources S_i over
# R1 -> R2, the bottleneck. Run as `ns thesis.tcl PARAMS.tcl`; PARAMS.tcl (written by
# thesis_ns2.py) sets the array p. Everything not set keeps ns-2's default (ns-default.tcl).
#
# p(mode) "elephants" (Figures 5.1 and 5.4): p(background) bulk flows start within the first
#   10 ms; a measuring flow of p(measure_pkts) packets starts at p(measure_start_s) to its own
#   destination M behind R2 (a 0 ms link, as smallpipe's receiver host), whose arrivals are
#   traced to p(trace).
#   Prints "measure START_S" and "wall RUN_S"; the trace's 'r' events on R2 -> M are the
#   measuring flow's arrivals.
# p(mode) "generators" (Figure 5.3): p(background) generators each send p(mouse_pkts)-packet
#   flows back to back from time U(0, 10 ms). p(restart) "fresh": at `done` the agent and
#   sink are reset and start again (a new header-only first packet, windowInit_, slow start);
#   "persistent": the same agent is given p(mouse_pkts) more packets (its window kept).
#   Prints "second K BYTES PACKETS FINISHED" (what the bottleneck sent in second K after
#   p(warmup_s): every packet, retransmissions and header-only first packets included; and
#   the generators' flows done in it) for p(measure_s) seconds, and "flows FINISHED".
#
# p(queue): DropTail, RED (ns-2's automatic parameters, its byte mode), DRR (ns-2's fair
# queue: p(drr_buckets), p(drr_blimit_bytes), p(drr_quantum_bytes)).

source [lindex $argv 0]

set ns [new Simulator]
global defaultRNG
$defaultRNG seed $p(seed)
$ns rtproto Manual
source [file join [file dirname [info script]] common.tcl]

if {$p(queue) == "DRR"} {
    Queue/DRR set buckets_ $p(drr_buckets)
    Queue/DRR set blimit_ $p(drr_blimit_bytes)
    Queue/DRR set quantum_ $p(drr_quantum_bytes)
}
set r1 [$ns node]
set r2 [$ns node]
set delay_s [expr {$p(latency_ms) / 1000.0}]
set bottleneck_s [expr {$p(bottleneck_delay_ms) / 1000.0}]
$ns duplex-link $r1 $r2 $p(rate_bps) $bottleneck_s $p(queue)
$ns queue-limit $r1 $r2 $p(queue_pkts)
route $r1 $r2 -default
route $r2 $r1 -default
set qmon [$ns monitor-queue $r1 $r2 ""]

# Packet sizes: packetSize_ is the payload, ns-2 adds the 40-byte header on the wire.
foreach v {Reno Newreno} {
    Agent/TCP/$v set packetSize_ [expr {$p(packet_bytes) - 40}]
    Agent/TCP/$v set window_ $p(window_pkts)
}

set uniform [new RNG]
$uniform seed [expr {$p(seed) + 7}]

# Flow i: S_i -> R1 (latency) -> R2 -> D (one destination node: the half-dumbbell; RTT =
# 2 latency + 2 bottleneck delays, so R2 -> D has no delay).
set dst [$ns node]
$ns duplex-link $r2 $dst $p(rate_bps) 0 DropTail
foreach {a b} [list $r2 $dst $dst $r2] { $ns queue-limit $a $b 1000 }
route $r2 $dst
route $dst $r2 -default

proc sender {i iw} {
    global ns p r1 delay_s s
    set s($i) [$ns node]
    $ns duplex-link $s($i) $r1 $p(rate_bps) $delay_s DropTail
    foreach {a b} [list $s($i) $r1 $r1 $s($i)] { $ns queue-limit $a $b 1000 }
    route $s($i) $r1 -default
    route $r1 $s($i)
    set tcp [new Agent/TCP/$p(variant)]
    $tcp set windowInit_ $iw
    $tcp set fid_ $i
    $ns attach-agent $s($i) $tcp
    return $tcp
}

set finished 0
Agent/TCP instproc done {} {
    global ns p finished
    $self instvar sink_ generator_
    if {![info exists generator_]} { return }
    incr finished
    if {$p(restart) == "fresh"} {
        $self reset
        $sink_ reset
        $self advance $p(mouse_pkts)
    } else {
        $self advanceby $p(mouse_pkts)
    }
}

for {set i 0} {$i < $p(background)} {incr i} {
    set tcp($i) [sender $i $p(iw_pkts)]
    set sink($i) [new Agent/TCPSink]
    $ns attach-agent $dst $sink($i)
    $ns connect $tcp($i) $sink($i)
    $tcp($i) set sink_ $sink($i)
    set start [$uniform uniform 0 0.01]
    if {$p(mode) == "elephants"} {
        set ftp($i) [new Application/FTP]
        $ftp($i) attach-agent $tcp($i)
        $ns at $start "$ftp($i) start"
    } else {
        $tcp($i) set generator_ 1
        $ns at $start "$tcp($i) advance $p(mouse_pkts)"
    }
}

proc finish {} {
    global run_started finished
    puts "flows $finished"
    puts "wall [expr {([clock milliseconds] - $run_started) / 1000.0}]"
    exit 0
}

if {$p(mode) == "elephants"} {
    set m $p(background)
    set tcp($m) [sender $m $p(iw_pkts)]
    set meas_dst [$ns node]
    $ns duplex-link $r2 $meas_dst $p(rate_bps) 0 DropTail
    foreach {a b} [list $r2 $meas_dst $meas_dst $r2] { $ns queue-limit $a $b 1000 }
    route $r2 $meas_dst
    route $meas_dst $r2 -default
    set sink($m) [new Agent/TCPSink]
    $ns attach-agent $meas_dst $sink($m)
    $ns connect $tcp($m) $sink($m)
    $ns trace-queue $r2 $meas_dst [open $p(trace) w]
    puts "measure $p(measure_start_s)"
    $ns at $p(measure_start_s) "$tcp($m) advance $p(measure_pkts)"
} else {
    # Bytes and packets the bottleneck sent in each second (the queue monitor's departures),
    # and the flows done in it.
    set last_bytes 0
    set last_pkts 0
    set last_finished 0
    proc second {k} {
        global qmon last_bytes last_pkts finished last_finished
        set bytes [$qmon set bdepartures_]
        puts "second $k [expr {$bytes - $last_bytes}] [expr {[$qmon set pdepartures_] - $last_pkts}] [expr {$finished - $last_finished}]"
        set last_bytes $bytes
        set last_pkts [$qmon set pdepartures_]
        set last_finished $finished
    }
    $ns at $p(warmup_s) "set last_bytes \[\$qmon set bdepartures_\]; set last_pkts \[\$qmon set pdepartures_\]; set last_finished \$finished"
    for {set k 0} {$k < $p(measure_s)} {incr k} {
        $ns at [expr {$p(warmup_s) + $k + 1}] "second $k"
    }
}
$ns at $p(duration_s) "finish"
set run_started [clock milliseconds]
$ns run
