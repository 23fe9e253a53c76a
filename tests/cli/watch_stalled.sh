#!/usr/bin/env bash
# `vxperf watch` marks a training rank stalled when its windows stop while the others' go on,
# from the records' own timestamps (no waiting): plain lines with --once.
#   watch_stalled.sh VXPERF CASES WORK
set -euo pipefail
VXPERF=$1
CASES=$2
WORK=$3
rm -rf "$WORK"
mkdir -p "$WORK"
template=$(sed -n 1p "$CASES/training-2-02.expected.jsonl")

# windows RANK FIRST LAST GAP OUT: windows FIRST..LAST of RANK, GAP seconds apart from ts 1000.
windows() {
  local rank=$1 first=$2 last=$3 gap=$4 out=$5 i
  : > "$out"
  for ((i = first; i <= last; i++)); do
    local ts=$((1000 + i * gap)) s0=$((i * 8)) s1=$((i * 8 + 7))
    sed -e "s/\"ts\": 0.0/\"ts\": $ts.0/" -e "s/\"rank\": 0,/\"rank\": $rank,/" \
        -e "s/\"world_size\": 1,/\"world_size\": 3,/" \
        -e "s/\"step_first\": 0, \"step_last\": 7,/\"step_first\": $s0, \"step_last\": $s1,/" \
        <<< "$template" >> "$out"
  done
}
fail() { echo "watch_stalled: $1"; cat "$WORK/out"; exit 1; }
row() { grep -E "^  $1 +[0-9]+-[0-9]+ " "$WORK/out" || true; }

# Windows every 20 s; rank 1 stops after window 5 (ts 1100) while ranks 0 and 2 reach window 20
# (ts 1400): 300 s behind, far over 3 x 20 s.
windows 0 0 20 20 "$WORK/rank0.jsonl"
windows 1 0 5 20 "$WORK/rank1.jsonl"
windows 2 0 20 20 "$WORK/rank2.jsonl"
"$VXPERF" watch --once "$WORK/rank*.jsonl" > "$WORK/out"
row 1 | grep -qF "stalled (no window for 5.0 min)" || fail "rank 1 is not said to be stalled"
row 0 | grep -q "stalled" && fail "rank 0 is said to be stalled"
row 2 | grep -q "stalled" && fail "rank 2 is said to be stalled"
grep -qF "  stalled: rank 1 (" "$WORK/out" || fail "no stalled summary line"
# The folder they are in, as report reads one: the same three ranks (a new user's 'watch runs/').
"$VXPERF" watch --once "$WORK" > "$WORK/out"
head -1 "$WORK/out" | grep -qF "vxperf watch: 3 files, 3 ranks" || fail "a folder is not its files"
row 1 | grep -qF "stalled (no window for 5.0 min)" || fail "rank 1 of the folder is not stalled"

# The same rank 1 with its final record after its last window: its training ended, so it is
# finished, not stalled.
echo '{"kind": "train_end", "ts": 1105.0, "rank": 1, "world_size": 3, "step_first": 0,' \
  '"step_last": 47, "steps": 48, "after_last_step_s": 5.0}' >> "$WORK/rank1.jsonl"
"$VXPERF" watch --once "$WORK/rank*.jsonl" > "$WORK/out"
row 1 | grep -qF "finished" || fail "rank 1 is not said to be finished"
row 1 | grep -q "stalled" && fail "a finished rank 1 is said to be stalled"
grep -q "  stalled:" "$WORK/out" && fail "a stalled summary line with no rank stalled"

# A rank with a single window so far is judged by the others' usual interval.
windows 1 0 0 20 "$WORK/rank1.jsonl"
"$VXPERF" watch --once "$WORK/rank*.jsonl" > "$WORK/out"
row 1 | grep -qF "stalled (no window for 6.7 min)" || fail "a one-window rank 1 is not stalled"

