#!/usr/bin/env bash
# bench-nagle.sh: big SETs from a client that keeps Nagle's algorithm on,
# redis-server against Sluice builds, interleaved.
#
# Each round starts each server in turn (redis-server first) and times N
# SETs of a D-byte value, each written in 4 KB pieces from one socket
# without TCP_NODELAY (scripts/nagle-set.py), as Tcl's and Python's plain
# sockets write. It prints a line per round: the median and 90th
# percentile time per SET, in ms.
#
# Usage: scripts/bench-nagle.sh ROUNDS D N BIN...
#   e.g. scripts/bench-nagle.sh 5 3000000 40 bin/sluice-server
set -euo pipefail
rounds=$1 D=$2 N=$3
shift 3
dir=$(cd "$(dirname "$0")" && pwd)
. "$dir/bench-lib.sh"
for r in $(seq "$rounds"); do
	line="round $r"
	port=19200
	for bin in redis "$@"; do
		port=$((port + 1))
		start_server "$bin" $port
		line="$line | $(basename "$bin") $(python3 "$dir/nagle-set.py" $port "$D" "$N")"
		stop_server
	done
	echo "$line"
done
