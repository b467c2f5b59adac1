#!/usr/bin/env bash
# bench-ab.sh: server CPU per request of several builds against redis-server,
# interleaved, for before/after comparisons of a change.
#
# Each round starts each server in turn (redis-server first, then each
# build given), fills it with SET -P 16 (-r 100000: the keys the cases then
# read and overwrite, as redis-benchmark -t set,get does), and runs the
# cases one redis-benchmark each, reading the server's CPU time (the sum
# of its threads' /proc schedstat run times, in ns) and its threads'
# voluntary context switches (sleeps) around each. It prints a line per
# round and, at the end (bench-lib.sh's summary), the medians and each
# build's median and mean ratio to redis-server's in the same round of:
# CPU per request in ns (case TESTPIPELINE, e.g. get16), rps (rps-get16)
# and sleeps per 100k requests (sleeps-get16).
#
# Usage: scripts/bench-ab.sh ROUNDS BIN...
#   CASES   "TEST PIPELINE REQUESTS|...", default
#           "get 16 1000000|get 1 150000|set 1 150000|set 16 1000000"
#   C       clients (default 50); D: value size (redis-benchmark -d)
set -euo pipefail
rounds=$1
shift
CASES=${CASES:-"get 16 1000000|get 1 150000|set 1 150000|set 16 1000000"}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
. "$(dirname "$0")/bench-lib.sh"
for r in $(seq "$rounds"); do
	line="round $r"
	port=$((17900 + (r % 5) * 10))
	for bin in redis "$@"; do
		port=$((port + 1))
		start_server "$bin" $port
		timeout 120 redis-benchmark -p $port -c 50 -n 300000 -r 100000 -t set -P 16 -q >/dev/null 2>&1
		IFS='|' read -ra cases <<<"$CASES"
		for c in "${cases[@]}"; do
			read -r t p n <<<"$c"
			a=$(cpu $pid)
			sa=$(sleeps $pid)
			rps=$(timeout 120 redis-benchmark -p $port -c "${C:-50}" -n "$n" -r 100000 -t "$t" -P "$p" ${D:+-d $D} -q 2>&1 |
				tr '\r' '\n' | grep "per second" | tail -1 | awk '{print int($2)}')
			b=$(cpu $pid)
			sb=$(sleeps $pid)
			name=$(basename "$bin")
			line="$line $name:$t$p=$(((b - a) / n)) $name:rps-$t$p=${rps:-0} $name:sleeps-$t$p=$(((sb - sa) * 100000 / n))"
		done
		stop_server
	done
	echo "$line" | tee -a "$out"
done
summary "$out"
