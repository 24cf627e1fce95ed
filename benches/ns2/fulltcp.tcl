# The padding paper's set-ups in ns-2 2.35 with its two-way TCP, Agent/TCP/FullTcp (Reno,
# no SACK), as the paper ran them: clients S_i -> R1 -> R2 -> D_i over one bottleneck,
# DropTail or RED, optional random loss on the data direction. Run as
# `ns fulltcp.tcl PARAMS.tcl`; PARAMS.tcl (written by padding.py) sets the array p.
#
# Groups (p(groups), a list of {kind count burst_bytes mean_gap_s minrto_s}):
#   interactive  writes burst_bytes, and the next burst an exponential gap after the
#                burst's last byte is acknowledged (done_data: the send buffer empties)
#   diversity    the same bursts written on two connections at once (k = 2 copies); a
#                burst is done when either connection has it acknowledged. An emulation:
#                each connection repairs its own copy (the paper resends one copy).
#   backlogged   an FTP that always has data; a packet is marked at exponential gaps of
#                mean_gap_s (the next new packet sent), timed from its send to the first
#                cumulative ACK past it, as the paper times its marked packets
#   bulk         an FTP, cross traffic
#   scripted     the connection opens at its start (an empty write: the handshake), then
#                writes burst_bytes at each time of p(write_times) (tests: the writes of a
#                smallpipe run replayed)
#   transfer     one write of burst_bytes at its start with MSG_EOF: the connection closes
#                (FIN) once the send buffer is empty and acknowledged (close_on_empty_)
#
# Prints on stdout:
#   resp GROUP CLIENT WRITE_S DONE_S           a burst (interactive, diversity)
#   mark GROUP CLIENT MARK_S SENT_S ACKED_S    a marked packet (backlogged)
#   queue ARRIVED DEPARTED DROPPED             bottleneck packets, whole run
#   tx GROUP PKTS RETRANSMITTED                per group: data packets sent, resent
#   wall BUILD_S RUN_S
#   timeouts GROUP N                           per group: retransmission timeouts (nrexmit_)
#
# Optional, for tracing one connection segment by segment (tests/test_ns2_fulltcp.py):
# p(drop_pkts) lists packets the bottleneck drops, counted from 0 over every packet it
# carries towards the receivers (the handshake's SYN and ACKs included); p(trace_dir)
# writes the first connection's packets onto its access link ('+' events) to segments.tr
# there.

set build_started [clock milliseconds]
source [lindex $argv 0]

set ns [new Simulator]
global defaultRNG
$defaultRNG seed $p(seed)
set gaps [new RNG]
$gaps seed [expr {$p(seed) + 11}]
$ns rtproto Manual
source [file join [file dirname [info script]] common.tcl]

Agent/TCP set minrto_ $p(minrto_s)
Agent/TCP set window_ $p(window_pkts)
Agent/TCP/FullTcp set segsize_ $p(segsize_bytes)
Agent/TCP/FullTcp set interval_ $p(delack_s)

# The bottleneck. p(queue): DropTail or RED; p(queue_in_bytes) counts the limit in bytes
# (limit_ x mean_pktsize_); p(red) = {thresh maxthresh max_p q_weight gentle bytes} or
# "defaults" for ns-2.35's own (automatic thresholds, gentle, byte mode).
foreach cls {Queue/DropTail Queue/RED} {
    $cls set queue_in_bytes_ $p(queue_in_bytes)
    $cls set mean_pktsize_ $p(mean_pktsize_bytes)
}
if {$p(queue) == "RED" && $p(red) != "defaults"} {
    lassign $p(red) th maxth max_p w gentle bytes
    Queue/RED set thresh_ $th
    Queue/RED set maxthresh_ $maxth
    Queue/RED set linterm_ [expr {1.0 / $max_p}]
    Queue/RED set q_weight_ $w
    Queue/RED set gentle_ $gentle
    Queue/RED set bytes_ $bytes
}
set r1 [$ns node]
set r2 [$ns node]
$ns duplex-link $r1 $r2 $p(rate_bps) [expr {$p(delay_ms) / 1000.0}] $p(queue)
$ns queue-limit $r1 $r2 $p(queue_limit)
route $r1 $r2 -default
route $r2 $r1 -default
if {![info exists p(drop_pkts)]} { set p(drop_pkts) {} }
if {![info exists p(trace_dir)]} { set p(trace_dir) "" }
if {$p(loss) > 0} {
    bernoulli_loss $r1 $r2 $p(loss) [expr {$p(seed) + 1}]
} elseif {[llength $p(drop_pkts)] > 0} {
    set em [new ErrorModel/List]
    $em unit pkt
    $em droplist $p(drop_pkts)
    $ns lossmodel $em $r1 $r2
}
set qmon [$ns monitor-queue $r1 $r2 ""]

proc connection {minrto} {
    global ns r1 r2 p
    lassign [host_pair $r1 $r2 $p(access_rate_bps) [expr {$p(sender_delay_ms) / 1000.0}] \
                 [expr {$p(receiver_delay_ms) / 1000.0}] 10000] s d
    if {$p(trace_dir) != "" && ![info exists ::traced]} {
        set ::traced 1
        $ns trace-queue $s $r1 [open $p(trace_dir)/segments.tr w]
    }
    set tcp [new Agent/TCP/FullTcp]
    set sink [new Agent/TCP/FullTcp]
    $tcp set minrto_ $minrto
    $ns attach-agent $s $tcp
    $ns attach-agent $d $sink
    $ns connect $tcp $sink
    $sink listen
    return $tcp
}

