#!/usr/bin/env bash
# bench-compare.sh: Sluice side by side with redis-server under redis-benchmark.
#
# Builds bin/sluice-server from this tree, starts it and redis-server on
# free local ports, and runs the same redis-benchmark suites against both in
# interleaved rounds:
#
#   set/get P1     -c 50 -t set,get -r 100000 -n 200000
#   set/get c1     -c 1 -t set,get -r 100000 -n 200000 (one client: what
#                  each request costs when nothing is batched)
#   set/get P16    -c 50 -t set,get -r 100000 -n 2000000 -P 16
#   set/get 1KB    -c 50 -t set,get -r 100000 -n 200000 -d 1024
#
# or, with --suite types, the data-type tests:
#
#   types P1       -c 50 -r 100000 -n 100000 -t lpush,rpush,lpop,rpop,sadd,
#                  hset,spop,zadd,zpopmin,lrange_100,lrange_600,mset
#   types P16      the same with -P 16 and -n 400000
#
# or, with --suite aof, SET alone (the write path with an append-only
# file; use it with --aof POLICY):
#
#   set P1         -c 50 -t set -r 100000 -n 200000
#   set P16        -c 50 -t set -r 100000 -n 2000000 -P 16
#
# Within a round each test runs against one server and then at once against
# the other, and the first server alternates from round to round, so that
# both meet the machine in the same state (a shared VM's load comes and
# goes over seconds). The tests run one redis-benchmark each, in the suite's
# order, so each server goes through the same sequence of states as under
# one redis-benchmark -t LIST (LRANGE_100 and LRANGE_600 run together, with
# the LPUSH redis-benchmark runs for them first). --interleave suite runs a
# whole suite per redis-benchmark instead (redis, sluice, redis, ...).
#
# It prints, as Markdown tables, the median requests/s and p99 latency of
# each test for both servers with the ratio sluice/redis, and the server CPU
# time per request (utime+stime from /proc/PID/stat around each run).
# With --tls both servers listen on a TLS port only (port 0, tls-port, a
# CA and server and client certificates made with openssl, client
# certificates required) and redis-benchmark and redis-cli connect with
# --tls --cert --key --cacert.
# With --mem it also loads 1,000,000 distinct keys with 64-byte values into
# a fresh instance of each (redis-cli --pipe) and compares their RSS.
#
# Usage: scripts/bench-compare.sh [--rounds N] [--mem | --mem-only] [--scale F]
#   --rounds N   rounds of each suite (default 3, or $BENCH_ROUNDS)
#   --mem        also run the 1M-key memory comparison
#   --mem-only   only the memory comparison
#   --mem-types  only the data-type memory check: a hash, a set and a sorted set of --keys
#                members each, bytes per member in each server
#   --scale F    multiply request counts by F (e.g. 0.25 for a quick look)
#   --keys N     keys for the memory comparison (default 1000000)
#   --suite S    setget (default), types or aof
#   --aof POLICY both servers with appendonly yes and appendfsync POLICY
#                (always, everysec, no), each in a data directory of its own
#   --clients N  redis-benchmark connections (default 50, the issue's -c 50)
#   --threads N  redis-benchmark --threads N (many-core machines: one
#                benchmark thread cannot load a multi-loop server)
#   --server-cpus LIST, --client-cpus LIST
#                pin the servers and redis-benchmark with taskset -c LIST
#   --sluice-bin PATH  run this sluice-server binary instead of building one
#                (machines without Go: build it with CGO_ENABLED=0 elsewhere)
#   --redis-args "ARGS"  extra redis-server arguments, e.g. "--io-threads 4"
#   --sluice-env "K=V ..."  environment for sluice-server, e.g. "SLUICE_SPIN_US=0"
#   --interleave test|suite  what one redis-benchmark run covers (default test)
#   --tls        serve and benchmark over TLS (needs openssl)
# The machine's noise shows in the numbers: compare ratios from the same run.
set -euo pipefail

