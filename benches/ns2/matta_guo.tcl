# Matta & Guo's set-ups in ns-2 2.35: sessions of back-to-back connections of one size
# (the paper's short and long classes), telnet background and Poisson web connections,
# over one or more separate bottleneck paths R1_j -> R2_j. Run as
# `ns matta_guo.tcl PARAMS.tcl WEB_ARRIVALS`; PARAMS.tcl (written by matta_guo.py) sets the
# array p, WEB_ARRIVALS has a line "START_S SIZE_PKTS" per web connection (may be empty).
#
# A path is a separate bottleneck (its own nodes, queue, reverse link): the paper's "two
# separate pipes" of class isolation are two paths, its diamond (Figure 7) is two paths
# whose connections each pick one at random (load balancing), sharing is one path.
#
# Prints on stdout, one record a line:
#   conn GROUP SESSION PATH START_S END_S PKTS TIMEOUTS   a finished connection
#   slice K GROUP SESSION ACKED_PKTS                       per p(slice_s), in order packets
#   path J ARRIVED DEPARTED DROPPED DEPARTED_BYTES         each bottleneck, whole run
#   web STARTED FINISHED
#   wall BUILD_S RUN_S

set build_started [clock milliseconds]
source [lindex $argv 0]
set web_arrivals [open [lindex $argv 1] r]

set ns [new Simulator]
global defaultRNG
$defaultRNG seed $p(seed)
set path_rng [new RNG]
$path_rng seed [expr {$p(seed) + 7}]
$ns rtproto Manual
source [file join [file dirname [info script]] common.tcl]

# The TCP of every connection: p(variant) is "" for ns-2's Tahoe (Agent/TCP), else Reno or
# Newreno. ns-2 of 2000 had no header-only first packet (syn_) and grew the window on the
# first ACK (delay_growth_, default true since 2001/5/17: ns-default.tcl:1043 at f95482f, which resets
# cwnd_ to windowInit_ on the first ACK, tcp.cc:1809, so a 10-packet connection sent 1, 1,
# 2, 4, 2). Both off: a connection of n packets sends seqnos 0 .. n-1 in rounds of 1, 2, 4,
# 3 (the paper's footnote 5).
set tcpclass [expr {$p(variant) == "" ? "Agent/TCP" : "Agent/TCP/$p(variant)"}]
foreach cls [list Agent/TCP $tcpclass] {
    $cls set packetSize_ [expr {$p(packet_bytes) - 40}]
    $cls set window_ $p(window_pkts)
    $cls set windowInit_ $p(iw_pkts)
    $cls set tcpTick_ $p(tick_s)
    $cls set minrto_ $p(minrto_s)
    # p(ns235_start) 1 keeps ns-2.35's own start (a header-only first packet, growth delayed
    # to its ACK), as smallpipe's ns2 stack: a test of what the handshake's round trip does.
    set ns235_start [expr {[info exists p(ns235_start)] && $p(ns235_start)}]
    $cls set syn_ $ns235_start
    $cls set delay_growth_ $ns235_start
}

# Paths: p(paths) is a list of {rate_bps delay_ms queue_pkts}; every path's queue is p(queue)
# (DropTail or RED; RED with p(red) = {thresh maxthresh max_p q_weight gentle}).
if {$p(queue) == "RED"} {
    lassign $p(red) th maxth max_p w gentle
    Queue/RED set thresh_ $th
    Queue/RED set maxthresh_ $maxth
    Queue/RED set linterm_ [expr {1.0 / $max_p}]
    Queue/RED set q_weight_ $w
    Queue/RED set gentle_ $gentle
    Queue/RED set queue_in_bytes_ false
    Queue/RED set bytes_ false
    Queue/RED set mean_pktsize_ $p(packet_bytes)
}
set npaths 0
foreach path $p(paths) {
    lassign $path rate delay_ms limit
    set r1($npaths) [$ns node]
    set r2($npaths) [$ns node]
    $ns duplex-link $r1($npaths) $r2($npaths) $rate [expr {$delay_ms / 1000.0}] $p(queue)
    $ns queue-limit $r1($npaths) $r2($npaths) $limit
    route $r1($npaths) $r2($npaths) -default
    route $r2($npaths) $r1($npaths) -default
    set qmon($npaths) [$ns monitor-queue $r1($npaths) $r2($npaths) ""]
    incr npaths
}

# A sender and a receiver node on path j, with their access links.
proc path_pair {j} {
    global r1 r2 p
    return [host_pair $r1($j) $r2($j) $p(access_rate_bps) [expr {$p(sender_delay_ms) / 1000.0}] \
                [expr {$p(receiver_delay_ms) / 1000.0}] $p(access_queue_pkts)]
}

proc new_pair_agent {j} {
    global ns tcpclass
    lassign [path_pair $j] s d
    set tcp [new $tcpclass]
    set sink [new Agent/TCPSink]
    $ns attach-agent $s $tcp
    $ns attach-agent $d $sink
    $ns connect $tcp $sink
    $tcp set sink_ $sink
    $tcp set kind_ none
    return $tcp
}

