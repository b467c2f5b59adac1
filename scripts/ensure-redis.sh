#!/usr/bin/env bash
# Installs redis-server and redis-tools (Debian packages) when they are
# missing: the side-by-side tests compare Sluice with a real redis-server.
set -euo pipefail
# redis-py for clients/ (tests/python/test_redispy.py), when python3 is there.
if command -v python3 >/dev/null && ! python3 -c "import redis" 2>/dev/null; then
  echo "installing redis-py (pip install redis)..." >&2
  python3 -m pip install -q redis 2>/dev/null ||
    python3 -m pip install -q --break-system-packages redis
fi
# node-redis for clients/ (tests/node/test_noderedis.js), when npm is there:
# one package, installed into a cache directory (clients/node_test.go looks
# in the same place).
NODE_REDIS_VERSION=5.12.1
node_dir=${SLUICE_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice-node}
if command -v npm >/dev/null &&
  ! NODE_PATH="$node_dir/node_modules" node -e "require('redis')" 2>/dev/null; then
  echo "installing node-redis (npm install redis@$NODE_REDIS_VERSION into $node_dir)..." >&2
  mkdir -p "$node_dir"
  npm install --silent --no-audit --no-fund --prefix "$node_dir" "redis@$NODE_REDIS_VERSION" >/dev/null
fi
# The TLS tests also use the openssl command (s_client for renegotiation,
# "openssl ciphers" as the reference for cipher strings, an encrypted key).
pkgs=
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || pkgs="redis-server redis-tools"
command -v openssl >/dev/null || pkgs="$pkgs openssl"
if [ -z "$pkgs" ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "installing$pkgs..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null
# Debian's package may start a service on 6379; the tests use their own ports.