# Bursts: each connection keeps the ids of its bursts not yet acknowledged; when its send
# buffer empties (done_data), they all are.
Agent/TCP/FullTcp instproc done_data {} {
    global ns pending burst_done burst_written p gaps
    $self instvar group_ client_
    set now [$ns now]
    foreach id $pending($self) {
        if {![info exists burst_done($id)]} {
            set burst_done($id) $now
            puts "resp $group_ $client_ $burst_written($id) $now"
            lassign [lindex $p(groups) $group_] kind count bytes gap
            if {$kind != "scripted"} {
                $ns at [expr {$now + [$gaps exponential $gap]}] "write $group_ $client_"
            }
        }
    }
    set pending($self) {}
}
set next_id 0
proc write {g c} {
    global ns conns pending burst_written next_id p
    lassign [lindex $p(groups) $g] kind count bytes gap
    set id [incr next_id]
    set burst_written($id) [$ns now]
    foreach tcp $conns($g,$c) {
        lappend pending($tcp) $id
        $tcp sendmsg $bytes DAT_EOF
    }
}

# A marked packet: the next new byte (maxseq_, snd_max) at the mark. It is sent when
# maxseq_ passes it and acknowledged when ack_ (snd_una) does. Polled every 2% of the
# time waited, at least 0.1 ms: the times are good to that.
proc mark {g c} {
    global ns conns p gaps
    set tcp [lindex $conns($g,$c) 0]
    set now [$ns now]
    poll_sent $g $c $tcp $now [$tcp set maxseq_]
    lassign [lindex $p(groups) $g] kind count bytes gap
    $ns at [expr {$now + [$gaps exponential $gap]}] "mark $g $c"
}
proc poll_sent {g c tcp marked target} {
    global ns
    set now [$ns now]
    if {[$tcp set maxseq_] > $target} {
        poll_acked $g $c $tcp $marked $now $target
    } else {
        $ns at [expr {$now + max(1e-4, 0.02 * ($now - $marked))}] [list poll_sent $g $c $tcp $marked $target]
    }
}
proc poll_acked {g c tcp marked sent target} {
    global ns
    set now [$ns now]
    if {[$tcp set ack_] > $target} {
        puts "mark $g $c $marked $sent $now"
    } else {
        $ns at [expr {$now + max(1e-4, 0.02 * ($now - $sent))}] [list poll_acked $g $c $tcp $marked $sent $target]
    }
}

set g 0
foreach grp $p(groups) {
    lassign $grp kind count bytes gap minrto
    for {set c 0} {$c < $count} {incr c} {
        set n [expr {$kind == "diversity" ? 2 : 1}]
        set conns($g,$c) {}
        for {set k 0} {$k < $n} {incr k} {
            set tcp [connection $minrto]
            $tcp set group_ $g
            $tcp set client_ $c
            set pending($tcp) {}
            lappend conns($g,$c) $tcp
        }
        set start [expr {$p(start_spread_s) * [$defaultRNG uniform 0 1]}]
        if {$kind == "interactive" || $kind == "diversity"} {
            $ns at $start "write $g $c"
        } elseif {$kind == "transfer"} {
            $ns at $start "$tcp sendmsg $bytes MSG_EOF"
        } elseif {$kind == "scripted"} {
            $ns at $start "$tcp advance-bytes 0"
            foreach t $p(write_times) { $ns at $t "write $g $c" }
        } elseif {$kind == "backlogged" || $kind == "bulk"} {
            set ftp [new Application/FTP]
            $ftp attach-agent $tcp
            $ns at $start "$ftp start"
            if {$kind == "backlogged"} { $ns at [expr {$start + [$gaps exponential $gap]}] "mark $g $c" }
        } else {
            error "p(groups): kind $kind is not allowed; expected interactive, diversity, backlogged, bulk, scripted or transfer"
        }
    }
    incr g
}
set ngroups $g

proc finish {} {
    global qmon ngroups conns p build_s run_started
    puts "queue [$qmon set parrivals_] [$qmon set pdepartures_] [$qmon set pdrops_]"
    for {set g 0} {$g < $ngroups} {incr g} {
        set sent 0
        set resent 0
        set timeouts 0
        lassign [lindex $p(groups) $g] kind count
        for {set c 0} {$c < $count} {incr c} {
            foreach tcp $conns($g,$c) {
                incr sent [$tcp set ndatapack_]
                incr resent [$tcp set nrexmitpack_]
                incr timeouts [$tcp set nrexmit_]
            }
        }
        puts "tx $g $sent $resent"
        puts "timeouts $g $timeouts"
    }
    puts "wall $build_s [expr {([clock milliseconds] - $run_started) / 1000.0}]"
    exit 0
}
$ns at $p(duration_s) "finish"
set build_s [expr {([clock milliseconds] - $build_started) / 1000.0}]
set run_started [clock milliseconds]
$ns run
