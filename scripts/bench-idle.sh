#!/usr/bin/env bash
# bench-idle.sh: what a server costs when it has little or nothing to do,
# side by side with redis-server: CPU time and wake-ups (its threads'
# voluntary context switches) a second while idle, and CPU time and
# wake-ups a request under sparse traffic.
#
# Each round starts each server in turn (redis-server first, then each
# build given) and measures, one after the other:
#   idle       no client, for IDLE seconds
#   pool       10 connections open and idle (a client's pool), IDLE seconds
#   sparse     one redis-cli sending a PING every GAP seconds, N of them
# It prints a line per round and, at the end, the medians of each figure
# and each build's median ratio to redis-server's in the same round.
#
# Usage: scripts/bench-idle.sh ROUNDS BIN...
#   IDLE (default 5), GAP (default 0.02), N (default 200)
set -euo pipefail
rounds=$1
shift
IDLE=${IDLE:-5}
GAP=${GAP:-0.02}
N=${N:-200}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
. "$(dirname "$0")/bench-lib.sh"
# idle PHASE: after a second's settling, the server's CPU (µs) and
# wake-ups a second over IDLE seconds, added to line.
idle() {
	sleep 1
	local a s b t
	a=$(cpu $pid) s=$(sleeps $pid)
	sleep "$IDLE"
	b=$(cpu $pid) t=$(sleeps $pid)
	line="$line $name:$1-us/s=$(((b - a) / 1000 / IDLE)) $name:$1-wakes/s=$(((t - s) / IDLE))"
}
for r in $(seq "$rounds"); do
	line="round $r"
	port=$((17950 + (r % 5) * 10))
	for bin in redis "$@"; do
		port=$((port + 1))
		start_server "$bin" $port
		name=$(basename "$bin")
		idle idle
		for i in $(seq 10); do
			eval "exec $((i + 10))<>/dev/tcp/127.0.0.1/$port"
		done
		idle pool
		for i in $(seq 10); do
			eval "exec $((i + 10))>&-"
		done
		a=$(cpu $pid) s=$(sleeps $pid)
		redis-cli -p $port -r "$N" -i "$GAP" ping >/dev/null
		b=$(cpu $pid) t=$(sleeps $pid)
		line="$line $name:sparse-us/req=$(((b - a) / 1000 / N)) $name:sparse-wakes/req=$(((t - s) / N))"
		stop_server
	done
	echo "$line" | tee -a "$out"
done
summary "$out"
