#!/usr/bin/env bash
# On a GPU machine: examples/train_gpt over the library that scripts/python_device_prepare.sh
# built here into .carry/lib (libfp4jit.so and the fp4jit CLI, no LLVM).
#   1. every kernel the runs use compiled ahead of time by the CLI, NVRTC on every core, into a
#      fresh cache (the training then loads them; FP4JIT_LOG=debug lines count any compile left)
#   2. GPUS=1 (default): train.py on one GPU, every run (RECIPES, default all of them);
#      GPUS=2: torchrun --nproc-per-node 2 (DistributedDataParallel over NCCL) with
#      RECIPES (default bf16,nvfp4), then examples/train_gpt/compare.py against ONE_GPU_CSV
#      (a losses.csv of a one-GPU run at the same global batch) when given
# Outputs in $OUT (default /tmp/train_gpt): table.md, losses.csv, losses.png, runs.json, train.log
# (and compare.md). TRAIN_ARGS adds options to train.py (e.g. "--steps 400"); EXTRA_RUNS, recipe
# texts separated by spaces, are more runs after RECIPES (train.py --run), e.g. ablations.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/train_gpt}
GPUS=${GPUS:-1}
mkdir -p "$OUT"
export FP4JIT_LIBRARY=$PWD/.carry/lib/libfp4jit.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
export FP4JIT_CACHE=${FP4JIT_CACHE:-/tmp/fp4jit_train_gpt.db}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [[ $GPUS -gt 1 ]]; then RECIPES=${RECIPES:-bf16,nvfp4}; else RECIPES=${RECIPES:-bf16,msfp4,tetrajet,nvfp4,mxfp4,ue5m3,naive}; fi
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1) x $(nvidia-smi -L | wc -l)"

# The GEMM shapes of the default model: tokens x (3 d_model, d_model, 2 d_ff, d_model) x (d_model or
# d_ff), at the tokens of one rank.
TOKENS=$((8192 / GPUS))
t0=$SECONDS
set -f  # run texts like nvfp4@blocks.7.* are not file patterns
EXTRA=()
for run in ${EXTRA_RUNS:-}; do EXTRA+=(--run "$run"); done
for recipe in ${RECIPES//,/ } ${EXTRA_RUNS:-}; do
  case $recipe in
    bf16) continue ;;
    naive) spec="mxfp4:block=tensor,scale=fp32,rule=absmax,round=even"; gemms=() ;;
    *) spec=${recipe%%@*}  # without the layers a run keeps in BF16
       gemms=(--gemm ${TOKENS}x1536x512 --gemm ${TOKENS}x512x512 --gemm ${TOKENS}x2816x512 --gemm ${TOKENS}x512x1408) ;;
  esac
  .carry/lib/fp4jit compile --arch sm_90a --recipe "$spec" --dtype bfloat16 --dtype float32 "${gemms[@]}" -q \
    >>"$OUT/compile.log" 2>&1 || log "compile $recipe failed (see compile.log)"
done
log "ahead-of-time compile: $((SECONDS - t0)) s; $(grep -c compiled "$OUT/compile.log") recipe lines"

# LR_SWEEP="2e-3 1e-3 5e-4": first the BF16 baseline alone at each peak learning rate; every run
# then trains at the one with the lowest final validation loss (the baseline's best, the same for
# every recipe).
LR_ARGS=()
if [[ -n "${LR_SWEEP:-}" ]]; then
  best=""
  for lr in $LR_SWEEP; do
    t0=$SECONDS
    python3 examples/train_gpt/train.py --recipes bf16 --lr "$lr" --out "/tmp/train_gpt_lr_$lr" ${TRAIN_ARGS:-} \
      >"/tmp/train_gpt_lr_$lr.log" 2>&1
    val=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["final_val_loss"])' \
      "/tmp/train_gpt_lr_$lr/runs.json" 2>/dev/null || echo nan)
    log "lr sweep: bf16 at lr $lr: final validation loss $val ($((SECONDS - t0)) s)"
    if [[ $val != nan && $val != None ]] && { [[ -z $best ]] || python3 -c "import sys; sys.exit(not $val < $best_val)"; }; then
      best=$lr best_val=$val
    fi
  done
  [[ -n $best ]] && LR_ARGS=(--lr "$best") && log "lr sweep: every run trains at lr $best"
fi

t0=$SECONDS
if [[ $GPUS -gt 1 ]]; then
  FP4JIT_LOG=debug torchrun --standalone --nproc-per-node "$GPUS" examples/train_gpt/train.py --recipes "$RECIPES" \
    "${EXTRA[@]}" "${LR_ARGS[@]}" --out "$OUT" ${TRAIN_ARGS:-} >"$OUT/train.log" 2>&1
else
  FP4JIT_LOG=debug python3 examples/train_gpt/train.py --recipes "$RECIPES" "${EXTRA[@]}" "${LR_ARGS[@]}" --out "$OUT" \
    ${TRAIN_ARGS:-} \
    >"$OUT/train.log" 2>&1
fi
rc=$?
log "train_gpt ($GPUS GPU) rc=$rc in $((SECONDS - t0)) s; kernels compiled during training: $(grep -c '^fp4jit: debug: compiled ' "$OUT/train.log")"
grep -v '^fp4jit: debug: ' "$OUT/train.log" | tail -40
if [[ -n "${ONE_GPU_CSV:-}" && -f "${ONE_GPU_CSV:-}" ]]; then
  python3 examples/train_gpt/compare.py "$ONE_GPU_CSV" "$OUT/losses.csv" --out "$OUT/compare.md"
fi
exit $rc
