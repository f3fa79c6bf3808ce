#!/usr/bin/env bash
# Tuning on a GPU machine, for the record: for each recipe, fp4jit tune over every linear layer
# of LLaMA-7B at 8192 tokens into a fresh cache (wall time), the tuned GEMMs against the
# heuristic's (the tuner's own measurements, then fp4jit bench with and without tuned configs),
# the step's quantize calls likewise (fp4jit bench quantize), a bundle exported and imported into
# another fresh cache, and a second process that must run every GEMM from it without compiling
# (FP4JIT_NO_COMPILE=1). Logs, JSON, HTML and bundles go to $OUT.
#   FP4JIT=build/fp4jit OUT=/tmp/out bash bench/tune_device.sh
# One recipe takes 4-6 minutes on an H200 (LLaMA-7B at 8192 tokens: the tuning, 12 benches, the
# bundle steps); a machine lent for 10-minute commands fits one recipe per call (RECIPES=mxfp4).
# Env: RECIPES (default "nvfp4 mxfp4"), MODEL (llama-7b), TOKENS (8192), PEERS (a peers.json from
# ../shared/bench/peers.py, shown beside ours in the report) or PEERS_PY (that script: run here
# first, over every GEMM shape of LLaMA-7B's layers), TUNE_ARGS (extra fp4jit tune options, e.g.
# "--lookahead 0 --early-stop 0" to time the run without staging ahead and early stop, or
# --max-candidates 12). The tune summary says where the measuring thread's time went.
set -u
FP4JIT=${FP4JIT:-build/fp4jit}
OUT=${OUT:-/tmp/out}
RECIPES=${RECIPES:-"nvfp4 mxfp4"}
MODEL=${MODEL:-llama-7b}
TOKENS=${TOKENS:-8192}
LAYERS="${TOKENS}x4096x4096 ${TOKENS}x11008x4096 ${TOKENS}x4096x11008"
mkdir -p "$OUT"
LOG="$OUT/tune_log.txt"
say() { echo "=== $*" | tee -a "$LOG"; }

say "device"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv 2>&1 | tee -a "$LOG"
"$FP4JIT" --version 2>&1 | tee -a "$LOG"
if [ -n "${PEERS_PY:-}" ] && [ -f "$PEERS_PY" ]; then
  say "peers ($PEERS_PY)"
  T=$TOKENS
  python3 "$PEERS_PY" --shapes "${T}x4096x4096,${T}x11008x4096,${T}x4096x11008,4096x4096x${T},11008x4096x${T},4096x11008x${T}" \
    --quant "${T}x4096" --out "$OUT/peers.json" 2>&1 | tail -40 | tee -a "$LOG"
  PEERS="$OUT/peers.json"
fi
PEER_ARGS=()
[ -n "${PEERS:-}" ] && [ -f "$PEERS" ] && PEER_ARGS=(--peers "$PEERS")

for r in $RECIPES; do
  DB="$OUT/tune_$r.db"
  rm -f "$DB" "$DB"-wal "$DB"-shm
  say "tune $r: $MODEL, $TOKENS tokens, fresh cache $DB"
  start=$(date +%s%N)
  FP4JIT_CACHE="$DB" "$FP4JIT" tune --backend cuda --recipe "$r" --model "$MODEL" --tokens "$TOKENS" \
    --report "$OUT/tune_$r.html" "${PEER_ARGS[@]}" ${TUNE_ARGS:-} 2>&1 | tee -a "$LOG"
  end=$(date +%s%N)
  echo "tune $r wall time: $(( (end - start) / 1000000 )) ms (goal: under 120 s)" | tee -a "$LOG"
  FP4JIT_CACHE="$DB" "$FP4JIT" tune --backend cuda --recipe "$r" --model "$MODEL" --tokens "$TOKENS" --json \
    >"$OUT/tune_$r.json" 2>>"$LOG"

  # The layers' GEMMs (bench_R_LAYER_{heuristic,tuned}.json), then their quantize calls
  # (bench_R_LAYER_quantize_{heuristic,tuned}.json), each with FP4JIT_NO_TUNED=1 and without.
  for kind in gemm quantize; do
    tag=$([ $kind = gemm ] && echo "" || echo "quantize_")
    say "bench $kind $r: heuristic (FP4JIT_NO_TUNED=1) vs tuned"
    for l in $LAYERS; do
      for how in heuristic tuned; do
        env FP4JIT_CACHE="$DB" $([ $how = heuristic ] && echo FP4JIT_NO_TUNED=1) "$FP4JIT" bench $kind \
          --backend cuda -r "$r" --gemm "$l" --json "$OUT/bench_${r}_${l}_${tag}${how}.json" 2>&1 |
          sed "s/^/$(printf '%-9s' $how) /" | tee -a "$LOG"
      done
    done
  done

  say "bundle $r"
  model=$(FP4JIT_CACHE="$DB" "$FP4JIT" cache tunings | head -1 | cut -d'|' -f1 | sed 's/ *$//')
  FP4JIT_CACHE="$DB" "$FP4JIT" export --gpu "$model" -o "$OUT/$r.fp4b" 2>&1 | tee -a "$LOG"
  "$FP4JIT" verify "$OUT/$r.fp4b" 2>&1 | tee -a "$LOG"
  FRESH="$OUT/fresh_$r.db"
  rm -f "$FRESH" "$FRESH"-wal "$FRESH"-shm
  "$FP4JIT" import "$OUT/$r.fp4b" --cache "$FRESH" 2>&1 | tee -a "$LOG"
  say "second process, imported cache, FP4JIT_NO_COMPILE=1 (must not compile)"
  for l in $LAYERS; do
    FP4JIT_CACHE="$FRESH" FP4JIT_NO_COMPILE=1 "$FP4JIT" bench gemm --backend cuda -r "$r" --gemm "$l" 2>&1 | tee -a "$LOG"
    echo "no-compile bench $r $l rc=${PIPESTATUS[0]}" | tee -a "$LOG"
  done
  say "second process, bundle layered with FP4JIT_BUNDLES, empty cache, FP4JIT_NO_COMPILE=1"
  rm -f "$OUT/empty_$r.db"*
  FP4JIT_CACHE="$OUT/empty_$r.db" FP4JIT_BUNDLES="$OUT/$r.fp4b" FP4JIT_NO_COMPILE=1 \
    "$FP4JIT" bench gemm --backend cuda -r "$r" --gemm "${TOKENS}x4096x4096" 2>&1 | tee -a "$LOG"
  echo "layered no-compile bench $r rc=${PIPESTATUS[0]}" | tee -a "$LOG"
done
say "done"
