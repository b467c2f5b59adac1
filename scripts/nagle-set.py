import socket, sys, time
# SETs of a big value written in 4 KB pieces from a socket that keeps
# Nagle's algorithm on (no TCP_NODELAY), as Tcl's and Python's own do.
port, size, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(('127.0.0.1', port))
val = b'v' * size
req = b'*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n' % size + val + b'\r\n'
times = []
for _ in range(n):
    t = time.perf_counter()
    for i in range(0, len(req), 4096):
        s.sendall(req[i:i + 4096])
    r = b''
    while not r.endswith(b'\r\n'):
        r += s.recv(64)
    assert r == b'+OK\r\n', r
    times.append((time.perf_counter() - t) * 1000)
times.sort()
print('median_ms=%.2f p90_ms=%.2f' % (times[len(times) // 2], times[len(times) * 9 // 10]))
