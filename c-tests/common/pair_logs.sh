# The failure path of a two-process test harness (server and client, their
# output in $logs/server.out and $logs/client.out). Sourced; the caller
# defines die() and sets `logs` (a directory) and `server` (the server's
# pid, or empty), globally or as locals of the function that calls these.

# Prints both sides' output, long lines cut.
show_logs() {
    local f
    for f in server.out client.out; do
        [[ -f "$logs/$f" ]] || continue
        echo "----- $f (long lines cut) -----"
        cut -c1-300 "$logs/$f"
    done
}

# Stops the server, shows the logs, removes them, and dies with "$*".
fail() {
    if [[ -n "$server" ]]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    show_logs
    rm -rf "$logs"
    die "$*"
}
