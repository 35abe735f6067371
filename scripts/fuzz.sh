#!/usr/bin/env bash
# Fuzz belay-server, belay-standalone and the client core: run each cargo-fuzz target in
# fuzz/ for SECONDS on the committed corpora (fuzz/corpus/<target>,
# fuzz/seeds/<target>) plus a scratch corpus outside git
# (fuzz/work/<target>), then print, per target, executions, exec/s,
# libFuzzer's coverage (cov = edges, ft = features), the corpus size and
# any crash. See docs/FUZZING.md.
#
#   scripts/fuzz.sh SECONDS [TARGET...]     (default: every target, one after another;
#                                           0 seconds: no fuzzing, only FUZZ_CMIN/FUZZ_COVERAGE)
#
# Environment:
#   FUZZ_SANITIZER=none|address   sanitizer (default none: the code forbids
#                                 unsafe; overflow checks and debug assertions
#                                 are on either way)
#   FUZZ_JOBS=N                   run N targets at once (default 1)
#   FUZZ_MAX_LEN=N                libFuzzer -max_len (default 8192)
#   FUZZ_CMIN=1                   afterwards, minimise corpus ∪ scratch ∪ seeds
#                                 into fuzz/corpus/<target> (cargo fuzz cmin)
#   FUZZ_COVERAGE=1               afterwards, source coverage of the corpus
#                                 (cargo fuzz coverage + llvm-cov report,
#                                 needs rustup's llvm-tools-preview)
#
# Logs: fuzz/work/<target>.log. Crashes: fuzz/artifacts/<target>/.
# Exits non-zero if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -lt 1 || ! "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 SECONDS [TARGET...]" >&2
  exit 2
fi
seconds=$1
shift
all_targets=(ws_frames client_decode connection client_session server_connection jwt_claims http_api)
targets=("${@:-${all_targets[@]}}")
sanitizer=${FUZZ_SANITIZER:-none}
max_len=${FUZZ_MAX_LEN:-8192}
jobs=${FUZZ_JOBS:-1}

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz.sh needs the nightly toolchain (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

cd fuzz
status=0
if ((seconds > 0)); then
echo "==> building ${targets[*]} (sanitizer: $sanitizer)"
cargo +nightly fuzz build -s "$sanitizer" 2>&1 | tail -n 1

run_one() {
  local target=$1
  mkdir -p "work/$target" "corpus/$target" "seeds/$target"
  local log="work/$target.log"
  echo "==> $target: ${seconds}s (log: fuzz/$log)"
  # The scratch corpus comes first: libFuzzer writes new inputs there.
  if cargo +nightly fuzz run -s "$sanitizer" "$target" \
    "work/$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -max_len="$max_len" -timeout=30 \
    -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1; then
    echo ok >"work/$target.status"
  else
    echo crashed >"work/$target.status"
  fi
}

running=0
for target in "${targets[@]}"; do
  run_one "$target" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

stat() { grep -E "^stat::$2:" "$1" | tail -n 1 | awk '{print $2}'; }
echo
printf '%-14s %8s %12s %8s %7s %7s %13s %8s  %s\n' \
  target seconds executions exec/s cov ft corpus rss_mb result
for target in "${targets[@]}"; do
  log="work/$target.log"
  final=$(grep -E '^#[0-9]+[[:space:]]+(DONE|NEW|REDUCE|pulse|INITED)' "$log" | tail -n 1 || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$final")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$final")
  corp=$(sed -nE 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' <<<"$final")
  execs=$(stat "$log" number_of_executed_units)
  rate=$(stat "$log" average_exec_per_sec)
  rss=$(stat "$log" peak_rss_mb)
  result=$(cat "work/$target.status" 2>/dev/null || echo "?")
  if [[ $result != ok ]]; then
    status=1
    result="CRASH: $(grep -m1 -oE 'artifacts/[^ ]+' "$log" || echo "see fuzz/$log")"
  fi
  printf '%-14s %8s %12s %8s %7s %7s %13s %8s  %s\n' \
    "$target" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${rss:-?}" "$result"
done

fi # seconds > 0

if [[ ${FUZZ_CMIN:-0} == 1 ]]; then
  for target in "${targets[@]}"; do
    echo "==> $target: minimising corpus + scratch + seeds into fuzz/corpus/$target"
    mkdir -p "corpus/$target"
    cp -n "work/$target"/* "seeds/$target"/* "corpus/$target"/ 2>/dev/null || true
    cargo +nightly fuzz cmin -s "$sanitizer" "$target" "corpus/$target" -- \
      -max_len="$max_len" -timeout=30 -use_counters=0 >"work/$target.cmin.log" 2>&1
    echo "    $(find "corpus/$target" -type f | wc -l) files, $(du -sh "corpus/$target" | cut -f1)"
  done
fi

if [[ ${FUZZ_COVERAGE:-0} == 1 ]]; then
  sysroot=$(rustc +nightly --print sysroot)
  llvm_cov=$(find "$sysroot" -name llvm-cov -type f | head -n 1)
  if [[ -z $llvm_cov ]]; then
    echo "no llvm-cov: rustup component add llvm-tools-preview --toolchain nightly" >&2
    exit 1
  fi
  triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
  for target in "${targets[@]}"; do
    echo "==> $target: source coverage of fuzz/corpus/$target + fuzz/seeds/$target"
    cargo +nightly fuzz coverage "$target" "corpus/$target" "seeds/$target" \
      >"work/$target.coverage.log" 2>&1
    "$llvm_cov" report "target/$triple/coverage/$triple/release/$target" \
      -instr-profile="coverage/$target/coverage.profdata" \
      -ignore-filename-regex='(\.cargo|rustc|/library/)' \
      >"work/$target.coverage.txt"
    # Line coverage of the files the target is about, and their total.
    case $target in
      ws_frames) focus='belay-server/src/ws\.rs' ;;
      client_decode) focus='belay-proto/src/message/' ;;
      client_session) focus='belay-proto/src/(client/(session/|subscriptions|registry|readiness)|heartbeat|backoff/)' ;;
      server_connection) focus='belay-proto/src/server/(connection/|rate|limits|violation)' ;;
      *) focus='belay-server/src/(connection|ws|requests|outbound|mailbox|fanout|rpc|demo|broker/)|belay-proto/src/(server/(rate|limits|violation|idempotency|channel)|heartbeat|message/)' ;;
    esac
    grep -E "$focus" "work/$target.coverage.txt" | awk -v t="$target" '
      { printf "    %-44s lines %5d  missed %5d  %s\n", $1, $8, $9, $10; n += $8; m += $9 }
      END { if (n) printf "    %-44s lines %5d  missed %5d  %.2f%%\n", t " (these files)", n, m, 100 * (n - m) / n }'
    echo "    (all files: fuzz/work/$target.coverage.txt)"
  done
fi

exit "$status"
