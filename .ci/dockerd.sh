#!/usr/bin/env bash
# A private docker engine for benchlab's docker backend, its tests and CI.
#
#   bash .ci/dockerd.sh start [name]   install docker.io if needed, start dockerd, print its DOCKER_HOST url
#   bash .ci/dockerd.sh stop  [name]   stop that dockerd by the PID in its pidfile and wait for it to end
#   bash .ci/dockerd.sh env   [name]   print `export DOCKER_HOST=...` for that engine
#
# Each name ("benchlab" by default) is a separate engine with its own socket, data root, exec root and
# pidfile, so two of them can stand for two machines. No bridge and no iptables rules: benchlab's
# containers use host networking, and the machine's firewall is left as it was.
set -euo pipefail

action="${1:-}"
name="${2:-benchlab}"
case "$name" in
  *[!A-Za-z0-9_-]*|"") echo "dockerd.sh: bad engine name '$name' (letters, digits, - and _)" >&2; exit 2 ;;
esac

run_dir=/run/benchlab-docker
socket="$run_dir/$name.sock"
pidfile="$run_dir/$name.pid"
exec_root="$run_dir/$name.exec"
data_root="/var/lib/benchlab-docker/$name"
log="/var/log/benchlab-docker-$name.log"
host="unix://$socket"

answers() {
  # The engine answers on its socket: GET /_ping returns OK.
  python3 - "$socket" <<'EOF' >/dev/null 2>&1
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect(sys.argv[1])
s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
sys.exit(0 if b" 200 " in s.recv(4096) else 1)
EOF
}

running_pid() {
  [ -s "$pidfile" ] || return 1
  local pid
  pid="$(cat "$pidfile")"
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

install_dockerd() {
  command -v dockerd >/dev/null 2>&1 && return 0
  echo "dockerd.sh: dockerd missing; installing Debian's docker.io" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends docker.io >&2
  # The package's own service is not ours to run; benchlab starts its own engines.
}

wait_answer() {
  # $1: the pid that must stay alive meanwhile
  for _ in $(seq 1 300); do
    answers && return 0
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

start() {
  local pid
  if pid="$(running_pid)"; then
    # Running already (perhaps still starting, from another shell): use it rather than start a second one.
    if wait_answer "$pid"; then
      echo "$host"
      return 0
    fi
    echo "dockerd.sh: dockerd '$name' (pid $pid) runs but does not answer on $socket; see $log, or stop it" >&2
    exit 1
  fi
  install_dockerd
  mkdir -p "$run_dir" "$data_root"
  rm -f "$socket" "$pidfile"
  # setsid: the engine outlives this script and is not hit by a Ctrl-C meant for a test run.
  setsid dockerd \
    --host "$host" \
    --data-root "$data_root" \
    --exec-root "$exec_root" \
    --pidfile "$pidfile" \
    --bridge=none \
    --iptables=false \
    --ip-masq=false \
    >"$log" 2>&1 </dev/null &
  local launcher=$!
  if wait_answer "$launcher"; then
    echo "$host"
    return 0
  fi
  if ! kill -0 "$launcher" 2>/dev/null; then
    echo "dockerd.sh: dockerd '$name' exited during start; last lines of $log:" >&2
    tail -n 20 "$log" >&2
  else
    echo "dockerd.sh: dockerd '$name' did not answer on $socket within 30 s; stopping it; see $log" >&2
    kill "$launcher" 2>/dev/null || true
  fi
  exit 1
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then
    echo "dockerd.sh: no dockerd '$name' running" >&2
    rm -f "$pidfile"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || { echo "dockerd.sh: dockerd '$name' (pid $pid) stopped" >&2; return 0; }
    sleep 0.1
  done
  echo "dockerd.sh: dockerd '$name' (pid $pid) ignored SIGTERM for 30 s; sending SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
}

case "$action" in
  start) start ;;
  stop) stop ;;
  env) echo "export DOCKER_HOST=$host" ;;
  *) echo "usage: bash .ci/dockerd.sh start|stop|env [name]" >&2; exit 2 ;;
esac
