#!/usr/bin/env python3
"""sparse-ping.py: round trips of PINGs sent one at a time after a silence.

Usage: scripts/sparse-ping.py PORT GAP N

Sends N PINGs over one connection (TCP_NODELAY), each GAP seconds after the
last reply, and prints the round trips' p50, p99 and maximum in µs: the
latency a request pays when the server has been idle for GAP (see
docs/benchmarks.md, "Idle and sparse traffic"). Run it against each server
in turn, side by side.
"""
import socket
import sys
import time

port, gap, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
lat = []
for _ in range(n):
    time.sleep(gap)
    t = time.perf_counter_ns()
    s.sendall(b"*1\r\n$4\r\nPING\r\n")
    reply = s.recv(100)
    lat.append((time.perf_counter_ns() - t) / 1000)
    if reply != b"+PONG\r\n":
        sys.exit(f"unexpected reply {reply!r}")
lat.sort()
print(f"p50 {lat[n // 2]:.0f} µs, p99 {lat[n * 99 // 100]:.0f} µs, max {lat[-1]:.0f} µs")
