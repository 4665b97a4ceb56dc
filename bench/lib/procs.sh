# Shared by the scripts that start throw-away servers in one folder ($DIR) and stop them by the PID they recorded
# (bench/cluster/cluster.sh, bench/nats/nats.sh): sourced, not run. $DIR holds ports/, pids/ and logs/.

# Processes started here outlive the script: they must not hold the caller's descriptors (see pg.sh).
for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port_of() { cat "$DIR/ports/$1"; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { [ -f "$DIR/pids/$1" ] && cat "$DIR/pids/$1" || true; }
# A started process's PID, recorded; it runs in a session of its own (setsid) with no terminal.
launch() {
    local name=$1; shift
    setsid "$@" </dev/null >>"$DIR/logs/$name.log" 2>&1 &
    echo $! > "$DIR/pids/$name"
}
# SIGTERM (or the signal given), then SIGKILL after 10 s.
stop_pid() {
    local pid=$1 sig=${2:-TERM}
    alive "$pid" || return 0
    kill -s "$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || return 0; sleep 0.1; done
    kill -s KILL "$pid" 2>/dev/null || true
}
