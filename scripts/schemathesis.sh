#!/bin/sh
# Fuzz the HTTP service against its own OpenAPI document: gisnet serve --sample on a
# free loopback port, then schemathesis with every check, a fixed seed and a bounded
# number of examples per operation. Exit status 0 when schemathesis finds nothing.
#
#   scripts/schemathesis.sh [EXAMPLES]      (default 30 examples per operation)
set -eu
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
ST=${SCHEMATHESIS:-schemathesis}
EXAMPLES=${1:-30}
PORT=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
MAPS=$(mktemp -d)   # the served map folder (empty), and where schemathesis keeps its cache
$PY -m gisnet serve --sample --host 127.0.0.1 --port "$PORT" --out "$MAPS" -q &
SERVER=$!
stop() { kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -rf "$MAPS"; }
trap stop INT TERM
i=0
until $PY -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$PORT/health', timeout=2)" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 300 ] || ! kill -0 $SERVER 2>/dev/null; then
        echo "gisnet serve did not start" >&2
        stop
        exit 2
    fi
    sleep 1
done
rc=0
(cd "$MAPS" && $ST run "http://127.0.0.1:$PORT/openapi.json" --checks all \
    --max-examples "$EXAMPLES" --seed 1 --workers 1 --generation-database none --no-color) \
    || rc=$?
stop
exit $rc
