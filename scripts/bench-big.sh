#!/usr/bin/env bash
# bench-big.sh: big values, redis-server against Sluice builds, interleaved.
#
# Each round starts each server in turn (redis-server first), fills it with
# N/4 SETs of D-byte values over 200 keys, and measures one redis-benchmark
# run of T (default set) with N requests from C clients, reading the
# server's CPU time (the sum of its threads' /proc schedstat run times)
# around it. It prints a line per round: rps and CPU per request in µs.
#
# Usage: scripts/bench-big.sh ROUNDS D N C BIN...
#   e.g. scripts/bench-big.sh 3 500000 3000 4 bin/sluice-server
#   T=get for GETs of the values the fill stored.
set -euo pipefail
rounds=$1 D=$2 N=$3 C=$4
shift 4
. "$(dirname "$0")/bench-lib.sh"
for r in $(seq "$rounds"); do
	line="round $r"
	port=19100
	for bin in redis "$@"; do
		port=$((port + 1))
		start_server "$bin" $port
		redis-benchmark -p $port -t set -d "$D" -n $((N / 4)) -c "$C" -r 200 -q >/dev/null 2>&1
		c0=$(cpu $pid)
		out=$(redis-benchmark -p $port -t "${T:-set}" -d "$D" -n "$N" -c "$C" -r 200 -q 2>&1 | tr '\r' '\n' | grep 'per second' | tail -1)
		c1=$(cpu $pid)
		line="$line | $(basename "$bin") rps=$(echo "$out" | awk '{print $2}') cpu/req_us=$(((c1 - c0) / N / 1000))"
		stop_server
	done
	echo "$line"
done
