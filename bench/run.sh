#!/usr/bin/env bash
# Throughput benchmark of roce-inspect, side by side in one run with the
# baselines it is judged against: `cat FILE >/dev/null` (reading the file
# from the page cache, the fastest anything can go through it) and tshark
# extracting the fields the analysis needs.
#
# For each packet size (1 KiB payloads, and ACK-sized packets) it writes a
# capture with `roce-inspect gen --scenario bench`, warms the page cache,
# times cat, analyze (as it runs by default, reading in parallel, and with the
# serial loop, ROCE_INSPECT_PARALLEL=0), check
# and tshark, and prints seconds, GB/s, million packets per second, peak
# memory (maximum resident set) and the speed ratios to cat and to tshark.
#
# Settings, from the environment:
#   SIZE_MB=1024    capture size per packet size, in MiB (200 for a quick run)
#   PAYLOADS="1024 0"  payload bytes of the data packets; 0 is ACK-sized
#   RUNS=5          rounds of timed runs of each tool but tshark, taken in
#                   turns; the fastest run of each tool counts
#   TSHARK=1        0 skips tshark (it takes minutes on a 1 GiB capture)
#   TSHARK_MB=      have tshark read a capture of this size instead, and
#                   compare its rate (GB/s) with the others'
#   OUT=bench/out   scratch directory for the binary and the captures
#
# Examples: `bench/run.sh`, `SIZE_MB=200 bench/run.sh`, `make bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

SIZE_MB=${SIZE_MB:-1024}
PAYLOADS=${PAYLOADS:-"1024 0"}
RUNS=${RUNS:-5}
TSHARK=${TSHARK:-1}
TSHARK_MB=${TSHARK_MB:-}
OUT=${OUT:-bench/out}
mkdir -p "$OUT"

# Peak memory: GNU time's maximum resident set size. Without it, and not
# root to install it, the peak is read from /proc/PID/status (VmHWM) while
# the process runs.
TIME=""
if [ -x /usr/bin/time ] && /usr/bin/time -f %M true >/dev/null 2>&1; then
  TIME=/usr/bin/time
