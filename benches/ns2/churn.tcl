# Poisson churn in ns-2 2.35, as the thesis's Figure 5.2 ran it: short TCP flows between
# host pairs across one bottleneck, each flow an agent taken from its host pair's pool and
# returned (reset) when its last packet is acknowledged, so that 10^5-10^8 flows do not
# need as many agents. Run as `ns churn.tcl PARAMS.tcl ARRIVALS`; PARAMS.tcl sets the
# array p (benches/ns2/churn.py writes it; README.md lists it), ARRIVALS has a line
# "START_S PAIR SIZE_PKTS" per flow, sorted by start, read one line ahead.
#
# Optional: p(queue) the bottleneck's queue class (DropTail unless set) and p(queue_config)
# a list "VAR VALUE ..." set on it (e.g. RED's thresh_); p(fct_out) a file that gets a line
# "START_S SIZE_PKTS FCT_S" per flow, FCT_S -1 for a flow not finished at the end.
#
# Prints on stdout:
#   queue ARRIVED DEPARTED DROPPED QUEUED   bottleneck, whole run
#   flows STARTED FINISHED AGENTS_BEFORE_RUN AGENTS_IN_RUN FCT_SUM_S
#   wall BUILD_S RUN_S

set build_started [clock milliseconds]
source [lindex $argv 0]
set arrivals [open [lindex $argv 1] r]

set ns [new Simulator]
# ns-2's default scheduler is the calendar queue (ns-lib.tcl); p(scheduler) may pick another.
if {$p(scheduler) != "Calendar"} { $ns use-scheduler $p(scheduler) }
global defaultRNG
$defaultRNG seed $p(seed)
$ns rtproto Manual
source [file join [file dirname [info script]] common.tcl]

set r1 [$ns node]
set r2 [$ns node]
foreach {key fallback} {queue DropTail queue_config {} fct_out {}} {
    if {![info exists p($key)]} { set p($key) $fallback }
}
$ns duplex-link $r1 $r2 $p(rate_bps) [expr {$p(bottleneck_delay_ms) / 1000.0}] $p(queue)
$ns queue-limit $r1 $r2 $p(queue_pkts)
foreach {var value} $p(queue_config) { [[$ns link $r1 $r2] queue] set $var $value }
set fct_file [expr {$p(fct_out) != "" ? [open $p(fct_out) w] : ""}]
route $r1 $r2 -default
route $r2 $r1 -default
set qmon [$ns monitor-queue $r1 $r2 ""]

set sender_s [expr {($p(rtt_ms) / 2.0 - $p(bottleneck_delay_ms) - $p(receiver_delay_ms)) / 1000.0}]
for {set i 0} {$i < $p(pairs)} {incr i} {
    lassign [host_pair $r1 $r2 $p(access_rate_bps) $sender_s [expr {$p(receiver_delay_ms) / 1000.0}] 1000] s($i) d($i)
    set pool($i) {}
}

Agent/TCP/$p(variant) set packetSize_ [expr {$p(packet_bytes) - [Agent/TCP set tcpip_base_hdr_size_]}]
Agent/TCP/$p(variant) set windowInit_ $p(iw_pkts)
Agent/TCP/$p(variant) set window_ $p(window_pkts)
set started 0
set finished 0
set agents 0
set fct_sum 0.0


# A flow ends when its agent calls `done` (tcp.cc: all of curseq_ acknowledged); the agent
# and its sink are reset and go back to the pair's pool.
Agent/TCP instproc done {} {
    global ns pool finished fct_sum fct_file open_flows
    $self instvar pair_ started_at_ sink_ size_
    incr finished
    set fct_sum [expr {$fct_sum + [$ns now] - $started_at_}]
    if {$fct_file != ""} {
        puts $fct_file "$started_at_ $size_ [expr {[$ns now] - $started_at_}]"
        unset open_flows($self)
    }
    $self reset
    $sink_ reset
    lappend pool($pair_) $self
}

# A new agent and sink for the pair (a few ms of Tcl each: hence the pool).
proc new_agent {pair} {
    global ns s d p agents
    set tcp [new Agent/TCP/$p(variant)]
    set sink [new Agent/$p(sink)]
    $ns attach-agent $s($pair) $tcp
    $ns attach-agent $d($pair) $sink
    $ns connect $tcp $sink
    $tcp set pair_ $pair
    $tcp set sink_ $sink
    incr agents
    return $tcp
}

# p(prealloc) lists how many agents each pair gets before the run; a pair that needs more
# makes them during the run (counted in AGENTS_IN_RUN).
for {set i 0} {$i < $p(pairs)} {incr i} {
    for {set k 0} {$k < [lindex $p(prealloc) $i]} {incr k} { lappend pool($i) [new_agent $i] }
}
set agents_before_run $agents

proc start_flow {pair size} {
    global ns pool started fct_file open_flows
    if {[llength $pool($pair)] > 0} {
        set tcp [lindex $pool($pair) end]
        set pool($pair) [lrange $pool($pair) 0 end-1]
    } else {
        set tcp [new_agent $pair]
    }
    $tcp set started_at_ [$ns now]
    $tcp set size_ $size
    if {$fct_file != ""} { set open_flows($tcp) 1 }
    incr started
    $tcp advance $size
}

proc next_arrival {} {
    global arrivals ns pending
    if {[gets $arrivals line] < 0} { return }
    lassign $line t pair size
    $ns at $t "start_flow $pair $size; next_arrival"
}
next_arrival

proc finish {} {
    global qmon started finished agents agents_before_run fct_sum build_s run_started fct_file open_flows
    if {$fct_file != ""} {
        foreach tcp [array names open_flows] { puts $fct_file "[$tcp set started_at_] [$tcp set size_] -1" }
        close $fct_file
    }
    puts "queue [$qmon set parrivals_] [$qmon set pdepartures_] [$qmon set pdrops_] [$qmon set pkts_]"
    puts "flows $started $finished $agents_before_run [expr {$agents - $agents_before_run}] $fct_sum"
    puts "wall $build_s [expr {([clock milliseconds] - $run_started) / 1000.0}]"
    exit 0
}
$ns at $p(duration_s) "finish"
set build_s [expr {([clock milliseconds] - $build_started) / 1000.0}]
set run_started [clock milliseconds]
$ns run
