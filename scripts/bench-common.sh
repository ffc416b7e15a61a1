# Shared by the bench scripts that run todayd over many bundles: sourced
# after `set -euo pipefail` with `bin` (todayd's folder) set. Gives a work
# folder cleaned up at exit, and:
#   bundles COUNT FOLDER SCRIPT   COUNT apps of one widget each, whose
#                                 provider is the shell SCRIPT
#   start_todayd FOLDER [PATH]    todayd on its own bus serving FOLDER
#                                 (with that PATH: one without bwrap runs
#                                 providers unconfined); sets addr, tpid
#   median, field NAME            over lines of NAME=value
work=$(mktemp -d)
pids=()
# SIGTERM first: todayd and dbus-daemon then remove their bus sockets.
cleanup() {
    kill "${pids[@]}" 2>/dev/null || true
    sleep 0.3
    kill -9 "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# bundles APP_COUNT FOLDER SCRIPT: APP_COUNT apps of one widget each.
bundles() {
    local count=$1 folder=$2 script=$3
    for i in $(seq -w 1 "$count"); do
        local app="$folder/Bench$i.app" ext="$folder/Bench$i.app/PlugIns/W.appex"
        mkdir -p "$ext"
        printf '<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict><key>CFBundleIdentifier</key><string>org.bench.App%s</string><key>CFBundleVersion</key><string>1</string><key>CFBundleShortVersionString</key><string>1.0</string></dict></plist>\n' "$i" >"$app/Info.plist"
        printf '<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict><key>CFBundleIdentifier</key><string>org.bench.App%s.W</string><key>CFBundleDisplayName</key><string>Bench %s</string><key>CFBundleExecutable</key><string>provider</string><key>CFBundleVersion</key><string>1</string><key>CFBundleShortVersionString</key><string>1.0</string><key>NSExtension</key><dict><key>NSExtensionPointIdentifier</key><string>com.apple.widget-extension</string><key>NSExtensionPrincipalClass</key><string>W</string></dict></dict></plist>\n' "$i" "$i" >"$ext/Info.plist"
        printf '#!/bin/sh\n%s\n' "$script" >"$ext/provider"
        chmod +x "$ext/provider"
    done
}

# start_todayd FOLDER: todayd on its own bus and XDG tree; sets addr and tpid.
start_todayd() {
    local home=$work/home-$RANDOM
    mkdir -p "$home"
    local address_file=$home/address
    HOME=$home XDG_DATA_HOME=$home/data XDG_CACHE_HOME=$home/cache XDG_STATE_HOME=$home/state XDG_DATA_DIRS=$home/none \
        PATH=${2:-$PATH} "$bin/todayd" --private-bus --bundles "$1" >"$address_file" 2>/dev/null &
    tpid=$!
    disown "$tpid"
    pids+=("$tpid")
    while [ ! -s "$address_file" ]; do
        if ! kill -0 "$tpid" 2>/dev/null; then
            echo "$(basename "$0"): $bin/todayd did not start (is it built? see 'make release')" >&2
            exit 1
        fi
        sleep 0.05
    done
    addr=$(sed 's/^DBUS_SESSION_BUS_ADDRESS=//' "$address_file")
    until dbus-send --bus="$addr" --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:io.github.todayd.Today1 2>/dev/null | grep -q true; do sleep 0.05; done
    # The bus todayd started is its child; remember it for cleanup.
    pids+=($(pgrep -P "$tpid" || true))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { sed -E "s/.*$1=([0-9.]+).*/\\1/"; }

