#!/usr/bin/env bash
# `vxperf watch` on a terminal (tmux: send-keys, capture-pane): it follows files as they grow,
# takes in a new rank's file, waits for a torn last line's end, reads a truncated file again,
# quits on q and on Ctrl-C; and prints plain lines when its output is not a terminal.
#   watch_tmux.sh VXPERF CASES WORK      (exit 77: tmux not installed)
set -euo pipefail
VXPERF=$1
CASES=$2
WORK=$3
command -v tmux >/dev/null || { echo "tmux not installed: skipped"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
src="$CASES/training-2-02.expected.jsonl"
sock="$WORK/tmux.sock"  # a tmux server of its own
trap 'tmux -S "$sock" kill-server 2>/dev/null || true' EXIT

start() {  # SESSION: vxperf watch on the rank files in a new session
  tmux -S "$sock" new-session -d -s "$1" -x 150 -y 40 \
    "'$VXPERF' watch --interval 0.2 '$WORK/rank*.jsonl'; echo \"exit \$?\" > '$WORK/$1.exit'; sleep 60"
}
pane() { tmux -S "$sock" capture-pane -p -t "$1"; }
wait_for() {  # SESSION TEXT: the pane shows TEXT within 15 s
  for _ in $(seq 75); do
    pane "$1" > "$WORK/pane" || true
    if grep -qF -- "$2" "$WORK/pane"; then return 0; fi
    sleep 0.2
  done
  echo "the pane never showed '$2':"
  cat "$WORK/pane"
  exit 1
}
wait_exit() {  # SESSION: watch ended with status 0 within 10 s
  for _ in $(seq 50); do
    if [[ -s "$WORK/$1.exit" ]]; then
      grep -qx "exit 0" "$WORK/$1.exit" || { echo "$1: $(cat "$WORK/$1.exit")"; exit 1; }
      return 0
    fi
    sleep 0.2
  done
  echo "$1: vxperf watch did not quit"
  pane "$1"
  exit 1
}

start main
wait_for main "no records yet"
sed -n 1p "$src" > "$WORK/rank0.jsonl"
wait_for main "0     0-7 "
# A new rank's file joins.
sed -n 2p "$src" | sed 's/"rank": 0/"rank": 1/' > "$WORK/rank1.jsonl"
wait_for main "1     8-15 "
wait_for main "2 files, 2 ranks"
# A torn last line waits for its end: nothing said, rank 0 still at its first window.
line=$(sed -n 3p "$src")
half=$((${#line} / 2))
printf '%s' "${line:0:$half}" >> "$WORK/rank0.jsonl"
sleep 1
pane main > "$WORK/pane"
grep -qF "0     0-7 " "$WORK/pane" || { echo "torn line: rank 0 moved"; cat "$WORK/pane"; exit 1; }
if grep -q "note:" "$WORK/pane"; then echo "torn line was said"; cat "$WORK/pane"; exit 1; fi
printf '%s\n' "${line:$half}" >> "$WORK/rank0.jsonl"
wait_for main "0     16-23 "
# Truncated: read again from its start, and said.
sed -n 1p "$src" > "$WORK/rank0.jsonl"
wait_for main "rank0.jsonl: truncated: read again from its start"
# Another tool's line in the middle: said with file and line, the rest read.
echo '{"level": "info"}' >> "$WORK/rank1.jsonl"
sed -n 4p "$src" | sed 's/"rank": 0/"rank": 1/' >> "$WORK/rank1.jsonl"
wait_for main "rank1.jsonl:2: a record needs a string"
tmux -S "$sock" send-keys -t main q
wait_exit main

# Ctrl-C quits as cleanly.
start second
wait_for second "2 files, 2 ranks"
tmux -S "$sock" send-keys -t second C-c
wait_exit second

# Not a terminal: plain lines, a block per poll that brought records, until a signal.
"$VXPERF" watch --interval 0.2 "$WORK/rank*.jsonl" > "$WORK/plain.out" < /dev/null &
pid=$!
sleep 1
sed -n 2p "$src" >> "$WORK/rank0.jsonl"
sleep 1
kill -INT "$pid"
wait "$pid"
if grep -q $'\x1b' "$WORK/plain.out"; then echo "escape sequences in plain output"; exit 1; fi
[[ $(grep -c "^vxperf watch: 2 files, 2 ranks" "$WORK/plain.out") -ge 2 ]] || {
  echo "plain output: expected two blocks"; cat "$WORK/plain.out"; exit 1; }
"$VXPERF" watch --once "$WORK/rank*.jsonl" | grep -q "training (latest window per rank)"
echo "watch_tmux: ok"
