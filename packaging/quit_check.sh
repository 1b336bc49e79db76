#!/usr/bin/env bash
# Quit mid-ingest under X: `haiku-desk --db DB big.pdf`, Ctrl+Q once the parse worker runs,
# Enter on the dialog (its default: "Stop and quit"), then check that no process of the app is
# left 15 s later. Prints how long it took until every process of the app was gone, and the
# work the library kept for its next start.
#
# usage: packaging/quit_check.sh [PDF]
#   PDF            default: the biggest PDF in $HAIKU_SHARED_DATA/pdfs_realworld/files
#                  (HAIKU_SHARED_DATA defaults to ../shared/data)
#   QUIT_CHECK_DISPLAY=:N   use that X display (else Xvfb + openbox are started on :97)
#   HAIKU_DESK=path         the haiku-desk command (default: .venv/bin/haiku-desk)
# Needs xdotool, and Xvfb + openbox when no display is given. Exit 0 when nothing is left.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
app="${HAIKU_DESK:-$here/.venv/bin/haiku-desk}"
data="${HAIKU_SHARED_DATA:-$here/../shared/data}"
pdf="${1:-}"
if [[ -z "$pdf" ]]; then
    if [[ ! -d "$data/pdfs_realworld/files" ]]; then
        echo "quit_check: no PDF given and no shared data at $data; skipped"
        exit 0
    fi
    pdf="$(ls -S "$data"/pdfs_realworld/files/*.pdf | head -1)"
fi

work="$(mktemp -d)"
started=()
cleanup() {
    for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

if [[ -n "${QUIT_CHECK_DISPLAY:-}" ]]; then
    export DISPLAY="$QUIT_CHECK_DISPLAY"
else
    export DISPLAY=:97
    Xvfb "$DISPLAY" -screen 0 1440x900x24 >/dev/null 2>&1 & started+=($!)
    sleep 1
    openbox >/dev/null 2>&1 & started+=($!)
    sleep 1
fi
# The person's own settings, recent libraries and logs stay untouched.
export HOME="$work/home" XDG_DATA_HOME="$work/home/.local/share" XDG_CONFIG_HOME="$work/home/.config"
mkdir -p "$HOME"
unset QT_QPA_PLATFORM HAIKU_RAG_DB
db="$work/library.lancedb"

descendants() {  # every process below $1, recursively
    local kids
    kids="$(ps -o pid= --ppid "$1" 2>/dev/null || true)"
    for kid in $kids; do
        echo "$kid"
        descendants "$kid"
    done
}
alive() {  # the pids of "$@" still running (zombies count as gone)
    for pid in "$@"; do
        state="$(ps -o stat= -p "$pid" 2>/dev/null || true)"
        [[ -n "$state" && "$state" != Z* ]] && echo "$pid"
    done
    return 0
}

echo "quit_check: $(basename "$pdf") ($(du -h "$pdf" | cut -f1)), display $DISPLAY"
"$app" --db "$db" "$pdf" >"$work/app.log" 2>&1 &
app_pid=$!
window="$(timeout 120 xdotool search --sync --onlyvisible --name '^haiku-desk$' | head -1)"
# Wait for the parse worker (the app's child), then let it get into the file.
for _ in $(seq 1 600); do
    [[ -n "$(ps -o pid= --ppid "$app_pid" 2>/dev/null)" ]] && break
    sleep 0.1
done
sleep 3
pids=("$app_pid" $(descendants "$app_pid"))
echo "quit_check: processes of the app before Ctrl+Q: ${pids[*]}"

xdotool windowactivate --sync "$window" key --clearmodifiers ctrl+q
t0="$(date +%s.%N)"
no_dialog=""
if dialog="$(timeout 20 xdotool search --sync --onlyvisible --name '^Quit haiku-desk$' | head -1)" && [[ -n "$dialog" ]]; then
    xdotool windowactivate --sync "$dialog"
    t0="$(date +%s.%N)"
    xdotool key --clearmodifiers Return
else
    no_dialog=1  # an app that does not ask (an older version): timed from Ctrl+Q
    echo "quit_check: no quit dialog appeared; timing from Ctrl+Q"
fi

gone_after=""
while true; do
    now="$(date +%s.%N)"
    elapsed="$(echo "$now - $t0" | bc)"
    left="$(alive "${pids[@]}")"
    if [[ -z "$left" && -z "$gone_after" ]]; then
        gone_after="$elapsed"
    fi
    if (( $(echo "$elapsed >= 15" | bc) )); then
        break
    fi
    sleep 0.1
done
left="$(alive "${pids[@]}")"  # at 15 s (no waiting for the app: a hung one must show)
for pid in $left; do started+=("$pid"); done  # the cleanup kills what is left
kept="$(cat "$db/haiku-desk/queue.json" 2>/dev/null | tr -d '\n ' || true)"
echo "quit_check: kept for the next start: ${kept:-nothing}"
grep -hE "shutting down|parse worker stopped|library closed|exiting" "$XDG_DATA_HOME/haiku.rag/logs/haiku-desk.log" 2>/dev/null \
    | sed 's/^/quit_check: log: /' || true
if [[ -n "$left" ]]; then
    echo "quit_check: FAIL: still running 15 s after the dialog's default: $left"
    ps -o pid,stat,etime,args -p "$(echo "$left" | tr '\n' ',' | sed 's/,$//')" || true
    exit 1
fi
[[ -n "$no_dialog" ]] && {
    echo "quit_check: FAIL: quitting with work pending did not ask (nothing kept; processes gone after ${gone_after} s)"
    exit 1
}
printf 'quit_check: PASS: all %d processes of the app gone %.2f s after the dialog'"'"'s default\n' "${#pids[@]}" "$gone_after"
