# bench-lib.sh: what the side-by-side benchmark scripts share; sourced.

# sum_tasks PID FILE PROG: the sum, over the process's threads, of the
# number awk PROG prints from each thread's FILE.
sum_tasks() {
	local s=0 t
	for t in /proc/"$1"/task/*; do
		s=$((s + $(awk "$3" "$t/$2" 2>/dev/null || echo 0)))
	done
	echo $s
}
# cpu PID: the process's CPU time, in ns (its threads' schedstat run times).
cpu() { sum_tasks "$1" schedstat '{print $1}'; }
# sleeps PID: its threads' voluntary context switches.
sleeps() { sum_tasks "$1" status '/^voluntary_ctxt_switches/ {print $2}'; }

# start_server BIN PORT: starts redis-server (BIN "redis") or a Sluice
# build on PORT, without persistence, waits until it answers, and sets
# pid to its process.
start_server() {
	if [ "$1" = redis ]; then
		redis-server --port "$2" --save '' --appendonly no >/dev/null 2>&1 &
	else
		"$1" --port "$2" --save '' >/dev/null 2>&1 &
	fi
	pid=$!
	for _ in $(seq 50); do redis-cli -p "$2" ping >/dev/null 2>&1 && break; sleep 0.1; done
}

# stop_server: stops the server start_server started last.
stop_server() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

# summary FILE: from lines of NAME:CASE=VALUE figures (a line a round,
# NAME "redis" for redis-server), each case's median for each server, and
# each build's median and mean ratio to redis-server's in the same round.
summary() {
	python3 - "$1" <<'PY'
import re, statistics as st, sys
d, names, cases = {}, [], []
for l in open(sys.argv[1]):
    for m in re.finditer(r'(\S+):(\S+?)=(\d+)', l):
        n, c, v = m.group(1), m.group(2), int(m.group(3))
        names += [n] if n not in names else []
        cases += [c] if c not in cases else []
        d.setdefault((c, n), []).append(v)
for c in cases:
    r = d[(c, 'redis')]
    row = [f"{c:18} redis {st.median(r)}"]
    for n in names[1:]:
        v = d.get((c, n), [])
        x = [a / b for a, b in zip(v, r) if b]
        row.append(f"{n} {st.median(v)}" + (f" x{st.median(x):.3f} (mean {st.mean(x):.3f})" if x else ""))
    print(" | ".join(row))
PY
}
