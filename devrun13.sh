#!/bin/bash
export PYTHONPATH=.
python3 -m streamk kernels --arch sm_90a > /dev/null 2>&1
python3 -m pytest -q tests/test_gpu_run.py tests/test_gpu_table.py 2>&1 | tail -1
mkdir -p $OUT/main $OUT/s7 $OUT/bf16
python3 benchmarks/gpu_bench.py --count 400 --big --seconds 500 --decomps "data-parallel;auto;auto#128;data-parallel#64;data-parallel#128x64;data-parallel#64x128;data-parallel#32x64;data-parallel#32x32" --out $OUT/main > $OUT/bench_main.log 2>&1
python3 benchmarks/gpu_bench.py --count 200 --seed 7 --seconds 300 --decomps "data-parallel;auto;auto#128" --out $OUT/s7 > $OUT/bench_s7.log 2>&1
python3 benchmarks/gpu_bench.py --count 100 --dtype bfloat16 --decomps "data-parallel;auto" --out $OUT/bf16 > $OUT/bench_bf16.log 2>&1
for f in main s7 bf16; do echo "== $f"; grep -A12 "^-- all" $OUT/bench_$f.log | grep "vs DP"; grep "own tile" $OUT/bench_$f.log; done
rm -f $OUT/*/*.png
