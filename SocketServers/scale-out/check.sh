#!/usr/bin/env bash
# Runs two echo instances behind nginx (TCP and UDP) on 127.0.0.1, sends load through nginx and
# checks that both instances served it, then kills one and checks that new clients are still
# echoed. nginx sends the PROXY protocol on TCP, so the survivor's per-address limit counts the
# real clients, which bind 127.0.0.2 and 127.0.0.3, not nginx's one address. Exits 0 only if all
# of that held; stops everything it started. Installs nginx with its stream module (Debian) if
# missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
run="$(mktemp -d)"
pids=()
per_address=3  # TCP connections one client address may hold on each instance

cleanup() {
    [ -f "$run/nginx.pid" ] && kill "$(cat "$run/nginx.pid")" 2>/dev/null || true
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$run"
}
trap cleanup EXIT

fail() { echo "check: FAILED: $*" >&2; exit 1; }

modules=/usr/lib/nginx/modules
if ! command -v nginx >/dev/null || [ ! -f "$modules/ngx_stream_module.so" ]; then
    echo "check: installing nginx and its stream module"
    [ "$(id -u)" = 0 ] || fail "nginx with libnginx-mod-stream is missing and installing it needs root"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx libnginx-mod-stream >/dev/null
fi

echo "check: building the echo host"
dotnet build "$root/SocketServers.Host" -c Release -o "$run/bin" -v q -nologo >/dev/null

# Three ports free for TCP and UDP alike: the front and the two instances.
read -r front port1 port2 < <(python3 - <<'PY'
import socket
ports = []
while len(ports) < 3:
    t = socket.socket(); t.bind(("127.0.0.1", 0)); p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", p)); ports.append(p)
    except OSError:
        pass
    finally:
        u.close(); t.close()
print(*ports)
PY
)

start_instance() {
    dotnet "$run/bin/SocketServers.Host.dll" both --port "$1" \
        --proxy-protocol 127.0.0.0/8 --max-connections-per-address "$per_address" > "$run/instance-$1.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        grep -q "udp echo listening" "$run/instance-$1.log" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "instance on port $1 did not start: $(cat "$run/instance-$1.log")"
}
start_instance "$port1"; pid1=${pids[-1]}
start_instance "$port2"; pid2=${pids[-1]}

sed -e "s|@MODULES@|$modules|" -e "s|@RUN@|$run|g" -e "s|@PORT1@|$port1|g" -e "s|@PORT2@|$port2|g" \
    -e "s|@FRONT@|$front|g" "$here/nginx.conf.template" > "$run/nginx.conf"
nginx -p "$run" -c "$run/nginx.conf" -e "$run/error.log"
echo "check: nginx on 127.0.0.1:$front in front of instances on $port1 and $port2"

# The load: TCP connections and UDP senders through the front, every echo checked byte for byte.
# Each TCP connection comes from its own 127.0.1.x address, so the per-address limit never meets it.
load() {
    python3 - "$front" "$1" "$2" <<'PY'
import os, socket, sys
front, connections, senders = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for i in range(connections):
    message = os.urandom(1000)
    source = ("127.0.1.%d" % (i % 250 + 1), 0)
    with socket.create_connection(("127.0.0.1", front), timeout=5, source_address=source) as s:
        s.sendall(message)
        echo = b""
        while len(echo) < len(message):
            part = s.recv(65536)
            if not part:
                break
            echo += part
        if echo != message:
            sys.exit(f"TCP connection {i}: echo differs")
for i in range(senders):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(1)
    u.connect(("127.0.0.1", front))
    datagram = os.urandom(64)
    for attempt in range(5):  # UDP may lose a datagram, for example to an instance just killed
        u.send(datagram)
        try:
            if u.recv(2048) == datagram:
                break
        except socket.timeout:
            continue
    else:
        sys.exit(f"UDP sender {i}: no echo")
    u.close()
PY
}

# What each instance has echoed, from the counters it prints on SIGUSR1.
echoed() {
    kill -USR1 "$1"
    sleep 0.5
    grep "stats: socketservers.messages{network.transport=$2," "$run/instance-$3.log" | tail -1 | awk '{print $3}'
}

load 200 200 || fail "load through nginx"
for protocol in tcp udp; do
    a=$(echoed "$pid1" "$protocol" "$port1"); b=$(echoed "$pid2" "$protocol" "$port2")
    echo "check: $protocol echoes by instance: ${a:-0} and ${b:-0}"
    [ "${a:-0}" -gt 0 ] && [ "${b:-0}" -gt 0 ] || fail "both instances should have served $protocol"
done

echo "check: killing the instance on $port1"
kill -9 "$pid1"
wait "$pid1" 2>/dev/null || true
load 100 50 || fail "new clients after one instance died"
echo "check: every new client was echoed by the survivor"

# The survivor's per-address limit, through nginx: it serves $per_address connections from
# 127.0.0.2, closes the next one from there, and still serves 127.0.0.3. Without the PROXY
# header every client would be nginx's 127.0.0.1 and 127.0.0.3 would be closed as well.
python3 - "$front" "$per_address" <<'PY' || fail "the per-address limit behind nginx"
import os, socket, sys
front, limit = int(sys.argv[1]), int(sys.argv[2])

def connect(source):
    s = socket.socket(); s.settimeout(5)
    s.bind((source, 0)); s.connect(("127.0.0.1", front))
    return s

def outcome(s):
    message = os.urandom(100)
    echo = b""
    try:
        s.sendall(message)
        while len(echo) < len(message):
            part = s.recv(65536)
            if not part:
                return "closed"
            echo += part
    except ConnectionError:
        return "closed"
    except socket.timeout:
        return "silent"
    return "echoed" if echo == message else "garbled"

held = [connect("127.0.0.2") for _ in range(limit)]
for i, s in enumerate(held):
    if (o := outcome(s)) != "echoed":
        sys.exit(f"connection {i + 1} of {limit} from 127.0.0.2: {o}, not echoed")
if (o := outcome(connect("127.0.0.2"))) != "closed":
    sys.exit(f"connection {limit + 1} from 127.0.0.2: {o}, not closed at the limit")
if (o := outcome(connect("127.0.0.3"))) != "echoed":
    sys.exit(f"127.0.0.3 while 127.0.0.2 is at its limit: {o}, not echoed")
print(f"check: 127.0.0.2 served {limit} and closed at {limit + 1}; 127.0.0.3 still served")
PY
echo "check: OK"
