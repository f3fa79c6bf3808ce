#!/usr/bin/env bash
# Two builds' quantize and GEMM timings side by side, in one run on the device machine: the
# previous CLI and the new one alternate, round after round, so that both see the same clocks
# and neighbours; then a table of each call's back-to-back ms per round and the ratio of the
# medians (old / new: above 1 means the new build is faster).
#   OLD=DIR NEW=DIR scripts/device_ab.sh
# DIR holds `fp4jit` and its kernel cache (`cache.db.xz` or `cache.db`, from the same build, as
# scripts/device_prepare.sh leaves them in .carry/bin and .carry/). Every kernel must come from
# that cache (FP4JIT_NO_COMPILE=1). Env:
#   RECIPES  presets to time               (default: nvfp4 mxfp4)
#   GEMMS    layer shapes tokens x out x in (default: 8192x8192x8192)
#   WHAT     all | pairs | operands         (default: all)
#   ROUNDS   alternations                   (default: 2)
#   KIND     quantize | gemm | both         (default: quantize)
#   BACKEND  cuda | host                    (default: cuda; host times the CPU backend)
# Results: the table on stdout, the raw lines under $OUT (default /tmp/fp4jit_ab).
set -uo pipefail
: "${OLD:?OLD=DIR: the previous build's fp4jit and cache}" "${NEW:?NEW=DIR: the new build's}"
RECIPES=${RECIPES:-"nvfp4 mxfp4"}
GEMMS=${GEMMS:-8192x8192x8192}
WHAT=${WHAT:-all}
ROUNDS=${ROUNDS:-2}
KIND=${KIND:-quantize}
BACKEND=${BACKEND:-cuda}
OUT=${OUT:-/tmp/fp4jit_ab}
mkdir -p "$OUT"
RAW="$OUT/ab_raw.txt"
: >"$RAW"

cache_of() {  # cache_of DIR NAME: the decompressed cache of DIR, as /tmp/fp4jit_ab_NAME.db
  local db="/tmp/fp4jit_ab_$2.db"
  if [[ -f "$1/cache.db.xz" ]]; then
    xz -dc "$1/cache.db.xz" >"$db"
  elif [[ -f "$1/cache.db" ]]; then
    cp "$1/cache.db" "$db"
  else
    echo "device_ab: $1 has no cache.db.xz or cache.db" >&2
    exit 2
  fi
  echo "$db"
}
for side in OLD NEW; do
  [[ -x "${!side}/fp4jit" ]] || { echo "device_ab: ${!side}/fp4jit is missing" >&2; exit 2; }
done
OLD_DB=$(cache_of "$OLD" old) || exit 2
NEW_DB=$(cache_of "$NEW" new) || exit 2

# A bench's lines as "side round kind recipe call shape alone|b2b ms" (the CUDA backend prints
# each call's back-to-back time on the line after its own; the host backend has only the first).
TIMES='
  /back to back/ { print p, call, shape, "b2b", $1; next }
  / ms / { call = $1; shape = $2; print p, call, shape, "alone", $3 }
  /[Ee]rror/ { print "device_ab: " $0 > "/dev/stderr" }'
# One timing pass of one build into $RAW.
pass() {
  local side=$1 round=$2 dir db
  if [[ $side == old ]]; then dir=$OLD db=$OLD_DB; else dir=$NEW db=$NEW_DB; fi
  local shapes=()
  for g in $GEMMS; do shapes+=(--gemm "$g"); done
  for r in $RECIPES; do
    if [[ $KIND != gemm ]]; then
      FP4JIT_CACHE=$db FP4JIT_NO_COMPILE=1 timeout 300 "$dir/fp4jit" bench quantize -r "$r" \
        "${shapes[@]}" --what "$WHAT" --backend "$BACKEND" 2>&1 |
        awk -v p="$side $round quantize $r" "$TIMES" >>"$RAW"
    fi
    if [[ $KIND != quantize ]]; then
      FP4JIT_CACHE=$db FP4JIT_NO_COMPILE=1 timeout 300 "$dir/fp4jit" bench gemm --recipe "$r" \
        "${shapes[@]}" --backend "$BACKEND" 2>&1 |
        awk -v p="$side $round gemm $r" "$TIMES" >>"$RAW"
    fi
  done
}
for ((i = 1; i <= ROUNDS; ++i)); do
  pass old "$i"
  pass new "$i"
done

python3 - "$RAW" <<'PY'
import collections, statistics, sys
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 8:
        continue
    side, _, kind, recipe, call, shape, how, ms = f
    t = rows.setdefault((kind, recipe, call, shape), {"alone": {"old": [], "new": []},
                                                       "b2b": {"old": [], "new": []}})
    t[how][side].append(float(ms))
if not rows:
    sys.exit("device_ab: no timings came back (see the raw lines and the errors above)")
print("ms per call, back to back where the backend times it so, else alone; one figure a round")
print(f"{'kind':9} {'recipe':9} {'call':8} {'shape':12} {'old ms':>18} {'new ms':>18} {'old/new':>8}")
for (kind, recipe, call, shape), t in rows.items():
    pick = t["b2b"] if t["b2b"]["old"] or t["b2b"]["new"] else t["alone"]
    o, n = pick["old"], pick["new"]
    ratio = statistics.median(o) / statistics.median(n) if o and n else float("nan")
    fmt = lambda v: ", ".join(f"{x:.4f}" for x in v) or "-"
    print(f"{kind:9} {recipe:9} {call:8} {shape:12} {fmt(o):>18} {fmt(n):>18} {ratio:8.3f}")
PY
