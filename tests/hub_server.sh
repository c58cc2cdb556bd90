# hub_server.sh: sourced by the shell tests that need the loopback Hub imitation
# (tests/http_server.py on 127.0.0.1). hub_start DOCROOT DIR starts it with its stdin on a fifo
# in DIR (it exits when this shell does), sets PORT, and installs an EXIT trap that stops it.
# hub_ctl PATH fetches /PATH from it (control and statistics requests); hub_requests prints the
# number of file and API requests since the last "_ctl?reset=1".
hub_start() {
    mkfifo "$2/srv.in"
    python3 tests/http_server.py "$1" <"$2/srv.in" >"$2/port.txt" &
    HUB_PID=$!
    exec 9>"$2/srv.in"
    trap 'exec 9>&-; kill $HUB_PID 2>/dev/null; wait $HUB_PID 2>/dev/null' EXIT
    for _ in $(seq 50); do [ -s "$2/port.txt" ] && break; sleep 0.1; done
    PORT=$(awk '{print $2}' "$2/port.txt")
}
hub_ctl() {
    python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://127.0.0.1:$PORT/'+sys.argv[1]).read().decode().strip())" "$1"
}
hub_requests() { hub_ctl _stats | sed -E 's/requests=([0-9]+).*/\1/'; }