elif [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "installing GNU time (Debian package time) for peak memory" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null && TIME=/usr/bin/time
fi
[ -n "$TIME" ] || echo "GNU time missing: reading peak memory from /proc/PID/status" >&2

if [ "$TSHARK" = 1 ] && ! command -v tshark >/dev/null; then
  echo "tshark not installed (Debian package tshark): skipping it" >&2
  TSHARK=0
fi

echo "building roce-inspect" >&2
go build -o "$OUT/roce-inspect" .
RI="$OUT/roce-inspect"

now() { date +%s%N; }

# measure CMD...: runs CMD (output to /dev/null) and sets SECS and PEAK_KB.
measure() {
  local start end
  if [ -n "$TIME" ]; then
    start=$(now)
    "$TIME" -f %M -o "$OUT/time.out" "$@" >/dev/null
    end=$(now)
    PEAK_KB=$(tail -n 1 "$OUT/time.out")
  else
    start=$(now)
    "$@" >/dev/null &
    local pid=$! hwm=0 v
    while kill -0 "$pid" 2>/dev/null; do
      v=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
      [ -n "$v" ] && hwm=$v
      sleep 0.005
    done
    wait "$pid"
    end=$(now)
    PEAK_KB=$hwm
  fi
  SECS=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
}

# capture PAYLOAD MB: writes (once) a bench capture of about MB MiB and
# prints its path; the frame count comes from the size of a sample.
capture() {
  local payload=$1 mb=$2 sample="$OUT/sample-$1.pcap" bytes per packets path
  "$RI" gen -q --scenario bench --packets 20000 --payload "$payload" "$sample" >/dev/null 2>&1
  bytes=$(stat -c %s "$sample")
  rm -f "$sample"
  packets=$(awk -v m="$mb" -v b="$bytes" 'BEGIN { printf "%d", m * 1048576 / ((b - 24) / 20000) + 1 }')
  path="$OUT/bench-p$payload-$packets.pcap"
  if [ ! -s "$path" ]; then
    echo "writing $path ($packets packets)" >&2
    "$RI" gen -q --scenario bench --packets "$packets" --payload "$payload" "$path" >/dev/null 2>&1
  fi
  echo "$path $packets"
}

results="$OUT/results.txt"
: >"$results"
say() { echo "$@" | tee -a "$results"; }

say "roce-inspect benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -r)"
say "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
say "capture ${SIZE_MB} MiB per packet size, best of $RUNS rounds with the tools taking turns (tshark: one run), page cache warm"

for payload in $PAYLOADS; do
  read -r file packets < <(capture "$payload" "$SIZE_MB")
  size=$(stat -c %s "$file")
  cat "$file" >/dev/null
  cat "$file" >/dev/null
  if [ "$payload" = 0 ]; then what="ACK-sized packets (SEND_ONLY of 0-4 bytes and ACKs)"; else what="$payload-byte payloads (RDMA WRITE)"; fi
  say ""
  say "== $what: $file, $(awk -v s="$size" 'BEGIN { printf "%.2f GB", s / 1e9 }'), $packets packets"

  declare -A T=() P=() R=() N=()
  # record LABEL BYTES PACKETS: keeps the fastest time (SECS) of LABEL's
  # runs and the largest peak (PEAK_KB), with the rates of the fastest.
  record() {
    local label=$1 b=$2 n=$3
    if [ -z "${T[$label]:-}" ] || awk -v a="$SECS" -v b="${T[$label]}" 'BEGIN { exit !(a < b) }'; then
      T[$label]=$SECS
      R[$label]=$(awk -v b="$b" -v s="$SECS" 'BEGIN { printf "%.6f", b / s }') # bytes per second
      N[$label]=$(awk -v n="$n" -v s="$SECS" 'BEGIN { printf "%.3f", n / s / 1e6 }')
    fi
    if [ -z "${P[$label]:-}" ] || [ "$PEAK_KB" -gt "${P[$label]}" ]; then P[$label]=$PEAK_KB; fi
  }
  # The tools take turns, round after round, so that a burst of load from
  # other tenants of the machine slows one round of all of them rather
  # than every run of one: the ratios stay fair on a noisy machine.
  for ((i = 0; i < RUNS; i++)); do
    measure cat "$file" && record cat "$size" "$packets"
    measure "$RI" analyze -q --format json "$file" && record analyze "$size" "$packets"
    measure env ROCE_INSPECT_PARALLEL=0 "$RI" analyze -q --format json "$file" && record "analyze serial" "$size" "$packets"
    measure "$RI" check -q "$file" && record check "$size" "$packets"
  done
  labels=(cat analyze "analyze serial" check)
  if [ "$TSHARK" = 1 ]; then
    tfile=$file tsize=$size tpackets=$packets
    if [ -n "$TSHARK_MB" ] && [ "$TSHARK_MB" != "$SIZE_MB" ]; then
      read -r tfile tpackets < <(capture "$payload" "$TSHARK_MB")
      tsize=$(stat -c %s "$tfile")
      cat "$tfile" >/dev/null
    fi
    echo "running tshark on $tfile (minutes for a large capture)" >&2
    # tshark's notes (such as running as root) go to a log, not between
    # the results; exec keeps the measured process tshark itself.
    measure bash -c 'exec tshark "$@" 2>>"$0"' "$OUT/tshark.log" -r "$tfile" -T fields -e ip.src -e ip.dst -e udp.srcport \
      -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn -e ip.dsfield.ecn
    record tshark "$tsize" "$tpackets"
    labels+=(tshark)
    [ "$tfile" = "$file" ] || say "   (tshark read $tfile, $tpackets packets; rates compared)"
  fi

  say "$(printf '%-17s %9s %8s %8s %9s %8s %10s' tool seconds GB/s Mpps 'peak MB' 'x cat' 'x tshark')"
  for l in "${labels[@]}"; do
    vs_tshark="-"
    [ -n "${R[tshark]:-}" ] && vs_tshark=$(awk -v a="${R[$l]}" -v b="${R[tshark]}" 'BEGIN { printf "%.1f", a / b }')
    say "$(awk -v l="$l" -v t="${T[$l]}" -v r="${R[$l]}" -v n="${N[$l]}" -v p="${P[$l]}" -v c="${R[cat]}" -v x="$vs_tshark" \
      'BEGIN { printf "%-17s %9.3f %8.2f %8.2f %9.1f %8.3f %10s", l, t, r / 1e9, n, p / 1024, r / c, x }')"
  done
  # The targets: analyze (with ICRC checking) at half the speed of cat or
  # better and 100 times tshark's; 5 million small packets per second; a
  # peak under 100 MB.
  verdict() { if awk "BEGIN { exit !($2) }"; then say "   target met:    $1"; else say "   target missed: $1"; fi; }
  verdict "analyze >= 0.5 x cat ($(awk -v a="${R[analyze]}" -v c="${R[cat]}" 'BEGIN { printf "%.2f", a / c }'))" "${R[analyze]} >= 0.5 * ${R[cat]}"
  [ -n "${R[tshark]:-}" ] && verdict "analyze >= 100 x tshark" "${R[analyze]} >= 100 * ${R[tshark]}"
  [ "$payload" = 0 ] && verdict "analyze >= 5 Mpps (${N[analyze]})" "${N[analyze]} >= 5"
  verdict "analyze peak < 100 MB ($(awk -v p="${P[analyze]}" 'BEGIN { printf "%.1f", p / 1024 }') MB)" "${P[analyze]} < 100 * 1024"
  unset T P R N
done
say ""
say "results in $results; captures stay in $OUT (delete them when done)"