ROUNDS=${BENCH_ROUNDS:-3}
SCALE=1
THROUGHPUT=1
MEM=0
MEMTYPES=0
KEYS=1000000
CLIENTS=50
BTHREADS=
SERVER_CPUS=
CLIENT_CPUS=
SLUICE_BIN=
REDIS_ARGS=
SLUICE_ENV=
SUITE=setget
INTERLEAVE=test
TLS=0
AOF=
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift 2 ;;
	--rounds=*) ROUNDS=${1#*=}; shift ;;
	--scale) SCALE=$2; shift 2 ;;
	--scale=*) SCALE=${1#*=}; shift ;;
	--keys) KEYS=$2; shift 2 ;;
	--keys=*) KEYS=${1#*=}; shift ;;
	--clients) CLIENTS=$2; shift 2 ;;
	--suite) SUITE=$2; shift 2 ;;
	--interleave) INTERLEAVE=$2; shift 2 ;;
	--threads) BTHREADS=$2; shift 2 ;;
	--server-cpus) SERVER_CPUS=$2; shift 2 ;;
	--client-cpus) CLIENT_CPUS=$2; shift 2 ;;
	--sluice-bin) SLUICE_BIN=$2; shift 2 ;;
	--redis-args) REDIS_ARGS=$2; shift 2 ;;
	--aof) AOF=$2; shift 2 ;;
	--sluice-env) SLUICE_ENV=$2; shift 2 ;;
	--mem) MEM=1; shift ;;
	--tls) TLS=1; shift ;;
	--mem-only) MEM=1; THROUGHPUT=0; shift ;;
	--mem-types) MEMTYPES=1; THROUGHPUT=0; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
	esac
done
case "$ROUNDS" in ''|*[!0-9]*|0) echo "--rounds must be a positive integer" >&2; exit 2 ;; esac
case "$INTERLEAVE" in test|suite) ;; *) echo "--interleave must be test or suite" >&2; exit 2 ;; esac
case "$AOF" in ''|always|everysec|no) ;; *) echo "--aof must be always, everysec or no" >&2; exit 2 ;; esac

NEED=(redis-server redis-benchmark redis-cli awk timeout)
[ -z "$SLUICE_BIN" ] && NEED+=(go)
[ "$TLS" = 1 ] && NEED+=(openssl)
{ [ -n "$SERVER_CPUS" ] || [ -n "$CLIENT_CPUS" ]; } && NEED+=(taskset)
for tool in "${NEED[@]}"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "bench-compare: $tool not found in PATH (apt-get install redis-server redis-tools)" >&2
		exit 1
	fi
done
if [ ! -r /proc/self/stat ]; then
	echo "bench-compare: needs Linux /proc for CPU and RSS figures" >&2
	exit 1
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-compare.XXXXXX")
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]:-}"; do
		[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]:-}"; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

HZ=$(getconf CLK_TCK)

if [ -z "$SLUICE_BIN" ]; then
	echo "building bin/sluice-server..." >&2
	(cd "$ROOT" && go build -o bin/sluice-server ./cmd/sluice-server)
	SLUICE_BIN=$ROOT/bin/sluice-server
fi
# on_cpus LIST cmd...: execs cmd, pinned to LIST when LIST is set. Only
# call it in a subshell (a background job or a command substitution): the
# exec keeps $! the server's own PID, for the CPU and RSS figures.
on_cpus() {
	local cpus=$1
	shift
	if [ -n "$cpus" ]; then exec taskset -c "$cpus" "$@"; else exec "$@"; fi
}
BENCH_EXTRA=()
[ -n "$BTHREADS" ] && BENCH_EXTRA+=(--threads "$BTHREADS")
# TLS: a CA, a server and a client certificate (RSA 2048, as Redis's
# utils/gen-test-certs.sh makes them); CLI_TLS are the clients' arguments.
CLI_TLS=()
SERVER_TLS=()
if [ "$TLS" = 1 ]; then
	T=$WORK/tls
	mkdir -p "$T"
	openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 2 -subj "/CN=bench CA" -keyout "$T/ca.key" -out "$T/ca.crt" 2>/dev/null
	for who in server client; do
		openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=$who" -keyout "$T/$who.key" -out "$T/$who.csr" 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$T/ext.cnf"
		openssl x509 -req -sha256 -days 2 -in "$T/$who.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial -extfile "$T/ext.cnf" -out "$T/$who.crt" 2>/dev/null
	done
	CLI_TLS=(--tls --cert "$T/client.crt" --key "$T/client.key" --cacert "$T/ca.crt")
	SERVER_TLS=(--tls-cert-file "$T/server.crt" --tls-key-file "$T/server.key" --tls-ca-cert-file "$T/ca.crt")
