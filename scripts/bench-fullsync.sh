#!/usr/bin/env bash
# bench-fullsync.sh: how long a server takes to move a dataset of big
# values (scripts/fill-big.py, about 84 MB), side by side with
# redis-server:
#   master    a full sync streamed to a redis-server replica (diskless:
#             repl-diskless-sync yes, delay 0; the replica loads it with
#             repl-diskless-load swapdb), from the replica's "Loading DB in
#             memory" to its "Finished with success", in ms
#   replica   the same, from a redis-server master to this server
#   save      the third SAVE, in ms (redis-cli's wall time)
#   load      loading that file at start ("DB loaded from disk"), in ms
# rdbcompression is off everywhere, as in the test the dataset comes from.
# Each round measures redis-server first, then each build given. It prints
# a line per round and, at the end, the medians and each build's median
# ratio to redis-server's in the same round.
#
# Usage: scripts/bench-fullsync.sh ROUNDS BIN...
set -euo pipefail
rounds=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bench-lib.sh"
out=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$out" "$work"' EXIT
# bin NAME: the executable of NAME ("redis": redis-server).
bin() { if [ "$1" = redis ]; then echo redis-server; else echo "$1"; fi; }
# logms LOG PATTERN: the time of LOG's last line matching PATTERN, in ms
# since the epoch's day began (both servers log "%d %b %Y %H:%M:%S.%ms").
logms() {
	grep "$2" "$1" | tail -1 | awk '{split($5, t, "[:.]"); print ((t[1] * 60 + t[2]) * 60 + t[3]) * 1000 + t[4]}'
}
# sync MASTER REPLICA PORT: the ms a full sync of the dataset takes.
sync() {
	local d=$work/sync m r
	rm -rf "$d" && mkdir -p "$d"
	"$(bin "$1")" --port "$3" --dir "$d" --save '' --logfile m.log --rdbcompression no \
		--repl-diskless-sync yes --repl-diskless-sync-delay 0 >/dev/null 2>&1 &
	m=$!
	"$(bin "$2")" --port $(($3 + 1)) --dir "$d" --save '' --logfile r.log --dbfilename r.rdb \
		--repl-diskless-load swapdb >/dev/null 2>&1 &
	r=$!
	for _ in $(seq 50); do redis-cli -p "$3" ping >/dev/null 2>&1 && redis-cli -p $(($3 + 1)) ping >/dev/null 2>&1 && break; sleep 0.1; done
	python3 "$here/fill-big.py" "$3"
	redis-cli -p $(($3 + 1)) replicaof 127.0.0.1 "$3" >/dev/null
	for _ in $(seq 600); do grep -q "Finished with success" "$d/r.log" && break; sleep 0.05; done
	kill -9 $m $r
	wait $m $r 2>/dev/null || true
	echo $(($(logms "$d/r.log" "Finished with success") - $(logms "$d/r.log" "Loading DB in memory")))
}
# saveload NAME PORT: "SAVE-ms LOAD-ms" for the dataset on NAME.
saveload() {
	local d=$work/save p a b ms
	rm -rf "$d" && mkdir -p "$d"
	"$(bin "$1")" --port "$2" --dir "$d" --save '' --rdbcompression no >/dev/null 2>&1 &
	p=$!
	for _ in $(seq 50); do redis-cli -p "$2" ping >/dev/null 2>&1 && break; sleep 0.1; done
	python3 "$here/fill-big.py" "$2"
	# The third SAVE is timed: on this VM a process's first SAVEs write
	# into pages the host has not backed yet (copying into the page cache
	# took 40% of their samples), whichever server makes them.
	for _ in 1 2 3; do
		a=$(date +%s%N)
		redis-cli -p "$2" save >/dev/null
		b=$(date +%s%N)
	done
	kill -9 $p
	wait $p 2>/dev/null || true
	# Another port: builds before 980f369 held theirs a few ms after kill -9.
	"$(bin "$1")" --port $(($2 + 2)) --dir "$d" --save '' --logfile l.log >/dev/null 2>&1 &
	p=$!
	for _ in $(seq 100); do grep -q "DB loaded from disk" "$d/l.log" 2>/dev/null && break; sleep 0.1; done
	kill -9 $p
	wait $p 2>/dev/null || true
	ms=$(grep "DB loaded from disk" "$d/l.log" | awk '{printf "%d", $(NF-1) * 1000}')
	echo "$(((b - a) / 1000000)) $ms"
}
for r in $(seq "$rounds"); do
	line="round $r"
	port=$((18950 + (r % 5) * 10))
	for b in redis "$@"; do
		name=$(basename "$b")
		line="$line $name:master-ms=$(sync "$b" redis $port)"
		line="$line $name:replica-ms=$(sync redis "$b" $port)"
		read -r s l < <(saveload "$b" $port)
		line="$line $name:save-ms=$s $name:load-ms=$l"
	done
	echo "$line" | tee -a "$out"
done
summary "$out"
