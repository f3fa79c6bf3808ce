#!/usr/bin/env bash
# End-to-end tests of the fp4jit command. One ctest per case:
#   cli_test.sh FP4JIT WORKDIR CASE [ARGS...]
# Each case runs the binary in a fresh WORKDIR and exits non-zero with a message on failure.
set -euo pipefail

BIN=$1
WORK=$2
CASE=$3
shift 3
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

die() {
  echo "FAIL: $*" >&2
  exit 1
}

# run_ok CMD...: runs fp4jit, keeps stdout in out.txt, fails on a non-zero exit.
run_ok() {
  echo "+ fp4jit $*"
  "$BIN" "$@" >out.txt 2>err.txt || { cat out.txt err.txt; die "fp4jit $* exited $?"; }
  cat out.txt
}

# expect_exit CODE PATTERN CMD...: fp4jit must exit CODE and print PATTERN (grep -E) to stderr,
# and never a stack trace or a crash.
expect_exit() {
  local want=$1 pattern=$2
  shift 2
  echo "+ fp4jit $* (expect exit $want, stderr ~ /$pattern/)"
  local rc=0
  "$BIN" "$@" >out.txt 2>err.txt || rc=$?
  cat err.txt
  [[ $rc == "$want" ]] || die "exit status $rc, expected $want"
  grep -Eq -- "$pattern" err.txt || die "stderr does not match /$pattern/"
  if [[ $want == 1 ]]; then grep -q '^fp4jit: error: ' err.txt || die "no 'fp4jit: error:' line"; fi
  ! grep -Eqi 'terminate called|core dumped|stack trace|what\(\)' err.txt || die "crash output"
}

# npy_header FILE: the header dictionary of an .npy file.
npy_header() { head -c 256 "$1" | tr -d '\000' | grep -ao "{.*}" | head -1; }

expect_shape() {
  local h
  h=$(npy_header "$1")
  [[ $h == *"'shape': $2"* ]] || die "$1: header $h, expected shape $2"
}