# Behind by less than the rule allows: not stalled. Windows 2 s apart, rank 1 two windows (4 s)
# behind: over 3 x 2 s but under the 30 s floor; then 20 s apart, rank 1 two behind (40 s),
# under 3 x 20 s.
windows 0 0 20 2 "$WORK/rank0.jsonl"
windows 1 0 18 2 "$WORK/rank1.jsonl"
windows 2 0 20 2 "$WORK/rank2.jsonl"
"$VXPERF" watch --once "$WORK/rank*.jsonl" > "$WORK/out"
grep -q "stalled" "$WORK/out" && fail "4 s behind (under the 30 s floor) is said to be stalled"
windows 0 0 20 20 "$WORK/rank0.jsonl"
windows 1 0 18 20 "$WORK/rank1.jsonl"
windows 2 0 20 20 "$WORK/rank2.jsonl"
"$VXPERF" watch --once "$WORK/rank*.jsonl" > "$WORK/out"
grep -q "stalled" "$WORK/out" && fail "40 s behind (under 3 x 20 s) is said to be stalled"
# --interval raises the floor to 3 polls: 300 s behind with polls 120 s apart is not stalled.
windows 1 0 5 20 "$WORK/rank1.jsonl"
"$VXPERF" watch --once --interval 120 "$WORK/rank*.jsonl" > "$WORK/out"
grep -q "stalled" "$WORK/out" && fail "300 s behind with --interval 120 is said to be stalled"

# Following (plain lines): rank 1's file stops, rank 0's and 2's go on; the block printed once
# they are far ahead says rank 1 is stalled, and the others are not.
windows 0 0 3 20 "$WORK/rank0.jsonl"
windows 1 0 3 20 "$WORK/rank1.jsonl"
windows 2 0 3 20 "$WORK/rank2.jsonl"
"$VXPERF" watch --interval 0.1 "$WORK/rank*.jsonl" > "$WORK/plain.out" < /dev/null &
pid=$!
sleep 0.5
windows 0 0 12 20 "$WORK/rank0.new" && tail -n 9 "$WORK/rank0.new" >> "$WORK/rank0.jsonl"
windows 2 0 12 20 "$WORK/rank2.new" && tail -n 9 "$WORK/rank2.new" >> "$WORK/rank2.jsonl"
sleep 0.6
kill -INT "$pid"
wait "$pid"
tac "$WORK/plain.out" | sed '/^vxperf watch:/q' | tac > "$WORK/out"  # the last block
row 1 | grep -qF "stalled (no window for 3.0 min)" || fail "following: rank 1 is not stalled"
row 0 | grep -q "stalled" && fail "following: rank 0 is said to be stalled"
grep -q "^  stalled: rank 1 " "$WORK/out" || fail "following: no stalled summary line"
# Following files named X.rankN, as a shell expands 'X.rank*': a rank whose file appears later
# joins the view, as it does for the quoted pattern.
windows 0 0 3 20 "$WORK/job.jsonl.rank0"
windows 1 0 3 20 "$WORK/job.jsonl.rank1"
"$VXPERF" watch --interval 0.1 "$WORK/job.jsonl.rank0" "$WORK/job.jsonl.rank1" \
  > "$WORK/siblings.out" < /dev/null &
pid=$!
sleep 0.5
windows 2 0 3 20 "$WORK/job.jsonl.rank2"
sleep 0.6
kill -INT "$pid"
wait "$pid"
tac "$WORK/siblings.out" | sed '/^vxperf watch:/q' | tac > "$WORK/out"
grep -qE "^  2 +[0-9]+-[0-9]+ " "$WORK/out" || fail "siblings: rank 2's later file did not join"
grep -q "3 files" "$WORK/out" || fail "siblings: the view does not count 3 files"
# A CPU run's small MFU keeps its digits (the report's rule): not "0.0%".
mkdir -p "$WORK/cpu"
sed -e 's/"mfu": [0-9.e-]*/"mfu": 0.00047/' <<< "$template" > "$WORK/cpu/rank0.jsonl"
"$VXPERF" watch --once "$WORK/cpu/rank0.jsonl" > "$WORK/out"
row 0 | grep -qF " 0.047% " || fail "a small MFU is not 0.047%"
# No peak on rank 0 (a CPU run's), no FLOPs priced on rank 1: each cell n/a, why said once.
sed -e 's/, "peak_tflops": [0-9.e-]*, "mfu": [0-9.e-]*, "hfu": [0-9.e-]*}/}/' <<< "$template" \
  > "$WORK/cpu/rank0.jsonl"
sed -e 's/"rank": 0,/"rank": 1,/' -e 's/, "params": .*}}$/}}/' <<< "$template" \
  > "$WORK/cpu/rank1.jsonl"
"$VXPERF" watch --once "$WORK/cpu/rank*.jsonl" > "$WORK/out"
row 0 | grep -qF " n/a " || fail "no MFU is not n/a"
grep -qxF "  MFU n/a for rank 1 (no FLOPs priced); for rank 0 (no peak recorded: run the job with VIDEOX_PERF_PEAK_TFLOPS=auto)" \
  "$WORK/out" || fail "why there is no MFU is not said"
echo "watch_stalled: ok"
