#!/usr/bin/env bash
# One device call of the sm90 GEMM work: runs the prebuilt harness (.carry/gemm) through the
# stages named in $STAGES, each under its own time limit, logs and JSON under $OUT.
#   STAGES="info selftest check dump sass sanitize bench peers" bash bench/gemm_sm90_device.sh
# Env: BENCH_SHAPES, BENCH_RECIPES, CHECK_SHAPES, PEER_SHAPES, BENCH_ARGS.
set -u
H=.carry/gemm/gemm_sm90_harness
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
STAGES=${STAGES:-"info selftest check"}
LLAMA="8192x4096x4096,8192x11008x4096,8192x4096x11008,8192x5120x5120,8192x13824x5120,8192x5120x13824,4096x4096x4096,8192x8192x8192,128x4096x4096,128x11008x4096,128x4096x11008,128x13824x5120"
BENCH_SHAPES=${BENCH_SHAPES:-$LLAMA}
PEER_SHAPES=${PEER_SHAPES:-$LLAMA}
stage() { echo "=== $1 $(date +%s)" | tee -a "$LOG"; }
for s in $STAGES; do
  case $s in
    info)
      stage info
      nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv 2>&1 | tee -a "$LOG" ;;
    smoke)
      # A tiny run per kernel family; families that hang are dropped from the later stages.
      stage smoke
      OKR=""
      for r in msfp4 mxfp4 nvfp4 ue5m3; do
        timeout -s KILL 20 $H check --recipes $r --shapes 256x256x512 --rows 2 2>&1 | grep -v "^device" | tail -4 | tee -a "$LOG"
        rc=${PIPESTATUS[0]}; echo "smoke $r rc=$rc" | tee -a "$LOG"
        if [ "$rc" != 137 ] && [ "$rc" != 3 ]; then OKR="$OKR $r"; [ $r = mxfp4 ] && OKR="$OKR tetrajet mx_stress"; fi
      done
      [ -z "$OKR" ] && OKR=none
      CHECK_RECIPES=${CHECK_RECIPES:-$OKR}; BENCH_RECIPES=${BENCH_RECIPES:-${OKR/ mx_stress/}}
      echo "families that finish: $OKR" | tee -a "$LOG" ;;
    selftest)
      stage selftest
      timeout -s KILL 40 $H selftest 2>&1 | tee -a "$LOG" ;;
    check)
      stage check
      for r in ${CHECK_RECIPES:-msfp4 mxfp4 tetrajet nvfp4 ue5m3 mx_stress}; do
        [ "$r" = none ] && continue
        timeout -s KILL ${CHECK_T:-45} $H check --recipes $r ${CHECK_SHAPES:+--shapes $CHECK_SHAPES} --json /tmp/check_$r.json 2>&1 | grep -v "^device" | tee -a "$LOG"
        echo "rc=$? ($r)" | tee -a "$LOG"
      done
      cat /tmp/check_*.json > "$OUT/check.json" 2>/dev/null ;;
    dump)
      stage dump
      mkdir -p /tmp/dump && timeout -s KILL 40 $H dump --json /tmp/dump 2>&1 | tee -a "$LOG"
      tar czf "$OUT/dump.tgz" -C /tmp dump ;;
    sass)
      stage sass
      cuobjdump -sass $H > /tmp/sass.txt 2>&1
      awk '/Function :/{f=$3} /QGMMA/{q[f]++} /HGMMA/{h[f]++} /LDL|STL/{l[f]++} END{for (k in q) print "QGMMA", q[k], k; for (k in h) print "HGMMA", h[k], k; for (k in l) print "LOCAL", l[k], k}' /tmp/sass.txt | sort | tee -a "$LOG"
      grep -m3 QGMMA /tmp/sass.txt | tee -a "$LOG"; grep -m3 HGMMA /tmp/sass.txt | tee -a "$LOG"
      gzip -c /tmp/sass.txt > "$OUT/sass.txt.gz" ;;
    sanitize)
      stage sanitize
      timeout -s KILL ${SAN_T:-90} compute-sanitizer --tool memcheck --print-limit 20 $H check --shapes 200x300x512 --rows 2 2>&1 | tail -25 | tee -a "$LOG"
      timeout -s KILL ${SAN_T2:-60} compute-sanitizer --tool synccheck --print-limit 20 $H check --shapes 130x200x256 --rows 2 --recipes mxfp4,nvfp4 2>&1 | tail -12 | tee -a "$LOG" ;;
    bench)
      stage bench
      for r in ${BENCH_RECIPES:-msfp4 mxfp4 nvfp4 ue5m3 tetrajet}; do
        [ "$r" = none ] && continue
        timeout -s KILL ${BENCH_T:-60} $H bench --recipes $r --shapes "$BENCH_SHAPES" --json /tmp/bench_$r.json ${BENCH_ARGS:-} 2>&1 | grep -v "^device" | tee -a "$LOG"
      done
      cat /tmp/bench_*.json > "$OUT/bench.json" 2>/dev/null ;;
    bench2)
      stage bench2
      for r in ${BENCH2_RECIPES:-msfp4 mxfp4 nvfp4 ue5m3}; do
        timeout -s KILL ${BENCH_T:-60} $H bench --recipes $r --shapes "${BENCH2_SHAPES:-8192x4096x4096}" --json /tmp/bench2_$r.json ${BENCH2_ARGS:-} 2>&1 | grep -v "^device" | tee -a "$LOG"
      done
      cat /tmp/bench2_*.json > "$OUT/bench2.json" 2>/dev/null ;;
    ncu)
      stage ncu
      for r in ${NCU_RECIPES:-msfp4 nvfp4}; do
        timeout -s KILL ${NCU_T:-90} ncu --clock-control none -k regex:gemm_kernel -c 1 \
          --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
          --section WarpStateStats --section SchedulerStats --section SourceCounters --section LaunchStats \
          -o /tmp/prof_$r $H bench --recipes $r --shapes ${NCU_SHAPE:-8192x4096x4096} --iters 3 > /tmp/ncu_run_$r.log 2>&1
        tail -3 /tmp/ncu_run_$r.log | tee -a "$LOG"
        ncu -i /tmp/prof_$r.ncu-rep --page details > /tmp/prof_$r.txt 2>&1
        ncu -i /tmp/prof_$r.ncu-rep --page source --csv --print-source sass > /tmp/prof_${r}_sass.csv 2>&1
        grep -E "Duration|Throughput|Pipe|Issue|Stall|Eligible|Active Warps|Bank" /tmp/prof_$r.txt | head -40 | tee -a "$LOG"
      done
      (cd /tmp && tar czf "$OUT/prof.tgz" prof_*.txt prof_*_sass.csv ncu_run_*.log 2>/dev/null) ;;
    peers)
      stage peers
      (cd .carry/gemm && timeout -s KILL ${PEER_T:-200} python3 peers.py --shapes "$PEER_SHAPES" --quant 8192x8192 --out "$OUT/peers.json" > /tmp/peers.log 2>&1; tail -5 /tmp/peers.log) | tee -a "$LOG" ;;
  esac
done
stage done
