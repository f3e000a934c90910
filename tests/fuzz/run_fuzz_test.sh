#!/usr/bin/env bash
# Tests run_fuzz.sh against a stand-in for a libFuzzer binary (a script that
# records its arguments and reports what each case needs): a timeout that
# does not reproduce alone resumes the run for the time left; one that
# reproduces, and a crash, fail it; with FAVOR_FUZZ_LOGS, the log holds
# both segments and tools/fuzz_summary.py adds them up.
# Usage: run_fuzz_test.sh <run_fuzz.sh> <fuzz_summary.py>
set -euo pipefail
run_fuzz=$1
summary=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/run_fuzz_test.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The stand-in: a replay (no -artifact_prefix) exits $FAKE_REPLAY_STATUS; a
# fuzzing run records its -max_total_time, prints libFuzzer's status lines
# and final statistics (1,000 executions a run), and the first one writes
# $FAKE_FINDING-<hash> and exits 70 as libFuzzer does on a finding.
fuzzer=$work/fake_fuzz
cat > "$fuzzer" <<'FAKE'
#!/usr/bin/env bash
prefix=
for arg in "$@"; do
  case $arg in
    -max_total_time=*) echo "${arg#*=}" >> "$FAKE_STATE/times" ;;
    -artifact_prefix=*) prefix=${arg#*=} ;;
  esac
done
if [[ -z $prefix ]]; then
  echo "$@" >> "$FAKE_STATE/replays"
  exit "${FAKE_REPLAY_STATUS:-0}"
fi
run=$(wc -l < "$FAKE_STATE/times")
echo "#2 INITED cov: ${run}0 ft: ${run}00 corp: 3/100b exec/s: 0 rss: 30Mb" >&2
echo "#900 NEW cov: ${run}5 ft: ${run}50 corp: 7/2Kb lim: 4 exec/s: 900 rss: ${run}1Mb" >&2
if [[ $run -eq 1 && -n ${FAKE_FINDING:-} ]]; then
  sleep 1
  echo input > "${prefix}${FAKE_FINDING}-0123abcd"
  printf 'stat::number_of_executed_units: 1000\nstat::peak_rss_mb: %d1\n' "$run" >&2
  exit 70
fi
printf 'Done 1000 runs in 9 second(s)\nstat::number_of_executed_units: 1000\nstat::peak_rss_mb: %d1\n' "$run" >&2
exit 0
FAKE
chmod +x "$fuzzer"
mkdir -p "$work/seeds"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run_case <name> <finding> <replay status>: runs run_fuzz.sh for 30 s in a
# fresh state folder; sets $status, $state and $artifacts.
# With $LOGS set, FAVOR_FUZZ_LOGS too.
run_case() {
  state=$work/$1
  artifacts=$state/artifacts
  mkdir -p "$state"
  : > "$state/times"
  status=0
  env FAKE_STATE="$state" FAKE_FINDING="$2" FAKE_REPLAY_STATUS="$3" \
    FAVOR_FUZZ_SECONDS=30 FAVOR_FUZZ_ARTIFACTS="$artifacts" \
    ${LOGS:+FAVOR_FUZZ_LOGS="$LOGS"} \
    "$run_fuzz" "$fuzzer" "$work/seeds" > "$state/out" 2>&1 || status=$?
}

# The machine's load: the input is fast alone, so the run goes on, for the
# time that is left, and the input is not kept.
run_case load timeout 0
(( status == 0 )) || fail "load: exit $status"
mapfile -t times < "$state/times"
[[ ${#times[@]} -eq 2 ]] || fail "load: ${#times[@]} runs, not 2 (${times[*]})"
[[ ${times[0]} -eq 30 ]] || fail "load: first run for ${times[0]} s, not 30"
(( ${times[1]:-0} >= 25 && ${times[1]:-0} <= 29 )) ||
  fail "load: resumed for ${times[1]:-nothing} s, not the 28 or so left"
[[ -z $(ls -A "$artifacts/fake_fuzz") ]] || fail "load: the input was kept"
grep -q "resuming for" "$state/out" || fail "load: no resume message"

# A slow input: slow again alone, so the run fails and keeps it.
run_case slow timeout 70
(( status != 0 )) || fail "slow: exit 0"
[[ $(wc -l < "$state/times") -eq 1 ]] || fail "slow: resumed"
[[ -f $artifacts/fake_fuzz/timeout-0123abcd ]] || fail "slow: input not kept"

# A crash fails at once, without a replay.
run_case crash crash 0
(( status != 0 )) || fail "crash: exit 0"
[[ ! -e $state/replays ]] || fail "crash: replayed"
[[ -f $artifacts/fake_fuzz/crash-0123abcd ]] || fail "crash: input not kept"

# Nothing found: one run of the whole time.
run_case clean "" 0
(( status == 0 )) || fail "clean: exit $status"
[[ $(cat "$state/times") == 30 ]] || fail "clean: runs $(tr '\n' ' ' < "$state/times")"

# Logged: libFuzzer's output goes to the log, not to ctest's; the summary
# adds up both segments of a resumed run (2,000 executions in the run's
# own time, 1 s or 2) and takes coverage from the first INITED line to the
# last status line.
LOGS=$work/logs run_case logged timeout 0
(( status == 0 )) || fail "logged: exit $status"
log=$work/logs/fake_fuzz.log
[[ $(grep -c INITED "$log") -eq 2 ]] || fail "logged: log lacks a segment"
grep -q INITED "$state/out" && fail "logged: libFuzzer's output not in the log"
row=$("$summary" "$work/logs" | tail -n 1)
[[ $row =~ ^'| `fake_fuzz` | 2,000 | '(2,000|1,000)' | 10 → 25 | 100 → 250 | 7 inputs, 2 KB | 21 MB |'$ ]] ||
  fail "logged: summary row: $row"
LOGS=$work/logs run_case logged-crash crash 0
(( status != 0 )) || fail "logged-crash: exit 0"
grep -q "stat::peak_rss_mb" "$state/out" || fail "logged-crash: log's end not shown"

(( failures == 0 )) && echo "run_fuzz.sh: every case passed"
exit $(( failures > 0 ))
