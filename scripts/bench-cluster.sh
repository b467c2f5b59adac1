#!/usr/bin/env bash
# bench-cluster.sh: sluice-bench throughput -mode cluster against a
# three-master Sluice cluster and a three-master redis-server cluster, side
# by side in interleaved rounds.
#
# Builds sluice-server and sluice-bench from this tree, starts three
# cluster nodes of each server on free local ports (cluster-port given
# explicitly), joins each trio with redis-cli --cluster create, and runs the
# go-redis ClusterClient throughput driver (50% GET / 50% SET, 16-byte keys,
# 64-byte values) against each, plain and autopipelined, alternating which
# server goes first. Prints the median ops/s of each and the ratio.
#
# Usage: scripts/bench-cluster.sh [--rounds N] [--duration D] [--workers N]
set -euo pipefail
rounds=3 duration=5s workers=50
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2;;
    --duration) duration=$2; shift 2;;
    --workers) workers=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/sluice-server" ./cmd/sluice-server
go build -o "$work/sluice-bench" ./cmd/sluice-bench
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
start() { # start KIND DIR PORT BUS
  local bin=$work/sluice-server
  [ "$1" = redis ] && bin=$(command -v redis-server)
  mkdir -p "$2"
  (cd "$2" && exec "$bin" --port "$3" --bind 127.0.0.1 --cluster-enabled yes --cluster-port "$4" \
      --cluster-node-timeout 5000 --save "" --appendonly no --logfile log.txt) &
  pids+=($!)
}
declare -A seeds
for kind in sluice redis; do
  addrs=()
  for i in 1 2 3; do
    p=$(freeport); b=$(freeport)
    start $kind "$work/$kind-$i" "$p" "$b"
    addrs+=("127.0.0.1:$p")
  done
  for a in "${addrs[@]}"; do
    until redis-cli -p "${a#*:}" ping >/dev/null 2>&1; do sleep 0.1; done
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-yes >/dev/null
  for a in "${addrs[@]}"; do
    until redis-cli -p "${a#*:}" cluster info | grep -q cluster_state:ok; do sleep 0.2; done
  done
  seeds[$kind]=$(IFS=,; echo "${addrs[*]}")
done
run() { # run KIND [extra flags] -> ops/s
  local k=$1; shift
  "$work/sluice-bench" throughput -mode cluster -addr "${seeds[$k]}" -workers "$workers" \
    -duration "$duration" -json "$@" 2>/dev/null | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["ops_per_sec"]))'
}
for variant in plain autopipeline; do
  flags=()
  [ $variant = autopipeline ] && flags=(-autopipeline)
  s=() r=()
  for ((i = 0; i < rounds; i++)); do
    if ((i % 2 == 0)); then s+=($(run sluice "${flags[@]}")); r+=($(run redis "${flags[@]}"))
    else r+=($(run redis "${flags[@]}")); s+=($(run sluice "${flags[@]}")); fi
  done
  python3 - "$variant" "${s[*]}" "${r[*]}" <<'PY'
import statistics, sys
v, s, r = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ms, mr = statistics.median(s), statistics.median(r)
print(f"| {v} | {ms:,.0f} | {mr:,.0f} | {ms/mr:.2f} |  rounds sluice={s} redis={r}")
PY
done