# Sessions: p(groups) is a list of {count size_pkts path}; path -1 picks a path at random
# for each connection (the diamond's load balancing). Each session has an agent per path
# it may use, reset between its connections.
set ngroups 0
foreach g $p(groups) {
    lassign $g count size path
    set gsize($ngroups) $size
    set gpath($ngroups) $path
    set gcount($ngroups) $count
    for {set i 0} {$i < $count} {incr i} {
        set base($ngroups,$i) 0
        for {set j 0} {$j < $npaths} {incr j} {
            if {$path >= 0 && $path != $j} { continue }
            set a [new_pair_agent $j]
            $a set kind_ session
            $a set group_ $ngroups
            $a set session_ $i
            $a set path_ $j
            set agent($ngroups,$i,$j) $a
        }
        $ns at [expr {$p(start_spread_s) * [$defaultRNG uniform 0 1]}] "start_conn $ngroups $i"
    }
    incr ngroups
}

proc start_conn {g i} {
    global ns agent gsize gpath npaths path_rng
    set j $gpath($g)
    if {$j < 0} { set j [$path_rng integer $npaths] }
    set a $agent($g,$i,$j)
    $a set started_at_ [$ns now]
    $a set rexmit_at_start_ [$a set nrexmit_]
    $a advance $gsize($g)
}

# ns-2 calls `done` when everything up to curseq_ is acknowledged (tcp.cc). A telnet or
# bulk agent may call it too (between messages): ignored.
Agent/TCP instproc done {} {
    global ns base web_pool web_finished
    $self instvar kind_ group_ session_ path_ started_at_ rexmit_at_start_ sink_
    if {$kind_ == "session"} {
        global gsize
        set n $gsize($group_)
        puts "conn $group_ $session_ $path_ $started_at_ [$ns now] $n [expr {[$self set nrexmit_] - $rexmit_at_start_}]"
        incr base($group_,$session_) $n
        $self reset
        $sink_ reset
        $ns at [$ns now] "start_conn $group_ $session_"
    } elseif {$kind_ == "web"} {
        incr web_finished
        $self reset
        $sink_ reset
        lappend web_pool($path_) $self
    }
}

# Telnet: p(telnet) is a list of {count path payload_bytes mean_gap_s}: ns-2's
# Application/Telnet with exponential gaps (interval_ > 0), one packet of payload_bytes each.
foreach t $p(telnet) {
    lassign $t count path payload gap
    for {set i 0} {$i < $count} {incr i} {
        set a [new_pair_agent $path]
        $a set packetSize_ $payload
        $a set kind_ telnet
        set app [new Application/Telnet]
        $app set interval_ $gap
        $app attach-agent $a
        $ns at [expr {$p(start_spread_s) * [$defaultRNG uniform 0 1]}] "$app start"
    }
}

# Web: each line of WEB_ARRIVALS starts a connection on a random path (p(web_path) -1) or
# on p(web_path), from that path's pool of agents (made as needed, reset when done).
set web_started 0
set web_finished 0
for {set j 0} {$j < $npaths} {incr j} { set web_pool($j) {} }
proc start_web {size} {
    global ns web_pool web_started npaths path_rng p
    set j $p(web_path)
    if {$j < 0} { set j [$path_rng integer $npaths] }
    if {[llength $web_pool($j)] > 0} {
        set a [lindex $web_pool($j) end]
        set web_pool($j) [lrange $web_pool($j) 0 end-1]
    } else {
        set a [new_pair_agent $j]
        $a set kind_ web
        $a set path_ $j
    }
    incr web_started
    $a advance $size
}
proc next_web {} {
    global web_arrivals ns
    if {[gets $web_arrivals line] <= 0} { return }
    lassign $line t size
    $ns at $t "start_web $size; next_web"
}
next_web

# In-order packets a session has had acknowledged: its finished connections, plus the
# cumulative ACK (ack_, -1 when reset) of the one in progress.
proc session_acked {g i} {
    global base agent npaths
    set n $base($g,$i)
    for {set j 0} {$j < $npaths} {incr j} {
        if {[info exists agent($g,$i,$j)]} { incr n [expr {[$agent($g,$i,$j) set ack_] + 1}] }
    }
    return $n
}
proc slice {k} {
    global ngroups gcount
    for {set g 0} {$g < $ngroups} {incr g} {
        for {set i 0} {$i < $gcount($g)} {incr i} { puts "slice $k $g $i [session_acked $g $i]" }
    }
}
proc finish {} {
    global qmon npaths web_started web_finished build_s run_started
    for {set j 0} {$j < $npaths} {incr j} {
        puts "path $j [$qmon($j) set parrivals_] [$qmon($j) set pdepartures_] [$qmon($j) set pdrops_] [$qmon($j) set bdepartures_]"
    }
    puts "web $web_started $web_finished"
    puts "wall $build_s [expr {([clock milliseconds] - $run_started) / 1000.0}]"
    exit 0
}
set k 0
for {set t $p(slice_s)} {$t <= $p(duration_s) + 1e-9} {set t [expr {$t + $p(slice_s)}]} {
    $ns at $t "slice $k"
    incr k
}
# After the last slice (events at one time run in the order they were scheduled).
$ns at [expr {$p(duration_s) + 1e-6}] "finish"
set build_s [expr {([clock milliseconds] - $build_started) / 1000.0}]
set run_started [clock milliseconds]
$ns run