# write_npy FILE DESCR SHAPE NBYTES: a format 1.0 file of NBYTES zero bytes of data.
write_npy() {
  local dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  local len=$(((10 + ${#dict} + 1 + 63) / 64 * 64 - 10))
  {
    printf '\223NUMPY\001\000'
    # shellcheck disable=SC2059  # the format is the two length bytes, as octal escapes
    printf "\\$(printf '%03o' $((len & 255)))\\$(printf '%03o' $((len >> 8)))"
    printf '%s' "$dict"
    printf '%*s\n' $((len - ${#dict} - 1)) ''
    head -c "$4" /dev/zero
  } >"$1"
}

# The relative error a command printed ("relative Frobenius error X").
rel_error() { grep -o 'relative Frobenius error [^ ]*' "$1" | awk '{print $4}'; }
less_than() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

case_roundtrip() {  # RECIPE OPERAND DIST: quantize, dequantize, compare, check the files
  local recipe=$1 op=$2 dist=$3
  run_ok sample --shape 64x128 --dist "$dist" --dtype bfloat16 --seed 3 --out x.npy
  run_ok quantize --recipe "$recipe" --operand "$op" --in x.npy --out q --seed 11 --offset 5
  cp out.txt quantize.txt
  for f in layout.json codes.npy scales.npy; do [[ -f q/$f ]] || die "q/$f missing"; done
  grep -q '"rule": "two_level"' q/layout.json && { [[ -f q/tensor_scale.npy ]] || die "no tensor_scale.npy"; }
  grep -q '"occ": null' q/layout.json || { [[ -f q/residual_index.npy && -f q/residual_value.npy ]] || die "no residual files"; }
  local rows=64 cols=128
  [[ $op == wt || $op == dyt || $op == xt ]] && rows=128 cols=64
  # The reference decodes in double, as quantize's own error figure does (a float32 backend
  # turns values beyond FLT_MAX into Inf before comparing).
  run_ok dequantize --in q --out y.npy --compare x.npy --backend reference
  expect_shape y.npy "(64, 128)"
  local eq ed
  eq=$(rel_error quantize.txt)
  ed=$(rel_error out.txt)
  [[ -n $eq && $eq == "$ed" ]] || die "quantize reported error '$eq', dequantize from the files '$ed'"
  if [[ $dist == normal ]]; then less_than "$eq" 0.2 || die "relative error $eq >= 0.2"; fi
  run_ok dequantize --in q --out op.npy --operand-layout --dtype float16
  expect_shape op.npy "($rows, $cols)"
  [[ $(npy_header op.npy) == *"'<f2'"* ]] || die "op.npy is not float16"
  run_ok dequantize --in q --out yb.npy --dtype bfloat16
  [[ $(npy_header yb.npy) == *"'<V2'"* ]] || die "yb.npy is not bfloat16 ('<V2')"
}

case_recipes() {
  run_ok recipe list
  cp out.txt list.txt
  for p in mxfp4 nvfp4 msfp4 tetrajet ue5m3; do
    grep -q "^$p " list.txt || die "recipe list lacks $p"
    run_ok recipe show "$p"
    local canon
    canon=$(cat out.txt)
    [[ $canon == "$p:"*"x.elem="*"xt.qema="* ]] || die "not a canonical form: $canon"
    [[ $(wc -l <out.txt) == 1 ]] || die "canonical form is not one line"
    run_ok recipe show "$canon"
    [[ $(cat out.txt) == "$canon" ]] || die "canonical form does not round-trip"
    run_ok recipe show --table "$p"
    for role in x w dy wt dyt xt; do grep -q "^$role " out.txt || die "table lacks role $role"; done
  done
  run_ok recipe show "mxfp4:round=even"
  grep -q 'x.round=even' out.txt || die "override not applied"
  run_ok recipe show --table "msfp4:occ=0.97,dge.k=3"
  grep -q 'occ alpha 0.97, dge k 3' out.txt || die "recipe-wide overrides not shown"
  run_ok --help
  cp out.txt help.txt
  for c in recipe quantize dequantize sample dge; do
    grep -q "^  $c " help.txt || die "--help lacks $c"
    run_ok "$c" --help
  done
}

case_errors() {
  run_ok sample --shape 4x32 --out x.npy
  run_ok sample --shape 4x24 --out k24.npy
  expect_exit 1 "'x\.nosuchkey'" quantize --recipe nvfp4:x.nosuchkey=1 --in x.npy --out q
  expect_exit 1 "'frobnicate'" recipe show mxfp4:frobnicate=on
  expect_exit 1 "unknown recipe preset 'nvfp5'" quantize --recipe nvfp5 --in x.npy --out q
  expect_exit 1 "K = 24: K is not a multiple of the block width 16" quantize -r nvfp4 --in k24.npy --out q
  expect_exit 1 "K = 4: K is not a multiple of the block width 32" quantize -r mxfp4 --operand xt --in x.npy --out q
  write_npy i32.npy '<i4' '(4, 32)' 512
  expect_exit 1 "i32\.npy: unsupported dtype '<i4' \(int32\)" quantize -r nvfp4 --in i32.npy --out q
  write_npy f64.npy '<f8' '(4, 32)' 1024
  expect_exit 1 "f64\.npy: .*float64" quantize -r nvfp4 --in f64.npy --out q
  write_npy be.npy '>f4' '(4, 32)' 512
  expect_exit 1 "be\.npy: big-endian" quantize -r nvfp4 --in be.npy --out q
  write_npy short.npy '<f4' '(4, 32)' 100
  expect_exit 1 "short\.npy: truncated data" quantize -r nvfp4 --in short.npy --out q
  printf 'not numpy at all' >magic.npy
  expect_exit 1 "magic\.npy: not an \.npy file \(bad magic" quantize -r nvfp4 --in magic.npy --out q
  write_npy hdr.npy '<f4' '(4, 32' 512
  expect_exit 1 "hdr\.npy: malformed \.npy header" quantize -r nvfp4 --in hdr.npy --out q
  expect_exit 1 "missing\.npy: cannot open" quantize -r nvfp4 --in missing.npy --out q
  expect_exit 1 "x\.npy: exists and is not a directory" quantize -r nvfp4 --in x.npy --out x.npy
  expect_exit 2 "unknown backend 'gpu' \(valid: auto, cuda, host, reference\)" quantize -r nvfp4 --backend gpu --in x.npy --out q
  if ! command -v nvidia-smi >/dev/null 2>&1; then  # where no GPU is, asking for one says so
    expect_exit 1 "CUDA" quantize -r nvfp4 --backend cuda --in x.npy --out q
  fi
  expect_exit 2 "unknown operand 'y'" quantize -r nvfp4 --operand y --in x.npy --out q
  expect_exit 2 "--out is required" quantize -r nvfp4 --in x.npy
  expect_exit 2 "unknown dtype 'int8'" dequantize --in q --out y.npy --dtype int8
  expect_exit 2 "" frobnicate
  expect_exit 2 "" quantize --recipe
  expect_exit 1 "has dge=off" dge --recipe nvfp4 --in x.npy --out f.npy
  expect_exit 1 "--shape 'x4'" sample --shape x4 --out s.npy
}

case_layout_errors() {  # dequantize refuses a damaged directory, naming the file
  run_ok sample --shape 32x64 --out x.npy
  run_ok quantize -r nvfp4 --in x.npy --out q
  expect_exit 1 "nope: not a directory" dequantize --in nope --out y.npy
  mkdir empty
  expect_exit 1 "empty/layout\.json: cannot open" dequantize --in empty --out y.npy
  local -a damage=(
    's/"version": 1/"version": 99/' "layout\.json: unknown layout format version 99"
    's/"format": "fp4jit-quantized"/"format": "other"/' "layout\.json: 'format' is 'other'"
    's/"rows": 32,/"rows": 16,/' "layout\.json: source rows x cols = 16 x 64 does not match"
    's/"role": "x"/"role": "q"/' "layout\.json: unknown role 'q'"
    's/"recipe": "nvfp4:/"recipe": "nvfp4:bogus=1,/' "layout\.json: unknown recipe key 'bogus'"
    's/"block": "1x16"/"block": "1x32"/' "layout\.json: 'scales\.block' is '1x32'"
    's/"amax": /"amax": "big", "x": /' "layout\.json: key 'amax' must be a number"
    's/"tensor_scale": {/"tensor_scale": null, "y": {/' "layout\.json: 'tensor_scale' must be present"
    's/^{/[/' "layout\.json: not valid JSON"
  )
  for ((i = 0; i < ${#damage[@]}; i += 2)); do
    rm -rf d && cp -r q d
    sed -i "${damage[i]}" d/layout.json
    expect_exit 1 "${damage[i + 1]}" dequantize --in d --out y.npy
  done
  rm -rf d && cp -r q d && rm d/scales.npy
  expect_exit 1 "d/scales\.npy: cannot open" dequantize --in d --out y.npy
  rm -rf d && cp -r q d && cp q/scales.npy d/codes.npy
  expect_exit 1 "d/codes\.npy: expected a uint8 array of shape \(32, 32\), found uint8 \(32, 4\)" dequantize --in d --out y.npy
  rm -rf d && cp -r q d && cp q/codes.npy d/tensor_scale.npy
  expect_exit 1 "d/tensor_scale\.npy: expected a float32 array of shape \(1,\)" dequantize --in d --out y.npy
  rm -rf d && cp -r q d && head -c 200 q/codes.npy >d/codes.npy
  expect_exit 1 "d/codes\.npy: truncated data" dequantize --in d --out y.npy
}

case_files() {  # re-quantizing into a directory replaces only fp4jit's own files
  run_ok sample --shape 32x64 --out x.npy
  mkdir q && echo keep >q/notes.txt
  run_ok quantize -r nvfp4 --in x.npy --out q
  [[ -f q/tensor_scale.npy ]] || die "nvfp4 wrote no tensor scale"
  run_ok quantize -r mxfp4 --in x.npy --out q
  [[ ! -e q/tensor_scale.npy ]] || die "a stale tensor_scale.npy was left behind"
  [[ $(cat q/notes.txt) == keep ]] || die "a foreign file was touched"
  run_ok sample --shape 8x512 --out x.npy
  run_ok quantize -r msfp4 --in x.npy --out q --quiet
  [[ ! -s out.txt ]] || die "--quiet printed"
  [[ -f q/residual_index.npy ]] || die "msfp4 x wrote no residual"
  run_ok dequantize --in q --out with.npy --compare x.npy
  local with without
  with=$(rel_error out.txt)
  run_ok dequantize --in q --out without.npy --no-residual --compare x.npy
  without=$(rel_error out.txt)
  less_than "$with" "$without" || die "the OCC residual does not reduce the error ($with vs $without)"
}

case_shapes() {  # 1-D and 3-D inputs keep their shape through quantize and dequantize
  run_ok sample --shape 2x32x64 --dtype float16 --out x3.npy
  run_ok quantize -r mxfp4 --in x3.npy --out q3
  grep -q 'matrix \[64, 64\]' out.txt || die "3-D input not flattened to [64, 64]"
  run_ok dequantize --in q3 --out y3.npy
  expect_shape y3.npy "(2, 32, 64)"
  run_ok sample --shape 256 --out x1.npy
  run_ok quantize -r nvfp4 --in x1.npy --out q1
  run_ok dequantize --in q1 --out y1.npy
  expect_shape y1.npy "(256,)"
  run_ok dequantize --in q1 --out o1.npy --operand-layout
  expect_shape o1.npy "(1, 256)"
}

case_sample() {  # deterministic, and every distribution and dtype works
  for dist in normal uniform outliers adversarial; do
    for dtype in float32 float16 bfloat16; do
      run_ok sample --shape 8x64 --dist $dist --dtype $dtype --seed 5 --out a.npy
      run_ok sample --shape 8x64 --dist $dist --dtype $dtype --seed 5 --out b.npy
      cmp -s a.npy b.npy || die "sample $dist $dtype is not deterministic"
      run_ok quantize -r mxfp4 --in a.npy --out q
    done
  done
  run_ok sample --shape 8x64 --seed 6 --out c.npy
  ! cmp -s b.npy c.npy || die "the seed does not change the sample"
}

case_dge() {
  run_ok sample --shape 16x64 --out w.npy
  run_ok dge --recipe msfp4 --in w.npy --out f.npy
  expect_shape f.npy "(16, 64)"
  [[ $(npy_header f.npy) == *"'<f4'"* ]] || die "f.npy is not float32"
  grep -q 'factor range' out.txt || die "no factor range printed"
}

case_backends() {  # RECIPE OPERAND DIST: every backend present writes the same bytes
  local recipe=$1 op=$2 dist=$3 backends=(reference host)
  command -v nvidia-smi >/dev/null 2>&1 && backends+=(cuda)
  export FP4JIT_CACHE=$PWD/cache.db
  run_ok sample --shape 64x128 --dist "$dist" --dtype bfloat16 --seed 7 --out x.npy
  for b in "${backends[@]}"; do
    run_ok quantize --recipe "$recipe" --operand "$op" --backend "$b" --in x.npy --out "q_$b" --seed 9 --offset 3
    grep -q "backend    $b" out.txt || die "quantize did not run on the $b backend"
  done
  for b in "${backends[@]:1}"; do
    for f in q_reference/*.npy; do
      cmp -s "$f" "q_$b/$(basename "$f")" || die "$b wrote a different $(basename "$f") than the reference"
    done
    run_ok dequantize --in "q_$b" --backend "$b" --out "y_$b.npy" --operand-layout
    run_ok dequantize --in "q_$b" --backend reference --out "y_ref_$b.npy" --operand-layout
    cmp -s "y_$b.npy" "y_ref_$b.npy" || die "$b dequantizes differently from the reference"
  done
}

case_compile() {  # ahead-of-time compile into a cache, then a run that must not compile
  local db=$PWD/k.db
  run_ok compile --arch host --recipe mxfp4 --dtype float32 --cache "$db"
  run_ok cache list --cache "$db"
  local n
  n=$(tail -1 out.txt | awk '{print $1}')
  [[ $n -gt 0 ]] || die "compile stored no kernels"
  run_ok sample --shape 32x64 --out x.npy
  FP4JIT_NO_COMPILE=1 run_ok quantize -r mxfp4 --backend host --cache "$db" --in x.npy --out q
  FP4JIT_NO_COMPILE=1 expect_exit 1 "FP4JIT_NO_COMPILE" quantize -r nvfp4 --backend host --cache "$db" --in x.npy --out q2
  local prefix
  prefix=$("$BIN" cache list --cache "$db" | head -1 | cut -c1-12)
  run_ok cache show --cache "$db" "$prefix"
  grep -q '^--- source ---' out.txt || die "cache show printed no source"
  if "$BIN" compile --arch sm_90a --recipe mxfp4 --cache "$db" -q >out.txt 2>err.txt; then
    grep -q 'kernels of recipe mxfp4 for sm_90a' out.txt || die "no sm_90a summary"
    run_ok compile --arch sm_100a --recipe nvfp4 --cache "$db" -q
  else
    grep -q "without CUDA\|NVRTC" err.txt || die "sm_90a compile failed: $(cat err.txt)"
  fi
  run_ok cache clear --cache "$db"
  run_ok cache list --cache "$db"
  grep -q '^0 entries' out.txt || die "cache clear left entries"
}

case_tune() {  # tuner end to end on the host: shapes, model preset, resume, JSON, report, errors
  local db=$PWD/t.db
  printf '{"gpu": "Peer GPU", "gemm": {"64x64x128": {"bf16": 0.5, "cublas_fp8_row": "error: n/a"}}}' >peers.json
  run_ok tune --backend host --recipe nvfp4 --gemm fprop:64x64x128 --max-candidates 3 --budget-ms 5 \
    --cache "$db" --no-quantize --report r.html --peers peers.json
  grep -q 'fprop 64x64x128' out.txt || die "no result line"
  grep -q 'wall time' out.txt || die "no wall time"
  grep -q '<svg' r.html && grep -q 'winner' r.html || die "report has no chart"
  grep -q 'bf16 (Peer GPU)' r.html || die "report does not show the peers"
  expect_exit 1 "peers.*not JSON|not JSON" tune --backend host --recipe nvfp4 --gemm fprop:64x64x128 \
    --cache "$db" --report r2.html --peers out.txt
  ! grep -q '<script\|src=' r.html || die "report is not self-contained"
  # the benchmark runs (and names) the tuned config; another shape the default
  FP4JIT_CACHE=$db run_ok bench gemm --backend host -r nvfp4 --gemm 64x64x128 --op fprop --iters 1
  grep -qE '^ +kernel .* \(tuned\)$' out.txt || die "bench does not name the tuned config"
  FP4JIT_CACHE=$db run_ok bench gemm --backend host -r nvfp4 --gemm 64x96x128 --op fprop --iters 1
  grep -qE '^ +kernel .* \(default\)$' out.txt || die "bench does not name the default config"
  run_ok cache tunings --cache "$db"
  grep -q 'gemm fprop m<=64 n=64 k=128' out.txt || die "tuning not stored"
  grep -q '3 of ' out.txt || die "not every measured candidate was correct"
  # resumable: the second run measures nothing
  run_ok tune --backend host --recipe nvfp4 --gemm fprop:64x64x128 --cache "$db" --no-quantize --json
  grep -q '"cached": true' out.txt || die "a tuned problem was measured again"
  printf '# layers\n64x64x128\nwgrad:64x64x64\n' >shapes.txt
  run_ok tune --backend host --recipe mxfp4 --shapes shapes.txt --max-candidates 2 --budget-ms 2 --cache "$db"
  grep -q 'quantize' out.txt || die "a layer's quantize kernels were not tuned"
  run_ok tune --backend host --recipe nvfp4 --model tiny-llama --tokens 64 --max-candidates 2 --budget-ms 2 --cache "$db"
  grep -q 'dgrad 64x352x128' out.txt || die "tiny-llama's down_proj dgrad missing"
  expect_exit 1 "unknown model 'gpt-9'.*llama-7b" tune --recipe nvfp4 --model gpt-9 --tokens 8 --cache "$db"
  expect_exit 1 "give the token count" tune --recipe nvfp4 --model llama-7b --cache "$db"
  printf '64x64x64\nfprop:64x64\n' >bad.txt
  expect_exit 1 "bad.txt line 2: 'fprop:64x64'" tune --recipe nvfp4 --shapes bad.txt --cache "$db"
  expect_exit 1 "nothing to tune" tune --recipe nvfp4 --cache "$db"
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    expect_exit 1 "no GPU" tune --backend cuda --recipe nvfp4 --gemm 64x64x64 --cache "$db"
  fi
}

case_tune_parallel() {  # four processes tuning into one database at once: every result present
  local db=$PWD/p.db pids=() n
  for n in 64 96 128 160; do
    "$BIN" tune --backend host --recipe nvfp4 --gemm "fprop:64x${n}x128" --gemm fprop:32x32x64 \
      --max-candidates 2 --budget-ms 2 --no-quantize --cache "$db" >"out_$n.txt" 2>"err_$n.txt" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat out_*.txt err_*.txt; die "a tuning process failed"; }; done
  ! grep -qi 'warning' err_*.txt || { cat err_*.txt; die "a process warned"; }
  run_ok cache tunings --cache "$db"
  for n in 64 96 128 160; do grep -q "gemm fprop m<=64 n=$n k=128" out.txt || die "the result for n=$n is missing"; done
  grep -q "gemm fprop m<=64 n=32 k=64" out.txt || die "the shared result is missing"
  [[ $(tail -1 out.txt | awk '{print $1}') == 5 ]] || die "expected 5 tunings"
}

case_bench() {  # bench gemm on the host: every op, and the epilogue options reach the GEMM
  run_ok bench gemm --backend host -r mxfp4 --gemm 64x64x128 --iters 1 --json plain.json
  [[ $(grep -cE '^  (fprop|dgrad|wgrad) ' out.txt) == 3 ]] || die "not one line per op"
  grep -q ', bias' out.txt && die "a bias without --bias"
  run_ok bench gemm --backend host -r mxfp4 --gemm 64x64x128 --op fprop --iters 1 --bias --accumulate \
    --json epi.json
  grep -q '1 operand sets, bias, D += A B^T)' out.txt || die "the epilogue options are not reported"
  python3 - <<'PY' || die "bench JSON"
import json
plain = json.load(open("plain.json"))["results"]
epi = json.load(open("epi.json"))["results"]
assert [r["op"] for r in plain] == ["fprop", "dgrad", "wgrad"], plain
assert not any(r["bias"] or r["accumulate"] for r in plain), plain
assert all(r["kernel"].endswith(" (default)") for r in plain), plain
assert len(epi) == 1 and epi[0]["bias"] and epi[0]["accumulate"] and epi[0]["tflops"] > 0, epi
PY
  # bench quantize: a layer's pairs and its six operands alone, each source in its own shape
  run_ok bench quantize --backend host -r nvfp4 --gemm 64x96x128 --iters 1 --json q.json
  [[ $(grep -cE '^  [a-z+]+ +[0-9]+x[0-9]+ ' out.txt) == 9 ]] || die "not one line per quantize call"
  run_ok bench quantize --backend host -r mxfp4 --gemm 64x96x128 --what pairs --iters 1 --json qp.json
  python3 - <<'PY' || die "bench quantize JSON"
import json
q = json.load(open("q.json"))["results"]
assert [r["problem"] for r in q] == ["x+xt", "w+wt", "dy+dyt", "x", "xt", "w", "wt", "dy", "dyt"], q
shape = {r["problem"]: (r["rows"], r["cols"]) for r in q}
assert shape["x+xt"] == (64, 128) and shape["w"] == (96, 128) and shape["dyt"] == (64, 96), shape
assert all(r["gbps"] > 0 and r["bytes"] > r["rows"] * r["cols"] * 2 for r in q), q
assert [r["pair"] for r in q] == [True] * 3 + [False] * 6, q
qp = json.load(open("qp.json"))["results"]
assert [r["problem"] for r in qp] == ["x+xt", "w+wt", "dy+dyt"] and qp[0]["recipe"] == "mxfp4", qp
PY
  expect_exit 2 "what" bench quantize --backend host -r nvfp4 --gemm 64x96x128 --what gemms
  # a malformed shape is reported as such before any backend starts (here: no GPU needed)
  expect_exit 1 "GEMM shape '64x96'" bench gemm --backend cuda -r mxfp4 --gemm 64x64x128 --gemm 64x96
  expect_exit 1 "GEMM shape '64x96'" bench quantize --backend cuda -r mxfp4 --gemm 64x96
}

case_bundle() {  # export / verify / import, layering, a tampered bundle refused, a cached second run
  local db=$PWD/t.db model
  run_ok tune --backend host --recipe nvfp4 --gemm fprop:64x64x128 --max-candidates 2 --budget-ms 2 --cache "$db"
  model=$("$BIN" cache tunings --cache "$db" | head -1 | cut -d'|' -f1 | sed 's/ *$//')
  [[ -n $model ]] || die "no device model"
  run_ok export --gpu "$model" -o b.fp4b --cache "$db"
  grep -q 'exported [1-9][0-9]* binaries and [1-9][0-9]* tunings' out.txt || die "nothing exported"
  expect_exit 1 "no tunings for device model 'NVIDIA Z9'" export --gpu "NVIDIA Z9" -o z.fp4b --cache "$db"
  run_ok verify b.fp4b --backend host
  grep -q 'this machine: matches' out.txt || die "the bundle does not match the machine that made it"
  expect_exit 1 "not an fp4jit bundle|a kernel cache database" verify "$db"
  # a second process with an empty cache, the bundle imported, compiling nothing
  run_ok import b.fp4b --cache "$PWD/fresh.db" --backend host
  FP4JIT_CACHE=$PWD/fresh.db FP4JIT_NO_COMPILE=1 run_ok bench gemm --backend host -r nvfp4 --gemm 64x64x128 --op fprop --iters 1
  # layered read-only, not imported
  FP4JIT_CACHE=$PWD/empty.db FP4JIT_BUNDLES=$PWD/b.fp4b FP4JIT_NO_COMPILE=1 \
    run_ok bench gemm --backend host -r nvfp4 --gemm 64x64x128 --op fprop --iters 1
  # tampered: one byte of one binary
  cp b.fp4b bad.fp4b
  python3 - <<'PY' || die "could not tamper"
import sqlite3
db = sqlite3.connect("bad.fp4b")
blob = bytearray(db.execute("SELECT binary FROM binaries LIMIT 1").fetchone()[0])
blob[len(blob) // 2] ^= 1
db.execute("UPDATE binaries SET binary = ? WHERE rowid = (SELECT rowid FROM binaries LIMIT 1)", (bytes(blob),))
db.commit()
PY
  expect_exit 1 "do not match their SHA-256" verify bad.fp4b
  grep -q "failed verification" err.txt || die "verify did not say the bundle failed"
  expect_exit 1 "refused" import bad.fp4b --cache "$PWD/fresh2.db" --backend host
  FP4JIT_CACHE=$PWD/empty2.db FP4JIT_BUNDLES=$PWD/bad.fp4b FP4JIT_NO_COMPILE=1 \
    expect_exit 1 "FP4JIT_NO_COMPILE" bench gemm --backend host -r nvfp4 --gemm 64x64x128 --op fprop --iters 1
  grep -q "bundle .*bad.fp4b refused" err.txt || die "the tampered bundle was not refused with a message"
}

"case_$CASE" "$@"
echo "PASS: $CASE $*"
