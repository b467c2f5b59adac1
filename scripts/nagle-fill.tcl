# nagle-fill.tcl: how long a 3 MB argument takes to reach a server from
# Tcl's socket, which keeps Nagle's algorithm on, written as Redis's test
# suite writes it (unit/client-eviction): one puts of the command's
# header and 3,000,001 bytes, then flush. Another client polls CLIENT LIST
# until the query buffer holds them all. The time counted runs from the
# building of the string to then; it prints the median, 90th percentile
# and maximum over N uploads, in ms.
#
# Usage: tclsh scripts/nagle-fill.tcl PORT N
set port [lindex $argv 0]; set n [lindex $argv 1]
proc rd {fd} { set l [gets $fd]; if {[string index $l 0] eq "\$"} { set len [string range $l 1 end]; set d [read $fd [expr {$len+2}]]; return $d }; return $l }
set r [socket 127.0.0.1 $port]; fconfigure $r -translation binary
set times {}
for {set i 0} {$i < $n} {incr i} {
  set a [socket 127.0.0.1 $port]; fconfigure $a -translation binary
  puts -nonewline $a "*3\r\n\$6\r\nCLIENT\r\n\$7\r\nSETNAME\r\n\$2\r\nAA\r\n"; flush $a; gets $a
  set q 3000001
  set t0 [clock microseconds]
  puts -nonewline $a [join [list "*1\r\n\$$q\r\n" [string repeat v $q]] ""]; flush $a
  while 1 {
    puts -nonewline $r "*2\r\n\$6\r\nCLIENT\r\n\$4\r\nLIST\r\n"; flush $r
    set cl [rd $r]
    if {[string match "*name=AA *qbuf=$q *" $cl]} break
  }
  lappend times [expr {([clock microseconds]-$t0)/1000.0}]
  close $a
  after 20
}
set s [lsort -real $times]
puts "median [lindex $s [expr {$n/2}]] p90 [lindex $s [expr {$n*9/10}]] max [lindex $s end]"
