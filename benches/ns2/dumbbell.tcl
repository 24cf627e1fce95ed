# A dumbbell in ns-2 2.35: flow i goes S_i -> R1 -> R2 -> D_i and back, over a bottleneck
# R1 -> R2 with a DropTail queue (or p(queue): RED, SFQ, DRR, with ns-2's defaults). Run as `ns dumbbell.tcl PARAMS.tcl`; PARAMS.tcl (written
# by ns2_side.py) sets the array p, listed in benches/ns2/README.md. Everything not set
# there keeps ns-2's default (tcl/lib/ns-default.tcl).
#
# Prints on stdout, one record a line:
#   queue ARRIVED DEPARTED DROPPED QUEUED_START QUEUED_END INTEGRAL_PKT_S   measured window
#   flow I START ACKED_PKTS TIMEOUTS REXMIT_PKTS DATA_PKTS     ACKED_PKTS in the window
#   slice K I ACKED_PKTS SENT_PKTS                             per slice of p(slice_s)
#   wall BUILD_S RUN_S
# With p(trace_dir) set, flow 0's segments (the '+' events of its access link) go to
# segments.tr and its cwnd_/ssthresh_ changes to vars.tr in that directory.

set build_started [clock milliseconds]
source [lindex $argv 0]

set ns [new Simulator]
global defaultRNG
$defaultRNG seed $p(seed)
# Manual routes: ns-2's static routing computes all pairs, which takes minutes at 1000 pairs.
$ns rtproto Manual
source [file join [file dirname [info script]] common.tcl]

set r1 [$ns node]
set r2 [$ns node]
$ns duplex-link $r1 $r2 $p(rate_bps) [expr {$p(bottleneck_delay_ms) / 1000.0}] $p(queue)
$ns queue-limit $r1 $r2 $p(queue_pkts)
route $r1 $r2 -default
route $r2 $r1 -default

# Loss on the bottleneck's data direction, inserted at the head of the link BEFORE the
# queue monitor is attached, so that the monitor counts a lost packet as arrived and
# dropped (ns-link.tcl: add-to-head puts each new connector first).
if {$p(loss) > 0} {
    bernoulli_loss $r1 $r2 $p(loss) [expr {$p(seed) + 1}]
} elseif {[llength $p(drop_data)] > 0} {
    # ErrorModel/List counts the packets it sees from 0, the one-way agent's header-only
    # first packet (syn_, on by default) included; p(drop_data) counts data packets from 1.
    set em [new ErrorModel/List]
    $em unit pkt
    set first_data [expr {[Agent/TCP set syn_] ? 1 : 0}]
    set counted {}
    foreach k $p(drop_data) { lappend counted [expr {$k - 1 + $first_data}] }
    $em droplist $counted
    $ns lossmodel $em $r1 $r2
}
set qmon [$ns monitor-queue $r1 $r2 ""]
set pkts_int [$qmon get-pkts-integrator]

set i 0
foreach f $p(flows) {
    lassign $f start rtt_ms size_pkts
    set sender_ms [expr {$rtt_ms / 2.0 - $p(bottleneck_delay_ms) - $p(receiver_delay_ms)}]
    lassign [host_pair $r1 $r2 $p(access_rate_bps) [expr {$sender_ms / 1000.0}] \
                 [expr {$p(receiver_delay_ms) / 1000.0}] 1000] s($i) d($i)

    set tcp($i) [new Agent/TCP/$p(variant)]
    $tcp($i) set packetSize_ [expr {$p(packet_bytes) - [$tcp($i) set tcpip_base_hdr_size_]}]
    $tcp($i) set fid_ $i
    if {$p(window_pkts) != ""} { $tcp($i) set window_ $p(window_pkts) }
    # overhead_: a uniform random delay up to this many seconds before each send (ns-2's default 0).
    if {$p(overhead_s) > 0} { $tcp($i) set overhead_ $p(overhead_s) }
    set sink($i) [new Agent/$p(sink)]
    $ns attach-agent $s($i) $tcp($i)
    $ns attach-agent $d($i) $sink($i)
    $ns connect $tcp($i) $sink($i)
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    if {$size_pkts < 0} {
        $ns at $start "$ftp($i) start"
    } else {
        $ns at $start "$ftp($i) produce $size_pkts"
    }
    set start_s($i) $start
    incr i
}
set nflows $i

if {$p(trace_dir) != ""} {
    $ns trace-queue $s(0) $r1 [open $p(trace_dir)/segments.tr w]
    set vars [open $p(trace_dir)/vars.tr w]
    $tcp(0) attach $vars
    $tcp(0) trace cwnd_
    $tcp(0) trace ssthresh_
}

# Segments acknowledged so far: ack_ is the highest cumulative ACK, -1 before the first.
proc acked {i} {
    global tcp
    return [expr {[$tcp($i) set ack_] + 1}]
}

proc mark {name} {
    global qmon pkts_int ns mark_ nflows tcp
    set now [$ns now]
    $pkts_int newpoint $now [$qmon set pkts_]
    set mark_($name) [list [$qmon set parrivals_] [$qmon set pdepartures_] [$qmon set pdrops_] \
                          [$qmon set pkts_] [$pkts_int set sum_]]
    for {set i 0} {$i < $nflows} {incr i} {
        set mark_($name,$i) [list [acked $i] [$tcp($i) set nrexmit_] [$tcp($i) set nrexmitpack_] \
                                 [$tcp($i) set ndatapack_]]
    }
}

proc slice {k} {
    global nflows slice_last sent_last p ns tcp
    for {set i 0} {$i < $nflows} {incr i} {
        set now [acked $i]
        set sent [$tcp($i) set ndatapack_]
        puts "slice $k $i [expr {$now - $slice_last($i)}] [expr {$sent - $sent_last($i)}]"
        set slice_last($i) $now
        set sent_last($i) $sent
    }
}

proc finish {} {
    global mark_ nflows start_s build_s run_started
    mark end
    lassign $mark_(warm) a0 d0 x0 q0 s0
    lassign $mark_(end) a1 d1 x1 q1 s1
    puts "queue [expr {$a1 - $a0}] [expr {$d1 - $d0}] [expr {$x1 - $x0}] $q0 $q1 [expr {$s1 - $s0}]"
    for {set i 0} {$i < $nflows} {incr i} {
        lassign $mark_(warm,$i) k0 t0 r0 n0
        lassign $mark_(end,$i) k1 t1 r1 n1
        puts "flow $i $start_s($i) [expr {$k1 - $k0}] [expr {$t1 - $t0}] [expr {$r1 - $r0}] [expr {$n1 - $n0}]"
    }
    puts "wall $build_s [expr {([clock milliseconds] - $run_started) / 1000.0}]"
    exit 0
}

set end [expr {$p(warmup_s) + $p(duration_s)}]
$ns at $p(warmup_s) "mark warm"
if {$p(slice_s) > 0} {
    $ns at $p(warmup_s) {
        for {set i 0} {$i < $nflows} {incr i} {
            set slice_last($i) [acked $i]
            set sent_last($i) [$tcp($i) set ndatapack_]
        }
    }
    set k 0
    for {set t [expr {$p(warmup_s) + $p(slice_s)}]} {$t <= $end + 1e-9} {set t [expr {$t + $p(slice_s)}]} {
        $ns at $t "slice $k"
        incr k
    }
}
$ns at $end "finish"
set build_s [expr {([clock milliseconds] - $build_started) / 1000.0}]
set run_started [clock milliseconds]
$ns run
