#!/usr/bin/env bash
# Runs one fuzz target for a bounded time: run_fuzz.sh <fuzzer> <seed corpus>
#
# ctest runs it (label `fuzz`) for FAVOR_FUZZ_SECONDS (default 30) on a
# throwaway working corpus beside the seeds, which libFuzzer reads but never
# writes, so the repository is left alone. `make fuzz` sets
# FAVOR_FUZZ_CORPUS to a folder that keeps each target's working corpus
# between campaigns (build-fuzz/corpus/<target>). Any crash, leak, input
# slower than 1 s (when replayed alone, see below) or over 2 GiB fails the
# run; libFuzzer writes the input that did it to
# FAVOR_FUZZ_ARTIFACTS/<target>/ (default: ./fuzz-artifacts/) and prints
# its path. With FAVOR_FUZZ_LOGS set (`make fuzz` sets it), libFuzzer's
# output goes to FAVOR_FUZZ_LOGS/<target>.log instead, for
# tools/fuzz_summary.py, and its last lines are printed if the run fails.
set -euo pipefail
fuzzer=$1
seeds=$2
name=$(basename "$fuzzer")
seconds=${FAVOR_FUZZ_SECONDS:-30}

if [[ -n "${FAVOR_FUZZ_CORPUS:-}" ]]; then
  corpus=$FAVOR_FUZZ_CORPUS/$name
  mkdir -p "$corpus"
else
  corpus=$(mktemp -d "${TMPDIR:-/tmp}/favor-fuzz-$name.XXXXXX")
fi
artifacts=${FAVOR_FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}/$name
mkdir -p "$artifacts"

flags=(-timeout=1 -rss_limit_mb=2048
       -print_final_stats=1 -artifact_prefix="$artifacts/")
dict=$(dirname "$seeds")/$name.dict
[[ -f "$dict" ]] && flags+=(-dict="$dict")
# libFuzzer's output: fd 3, the log or stderr.
if [[ -n "${FAVOR_FUZZ_LOGS:-}" ]]; then
  mkdir -p "$FAVOR_FUZZ_LOGS"
  log=$FAVOR_FUZZ_LOGS/$name.log
  exec 3> "$log"
  # libFuzzer says how long it ran only when its time is up, so the log
  # ends with the whole run's time, resumed segments included.
  trap_log() {
    local status=$?
    echo "run_fuzz: fuzzed for $SECONDS s" >&3
    (( status == 0 )) || tail -n 40 "$log"
  }
else
  exec 3>&2
  trap_log() { :; }
fi
# Seeds second: libFuzzer adds what it finds to the first folder only.
marker=$(mktemp)
trap 'trap_log; rm -f "$marker"; if [[ -z "${FAVOR_FUZZ_CORPUS:-}" ]]; then rm -rf "$corpus"; fi' EXIT
deadline=$(( SECONDS + seconds ))
while :; do
  touch "$marker"
  status=0
  "$fuzzer" "${flags[@]}" -max_total_time="$(( deadline - SECONDS ))" \
    "$corpus" "$seeds" 2>&3 || status=$?
  (( status == 0 )) && exit 0

  # libFuzzer's timeout is wall-clock time, which a machine busy with other
  # work can exceed on a fast input. A timeout counts only if its input is
  # slow again when replayed alone; any other finding fails at once.
  new=$(find "$artifacts" -type f -newer "$marker")
  [[ -n "$new" ]] || exit "$status"
  for input in $new; do
    [[ $(basename "$input") == timeout-* ]] || exit "$status"
    "$fuzzer" -timeout=1 -rss_limit_mb=2048 "$input" || exit "$status"
    echo "run_fuzz: $input ran in under 1 s when replayed alone: the timeout" \
         "was the machine's load, not the input"
    rm -f "$input"
  done
  # Such a timeout stops libFuzzer early: go on from the working corpus for
  # the time that is left, so that a campaign's hour is an hour.
  (( deadline - SECONDS >= 5 )) || exit 0
  message="run_fuzz: resuming for the $(( deadline - SECONDS )) s left"
  echo "$message"
  if [[ -n "${FAVOR_FUZZ_LOGS:-}" ]]; then echo "$message" >&3; fi
done
