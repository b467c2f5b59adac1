#!/usr/bin/env python3
"""redis-py round trips against a Redis-compatible server.

Usage: test_redispy.py HOST:PORT

With REDIS_TLS_CA set the connections use TLS (ssl=True), trusting that CA
and presenting REDIS_TLS_CERT/REDIS_TLS_KEY as the client certificate.

Run by clients/clients_test.go against an in-process Sluice (and against a
real redis-server, so the expectations below are checked on the reference
too). Exits 0 when every check passes; prints one line per check.
"""
import os
import sys
import time

import redis


def check(name, got, want):
    if got != want:
        print(f"FAIL {name}: got {got!r}, want {want!r}")
        sys.exit(1)
    print(f"ok   {name}")


def supports_resp3():
    try:
        major = int(redis.__version__.split(".")[0])
    except ValueError:
        return False
    return major >= 5


def run(host, port, protocol):
    tag = f"resp{protocol}"
    kw = {"host": host, "port": port, "decode_responses": True}
    if os.environ.get("REDIS_TLS_CA"):
        tag += "-tls"
        kw.update(ssl=True, ssl_ca_certs=os.environ["REDIS_TLS_CA"],
                  ssl_certfile=os.environ.get("REDIS_TLS_CERT"),
                  ssl_keyfile=os.environ.get("REDIS_TLS_KEY"))
    if protocol == 3:
        kw["protocol"] = 3
    elif supports_resp3():
        kw["protocol"] = 2
    r = redis.Redis(**kw)
    r.flushall()

    # MULTI ... EXEC through a transactional pipeline.
    with r.pipeline(transaction=True) as p:
        p.set("tx:s", "10")
        p.incr("tx:s")
        p.get("tx:s")
        p.lpush("tx:l", "a", "b", "c")
        p.lrange("tx:l", 0, -1)
        res = p.execute()
    check(f"{tag} pipeline(transaction=True)", res, [True, 11, "11", 3, ["c", "b", "a"]])

    # A queued command that fails at run time: EXEC still runs the rest;
    # redis-py raises the first error after reading every reply.
    with r.pipeline(transaction=True) as p:
        p.set("tx:str", "x")
        p.lpush("tx:str", "y")  # WRONGTYPE at EXEC time
        p.get("tx:str")
        try:
            p.execute()
            check(f"{tag} EXEC with a failing command raises", "no error", "ResponseError")
        except redis.ResponseError as e:
            check(f"{tag} EXEC with a failing command raises", str(e).split(" ")[0], "Command")
    check(f"{tag} commands around the failed one ran", r.get("tx:str"), "x")

    # raise_on_error=False returns the error in place.
    with r.pipeline(transaction=True) as p:
        p.set("tx:str", "x")
        p.lpush("tx:str", "y")
        p.get("tx:str")
        res = p.execute(raise_on_error=False)
    check(f"{tag} error in place: first", res[0], True)
    check(f"{tag} error in place: second is an error", isinstance(res[1], redis.ResponseError), True)
    check(f"{tag} error in place: text", str(res[1]).startswith("WRONGTYPE"), True)
    check(f"{tag} error in place: third", res[2], "x")

    # WATCH-based optimistic transaction with r.transaction.
    r.set("tx:counter", "5")

    def double(pipe):
        v = int(pipe.get("tx:counter"))
        pipe.multi()
        pipe.set("tx:counter", v * 2)

    res = r.transaction(double, "tx:counter")
    check(f"{tag} transaction() result", res, [True])
    check(f"{tag} transaction() value", r.get("tx:counter"), "10")

    # A concurrent write between WATCH and EXEC makes redis-py retry.
    other = redis.Redis(**kw)
    calls = []

    def racy(pipe):
        v = int(pipe.get("tx:counter"))
        if not calls:
            other.set("tx:counter", "100")  # invalidates the WATCH once
        calls.append(v)
        pipe.multi()
        pipe.set("tx:counter", v + 1)

    r.transaction(racy, "tx:counter")
    check(f"{tag} WATCH conflict retried", calls, [10, 100])
    check(f"{tag} WATCH retry value", r.get("tx:counter"), "101")

    # Explicit WATCH then EXEC aborted: WatchError.
    with r.pipeline(transaction=True) as p:
        p.watch("tx:w")
        p.multi()
        p.set("tx:w", "mine")
        other.set("tx:w", "theirs")
        try:
            p.execute()
            check(f"{tag} aborted EXEC raises WatchError", "no error", "WatchError")
        except redis.WatchError:
            check(f"{tag} aborted EXEC raises WatchError", True, True)
    check(f"{tag} aborted EXEC left the value", r.get("tx:w"), "theirs")

    # Pub/sub round trip.
    ps = r.pubsub()
    ps.subscribe("news")
    msg = ps.get_message(timeout=2)
    check(f"{tag} subscribe confirmation", (msg["type"], msg["channel"], msg["data"]), ("subscribe", "news", 1))
    ps.psubscribe("n*")
    msg = ps.get_message(timeout=2)
    check(f"{tag} psubscribe confirmation", (msg["type"], msg["channel"], msg["data"]), ("psubscribe", "n*", 2))
    check(f"{tag} publish receivers", other.publish("news", "hello"), 2)
    got = []
    deadline = time.time() + 3
    while len(got) < 2 and time.time() < deadline:
        m = ps.get_message(timeout=1)
        if m:
            got.append((m["type"], m["channel"], m["data"], m["pattern"]))
    got.sort()
    check(f"{tag} messages", got, [("message", "news", "hello", None), ("pmessage", "news", "hello", "n*")])
    check(f"{tag} PUBSUB NUMSUB", other.pubsub_numsub("news"), [("news", 1)])
    ps.unsubscribe("news")
    ps.punsubscribe("n*")
    types = []
    deadline = time.time() + 3
    while len(types) < 2 and time.time() < deadline:
        m = ps.get_message(timeout=1)
        if m:
            types.append((m["type"], m["data"]))
    check(f"{tag} unsubscribe confirmations", sorted(types), [("punsubscribe", 0), ("unsubscribe", 1)])
    ps.close()
    check(f"{tag} no subscribers left", other.publish("news", "again"), 0)

    if protocol == 3:
        check("resp3 HELLO proto", r.execute_command("HELLO", "3")["proto"], 3)
        check("resp3 HGETALL is a map", r.hgetall("nokey"), {})
    other.close()
    r.close()


def main():
    host, _, port = sys.argv[1].rpartition(":")
    run(host, int(port), 2)
    if supports_resp3():
        run(host, int(port), 3)
    else:
        print(f"skip resp3: redis-py {redis.__version__} has no protocol=3")
    print("PASS")


if __name__ == "__main__":
    main()
