# Closed-loop sessions in ns-2 2.35: each host pair is a user that sends one transfer at a
# time across one bottleneck and, when it is done, thinks before the next. Run as
# `ns sessions.tcl PARAMS.tcl SESSIONS`; PARAMS.tcl (written by size_aware_ns2.py) sets the
# array p, SESSIONS has a line "PAIR FIRST_START_S SIZE_PKTS THINK_S SIZE_PKTS THINK_S ..."
# per user: its transfers in order, each followed by the think time after it. A user whose
# list runs out stays idle. With p(rtt_by_user) 1 each line has the user's propagation RTT
# after PAIR ("PAIR RTT_MS FIRST_START_S ..."), which sets its sender's access delay; else
# every user has p(rtt_ms).
#
# p(queue): the bottleneck's class, p(queue_config) a list "VAR VALUE ..." set on it.
# Writes p(fct_out), a line "START_S SIZE_PKTS FCT_S PAIR" per transfer (FCT_S -1: not done
# at the end), from `advance` to `done` (the last ACK back at the sender).
# Prints on stdout:
#   queue ARRIVED DEPARTED DROPPED QUEUED   bottleneck, whole run (packets)
#   wall RUN_S

source [lindex $argv 0]
set sessions [open [lindex $argv 1] r]

set ns [new Simulator]
global defaultRNG
$defaultRNG seed $p(seed)
$ns rtproto Manual
source [file join [file dirname [info script]] common.tcl]

set r1 [$ns node]
set r2 [$ns node]
$ns duplex-link $r1 $r2 $p(rate_bps) [expr {$p(bottleneck_delay_ms) / 1000.0}] $p(queue)
$ns queue-limit $r1 $r2 $p(queue_pkts)
foreach {var value} $p(queue_config) { [[$ns link $r1 $r2] queue] set $var $value }
route $r1 $r2 -default
route $r2 $r1 -default
set qmon [$ns monitor-queue $r1 $r2 ""]

Agent/TCP/$p(variant) set packetSize_ [expr {$p(packet_bytes) - [Agent/TCP set tcpip_base_hdr_size_]}]
foreach {var value} $p(tcp_config) { Agent/TCP/$p(variant) set $var $value }

proc sender_delay_s {rtt_ms} {
    global p
    return [expr {($rtt_ms / 2.0 - $p(bottleneck_delay_ms) - $p(receiver_delay_ms)) / 1000.0}]
}
if {![info exists p(rtt_by_user)]} { set p(rtt_by_user) 0 }
set fct_file [open $p(fct_out) w]

# A transfer ends when its agent calls `done` (tcp.cc: all of curseq_ acknowledged); agent
# and sink are reset and the user thinks before its next transfer.
Agent/TCP instproc done {} {
    global ns fct_file todo
    $self instvar pair_ started_at_ sink_ size_
    puts $fct_file "$started_at_ $size_ [expr {[$ns now] - $started_at_}] $pair_"
    set started_at_ -1
    $self reset
    $sink_ reset
    if {[llength $todo($pair_)] >= 2} {
        lassign $todo($pair_) think size
        set todo($pair_) [lrange $todo($pair_) 2 end]
        $ns at [expr {[$ns now] + $think}] "start_transfer $self $size"
    }
}

proc start_transfer {tcp size} {
    global ns
    $tcp set started_at_ [$ns now]
    $tcp set size_ $size
    $tcp advance $size
}

set users {}
while {[gets $sessions line] >= 0} {
    if {$p(rtt_by_user)} {
        set first [lassign $line pair rtt_ms start size]
    } else {
        set first [lassign $line pair start size]
        set rtt_ms $p(rtt_ms)
    }
    set sender_s [sender_delay_s $rtt_ms]
    lassign [host_pair $r1 $r2 $p(access_rate_bps) $sender_s [expr {$p(receiver_delay_ms) / 1000.0}] 1000] s($pair) d($pair)
    set tcp [new Agent/TCP/$p(variant)]
    set sink [new Agent/$p(sink)]
    $ns attach-agent $s($pair) $tcp
    $ns attach-agent $d($pair) $sink
    $ns connect $tcp $sink
    $tcp set pair_ $pair
    $tcp set sink_ $sink
    $tcp set started_at_ -1
    set todo($pair) $first
    lappend users $tcp
    $ns at $start "start_transfer $tcp $size"
}

proc finish {} {
    global qmon fct_file users run_started
    foreach tcp $users {
        if {[$tcp set started_at_] >= 0} { puts $fct_file "[$tcp set started_at_] [$tcp set size_] -1 [$tcp set pair_]" }
    }
    close $fct_file
    puts "queue [$qmon set parrivals_] [$qmon set pdepartures_] [$qmon set pdrops_] [$qmon set pkts_]"
    puts "wall [expr {([clock milliseconds] - $run_started) / 1000.0}]"
    exit 0
}
$ns at $p(duration_s) "finish"
set run_started [clock milliseconds]
$ns run