fi

# free_port prints a TCP port nothing listens on.
free_port() {
	local p
	for _ in $(seq 1 100); do
		# below the kernel's ephemeral range (32768-60999), which the
		# benchmark's own client connections use
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "no free port found" >&2
	return 1
}

wait_ready() { # port pid name
	for _ in $(seq 1 200); do
		if [ "$(timeout 2 redis-cli "${CLI_TLS[@]}" -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = "PONG" ]; then
			return 0
		fi
		if ! kill -0 "$2" 2>/dev/null; then
			echo "$3 exited; its log:" >&2
			cat "$WORK/$3.log" >&2 || true
			return 1
		fi
		sleep 0.05
	done
	echo "$3 did not answer PING on port $1" >&2
	return 1
}

# start_server name: starts redis or sluice; sets <NAME>_PORT and <NAME>_PID.
start_server() {
	local name=$1 port pid
	port=$(free_port)
	local common=(--port "$port" --bind 127.0.0.1 --save "" --logfile "$WORK/$name.log")
	[ "$TLS" = 1 ] && common=(--port 0 --tls-port "$port" "${SERVER_TLS[@]}" --bind 127.0.0.1 --save "" --logfile "$WORK/$name.log")
	if [ -n "$AOF" ]; then
		common+=(--appendonly yes --appendfsync "$AOF")
	else
		common+=(--appendonly no)
	fi
	# a data directory each: with --aof both write an appendonlydir
	rm -rf "${WORK:?}/$name.dir"
	mkdir -p "$WORK/$name.dir"
	if [ "$name" = redis ]; then
		# shellcheck disable=SC2086 # REDIS_ARGS is a word list
		on_cpus "$SERVER_CPUS" redis-server "${common[@]}" --protected-mode no --dir "$WORK/$name.dir" $REDIS_ARGS &
	else
		# shellcheck disable=SC2086 # SLUICE_ENV is a word list
		on_cpus "$SERVER_CPUS" env $SLUICE_ENV "$SLUICE_BIN" "${common[@]}" --dir "$WORK/$name.dir" &
	fi
	pid=$!
	PIDS+=("$pid")
	wait_ready "$port" "$pid" "$name"
	if [ "$name" = redis ]; then REDIS_PORT=$port REDIS_PID=$pid; else SLUICE_PORT=$port SLUICE_PID=$pid; fi
}

stop_server() { # pid
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

cpu_ticks() { # pid: utime+stime in clock ticks (fields 14 and 15; comm may hold spaces)
	sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

pipe_load() { # port what: sends $WORK/load.resp with redis-cli --pipe; every reply must be a success
	local out
	out=$(on_cpus "$CLIENT_CPUS" timeout 600 redis-cli "${CLI_TLS[@]}" -h 127.0.0.1 -p "$1" --pipe <"$WORK/load.resp" 2>&1)
	if ! printf '%s\n' "$out" | grep -q "errors: 0, replies: $KEYS"; then
		echo "loading $2 failed: $out" >&2
		exit 1
	fi
}

scaled() { awk -v n="$1" -v s="$SCALE" 'BEGIN { v = int(n * s); if (v < 1000) v = 1000; print v }'; }

# results.tsv: suite, test, server, round, rps, p99 ms
# cpu.tsv:     suite, server, round, CPU clock ticks, requests
: >"$WORK/results.tsv"
: >"$WORK/cpu.tsv"

run_one() { # suite server port pid round requests-per-test benchmark-args...
	local suite=$1 server=$2 port=$3 pid=$4 round=$5 n=$6
	shift 6
	local before after out ntests
	before=$(cpu_ticks "$pid")
	if ! out=$(on_cpus "$CLIENT_CPUS" timeout 900 redis-benchmark "${CLI_TLS[@]}" -h 127.0.0.1 -p "$port" --csv -n "$n" "${BENCH_EXTRA[@]}" "$@" 2>"$WORK/bench.err"); then
		echo "redis-benchmark failed against $server ($suite):" >&2
		cat "$WORK/bench.err" >&2
		exit 1
	fi
	after=$(cpu_ticks "$pid")
	# CSV: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	ntests=$(printf '%s\n' "$out" | awk -F'"' -v suite="$suite" -v server="$server" -v round="$round" -v f="$WORK/results.tsv" '
		$2 != "" && $2 != "test" { printf "%s\t%s\t%s\t%s\t%s\t%s\n", suite, $2, server, round, $4, $14 >> f; n++ }
		END { print n + 0 }')
	if [ "$ntests" -eq 0 ]; then
		echo "no CSV results from redis-benchmark against $server ($suite):" >&2
		printf '%s\n' "$out" >&2
		exit 1
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$suite" "$server" "$round" $((after - before)) $((n * ntests)) >>"$WORK/cpu.tsv"
	printf '  %-12s %-7s round %s: %s\n' "$suite" "$server" "$round" \
		"$(printf '%s\n' "$out" | awk -F'"' '$2 != "" && $2 != "test" { printf "%s %s rps  ", $2, $4 }')" >&2
}

if [ "$THROUGHPUT" = 1 ]; then
	start_server redis
	start_server sluice
	echo "redis-server pid $REDIS_PID port $REDIS_PORT; sluice-server pid $SLUICE_PID port $SLUICE_PORT; $ROUNDS round(s)" >&2
	N1=$(scaled 200000)
	N16=$(scaled 2000000)
	# name|requests per test|tests|other redis-benchmark arguments
	case "$SUITE" in
	setget)
		SUITES=(
			"set/get P1|$N1|set,get|-c $CLIENTS -r 100000 -P 1"
			"set/get c1|$N1|set,get|-c 1 -r 100000 -P 1"
			"set/get P16|$N16|set,get|-c $CLIENTS -r 100000 -P 16"
			"set/get 1KB|$N1|set,get|-c $CLIENTS -r 100000 -d 1024"
		)
		;;
	types)
		TYPES=lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,lrange_600,mset
		SUITES=(
			"types P1|$(scaled 100000)|$TYPES|-c $CLIENTS -r 100000 -P 1"
			"types P16|$(scaled 400000)|$TYPES|-c $CLIENTS -r 100000 -P 16"
		)
		;;
	aof)
		SUITES=(
			"set P1|$N1|set|-c $CLIENTS -r 100000 -P 1"
			"set P16|$N16|set|-c $CLIENTS -r 100000 -P 16"
		)
		;;
	*) echo "--suite must be setget, types or aof" >&2; exit 2 ;;
	esac
	for round in $(seq 1 "$ROUNDS"); do
		order=(redis sluice)
		if [ "$INTERLEAVE" = test ] && [ $((round % 2)) = 0 ]; then order=(sluice redis); fi
		for s in "${SUITES[@]}"; do
			IFS='|' read -r suite n tests args <<<"$s"
			if [ "$INTERLEAVE" = test ]; then
				# one group per test; the LRANGE tests share their LPUSH
				groups=$(printf '%s\n' "${tests//,/ }" | tr ' ' '\n' | awk '
					/^lrange/ { lr = lr (lr ? "," : "") $0; next }
					{ if (lr) { print lr; lr = "" } print }
					END { if (lr) print lr }')
			else
				groups=$tests
			fi
			for g in $groups; do
				for server in "${order[@]}"; do
					if [ "$server" = redis ]; then port=$REDIS_PORT pid=$REDIS_PID; else port=$SLUICE_PORT pid=$SLUICE_PID; fi
					# shellcheck disable=SC2086 # args is a word list
					run_one "$suite" "$server" "$port" "$pid" "$round" "$n" -t "$g" $args
				done
			done
		done
	done
	stop_server "$SLUICE_PID"
	stop_server "$REDIS_PID"

	echo
	echo "### Throughput${CLI_TLS:+ over TLS} (median of $ROUNDS round(s)${AOF:+, appendonly yes, appendfsync $AOF}, redis-benchmark $(redis-benchmark --version | awk '{print $2}') -c $CLIENTS${BTHREADS:+ --threads $BTHREADS}, $(nproc) CPUs${SERVER_CPUS:+, servers on CPUs $SERVER_CPUS}${CLIENT_CPUS:+, client on CPUs $CLIENT_CPUS}${SLUICE_ENV:+, sluice-server with $SLUICE_ENV}; load average at the end $(cut -d' ' -f1-3 /proc/loadavg))"
	echo
	echo "| suite | test | redis rps | sluice rps | sluice/redis | redis p99 ms | sluice p99 ms | sluice/redis p99 |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|"
	awk -F'\t' '
		function median(list,   a, n, i, j, t) {
			n = split(list, a, " ")
			for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{
			key = $1 "\t" $2
			if (!(key in seen)) { seen[key] = 1; order[++k] = key }
			rps[key, $3] = rps[key, $3] " " $5
			p99[key, $3] = p99[key, $3] " " $6
		}
		END {
			for (i = 1; i <= k; i++) {
				key = order[i]; split(key, f, "\t")
				rr = median(rps[key, "redis"]); rs = median(rps[key, "sluice"])
				pr = median(p99[key, "redis"]); ps = median(p99[key, "sluice"])
				printf "| %s | %s | %.0f | %.0f | %.2f | %.3f | %.3f | %s |\n", f[1], f[2], rr, rs, rs / rr, pr, ps, (pr > 0 ? sprintf("%.2f", ps / pr) : "-")
			}
		}' "$WORK/results.tsv"
	echo
	echo "### Server CPU time per request (utime+stime, median of $ROUNDS round(s))"
	echo
	echo "| suite | redis µs/req | sluice µs/req | sluice/redis |"
	echo "|---|---:|---:|---:|"
	awk -F'\t' '
		function median(list,   a, n, i, j, t) {
			n = split(list, a, " ")
			for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{
			if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 }
			if (!(($1, $2, $3) in ticks)) runs[$1, $2] = runs[$1, $2] " " $3
			ticks[$1, $2, $3] += $4; reqs[$1, $2, $3] += $5
		}
		END {
			for (key in runs) {
				split(key, f, SUBSEP); n = split(runs[key], r, " ")
				for (j = 1; j <= n; j++) cpu[key] = cpu[key] " " ticks[f[1], f[2], r[j]] * 1e6 / hz / reqs[f[1], f[2], r[j]]
			}
			for (i = 1; i <= k; i++) {
				s = order[i]; cr = median(cpu[s, "redis"]); cs = median(cpu[s, "sluice"])
				printf "| %s | %.2f | %.2f | %s |\n", s, cr, cs, (cr > 0 ? sprintf("%.2f", cs / cr) : "-")
			}
		}' hz="$HZ" "$WORK/cpu.tsv"
	echo
	echo "(CPU per request is measured with $HZ ticks/s resolution; the Sluice figure includes its Go runtime threads.)"
fi

if [ "$MEM" = 1 ]; then
	echo "generating $KEYS SET commands with 64-byte values..." >&2
	awk -v n="$KEYS" 'BEGIN {
		for (i = 0; i < n; i++) {
			k = sprintf("key:%010d", i)
			v = sprintf("%064d", i)
			printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$64\r\n%s\r\n", length(k), k, v
		}
	}' >"$WORK/load.resp"
	last=$(printf 'key:%010d' $((KEYS - 1)))
	lastval=$(printf '%064d' $((KEYS - 1)))
	echo
	echo "### Memory: $KEYS keys, 64-byte values (VmRSS)"
	echo
	echo "| server | RSS before KB | RSS after KB | (after-before)/key bytes | load s |"
	echo "|---|---:|---:|---:|---:|"
	for name in redis sluice; do
		start_server "$name"
		if [ "$name" = redis ]; then port=$REDIS_PORT pid=$REDIS_PID; else port=$SLUICE_PORT pid=$SLUICE_PID; fi
		before=$(rss_kb "$pid")
		t0=$(date +%s.%N)
		pipe_load "$port" "$name"
		t1=$(date +%s.%N)
		got=$(timeout 10 redis-cli "${CLI_TLS[@]}" -h 127.0.0.1 -p "$port" get "$last")
		if [ "$got" != "$lastval" ]; then
			echo "$name: GET $last returned '$got'" >&2
			exit 1
		fi
		sleep 1
		after=$(rss_kb "$pid")
		eval "RSS_$name=$after"
		awk -v n="$name" -v b="$before" -v a="$after" -v k="$KEYS" -v t0="$t0" -v t1="$t1" \
			'BEGIN { printf "| %s | %d | %d | %.1f | %.1f |\n", n, b, a, (a - b) * 1024 / k, t1 - t0 }'
		stop_server "$pid"
	done
	# shellcheck disable=SC2154 # set by eval above
	awk -v r="$RSS_redis" -v s="$RSS_sluice" 'BEGIN { printf "\nRSS ratio sluice/redis: %.2f\n", s / r }'
fi

if [ "$MEMTYPES" = 1 ]; then
	echo
	echo "### Memory: one hash, set and sorted set of $KEYS members each (VmRSS growth per member)"
	echo
	echo "| type | redis bytes/member | sluice bytes/member | sluice/redis |"
	echo "|---|---:|---:|---:|"
	for typ in hash set zset; do
		awk -v n="$KEYS" -v t="$typ" 'BEGIN {
			for (i = 0; i < n; i++) {
				m = sprintf("member:%d", i)
				if (t == "hash") printf "*4\r\n$4\r\nHSET\r\n$6\r\nmyhash\r\n$%d\r\n%s\r\n$%d\r\nvalue:%d\r\n", length(m), m, length(sprintf("value:%d", i)), i
				else if (t == "set") printf "*3\r\n$4\r\nSADD\r\n$5\r\nmyset\r\n$%d\r\n%s\r\n", length(m), m
				else printf "*4\r\n$4\r\nZADD\r\n$6\r\nmyzset\r\n$%d\r\n%d\r\n$%d\r\n%s\r\n", length(sprintf("%d", i)), i, length(m), m
			}
		}' >"$WORK/load.resp"
		for name in redis sluice; do
			start_server "$name"
			if [ "$name" = redis ]; then port=$REDIS_PORT pid=$REDIS_PID; else port=$SLUICE_PORT pid=$SLUICE_PID; fi
			before=$(rss_kb "$pid")
			pipe_load "$port" "$name ($typ)"
			sleep 1
			after=$(rss_kb "$pid")
			eval "PER_$name=$(awk -v b="$before" -v a="$after" -v k="$KEYS" 'BEGIN { printf "%.1f", (a - b) * 1024 / k }')"
			stop_server "$pid"
		done
		# shellcheck disable=SC2154 # set by eval above
		awk -v t="$typ" -v r="$PER_redis" -v s="$PER_sluice" 'BEGIN { printf "| %s | %.1f | %.1f | %.2f |\n", t, r, s, s / r }'
	done
fi
