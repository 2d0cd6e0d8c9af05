# Sourced by the two-process harnesses (c-tests/rc/hello_world,
# c-tests/ucp): a free TCP port, and waiting until a server started under
# `timeout` listens on it.

# A port free when probed (another process may take it before the server
# binds: the callers retry).
free_tcp_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])' 2>/dev/null ||
        echo $((20000 + RANDOM % 30000))
}

# wait_listening PID PORT TENTHS: 0 once the child of PID (the program
# `timeout` runs) listens on PORT, 1 if PID exits first, 2 after TENTHS
# tenths of a second. Readiness is watched from outside: the servers accept
# exactly one connection, so a probing connect would be taken as the client,
# and the socket must be the server's own, not another process's.
wait_listening() {
    local pid=$1 port=$2 tenths=$3 waited=0 child
    while ((waited++ < tenths)); do
        child=$(pgrep -P "$pid" | head -n1 || true)
        if [[ -n "$child" ]] && [[ $(ss -ltnpH "sport = :$port") == *"pid=$child,"* ]]; then
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 2
}
