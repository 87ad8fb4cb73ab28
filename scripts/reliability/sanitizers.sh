#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and ThreadSanitizer, each in its own scratch
# path (.build-asan, .build-tsan) so the normal debug build is left alone. The end-to-end tests
# start the buzzkit binary built with the same sanitizer (swift build first, so it exists
# next to the test bundle). Prints the time and result of each.
#
# usage: scripts/reliability/sanitizers.sh [address|thread ...]   (default: both)
set -uo pipefail
cd "$(dirname "$0")/../.."
status=0
if [[ "${*:-address thread}" == *thread* ]]; then
  echo "== TSan baseline: a correct Synchronization.Mutex program (Linux futex lock invisible to TSan)"
  swiftc -sanitize=thread -g scripts/reliability/tsan-mutex-false-positive.swift -o /tmp/buzzkit-tsan-mutex 2>/dev/null &&
    /tmp/buzzkit-tsan-mutex 2>&1 | grep -E "^SUMMARY" | sed 's/^/   /'
fi
for sanitizer in "${@:-address thread}"; do
  for s in $sanitizer; do
    started=$(date +%s)
    scratch=".build-${s:0:1}san"
    mkdir -p "$scratch"
    log="$scratch/sanitizer.log"
    echo "== swift test --sanitize=$s"
    # ASan: the first report fails the run. TSan: every report is listed (not fatal), because
    # TSan on Linux also flags correct Synchronization.Mutex code (see the baseline above);
    # each listed location must be read and judged.
    if ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        swift build --sanitize="$s" --scratch-path "$scratch" >"$log" 2>&1 &&
        ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 TSAN_OPTIONS=halt_on_error=0:exitcode=0:second_deadlock_stack=1 \
        swift test --sanitize="$s" --scratch-path "$scratch" >>"$log" 2>&1; then
      result=PASS
    else
      result=FAIL; status=1
    fi
    grep -E "^(✔|✘) Test run|SUMMARY: |ERROR: AddressSanitizer" "$log" | sed 's/ (BuildId.*//' | sort | uniq -c | head -40
    if [ "$s" = address ] && grep -q "ERROR: AddressSanitizer" "$log"; then result=FAIL; status=1; fi
    [ "$s" = thread ] && echo "thread: $(grep -c '^SUMMARY: ThreadSanitizer' "$log") TSan reports (exit status reflects the tests only)"
    echo "$s: $result in $(( $(date +%s) - started ))s (log: $log)"
  done
done
exit $status
