#!/usr/bin/env python3
"""fill-big.py: the dataset scripts/bench-fullsync.sh moves around.

Usage: scripts/fill-big.py PORT [SEED]

Writes, in three rounds of ten, the big values of Redis's replication test
"diskless loading short read" (integration/replication.tcl): strings and
members of hashes, sets, sorted sets and lists of up to 1 MB, and streams
of small entries; about 84 MB of values. The same seed gives the same
dataset, so each server gets the same.
"""
import random
import socket
import sys

port = int(sys.argv[1])
rnd = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")


def cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def big(n):
    return b"A" * rnd.randint(0, n)


sent = 0
for k in range(3):
    for i in range(10):
        batch = [
            cmd("SET", f"{k} string_{i}", big(999999)),
            cmd("HSET", f"{k} hash_large", big(9999), big(999999)),
            cmd("SADD", f"{k} set_large", big(999999)),
            cmd("ZADD", f"{k} zset_large", rnd.random(), big(999999)),
            cmd("LPUSH", f"{k} list_large", big(999999)),
        ] + [cmd("XADD", f"{k} stream", "*", "foo", "asdf", "bar", "1234") for _ in range(10)]
        s.sendall(b"".join(batch))
        sent += len(batch)
# The replies: integers, and the streams' ids (bulk strings); an error
# fails the fill.
for _ in range(sent):
    line = f.readline()
    if line.startswith(b"-") or not line:
        sys.exit(f"fill: {line.decode().strip() or 'connection closed'}")
    if line.startswith(b"$"):
        f.readline()
