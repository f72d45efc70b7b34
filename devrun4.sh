#!/bin/bash
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
python3 -m pytest -q tests/test_gpu_run.py tests/test_gpu_table.py 2>&1 | tail -2
python3 benchmarks/gpu_check.py --tiles 128,64,128x64,64x128 > $OUT/check.log 2>&1; grep -v "^ok " $OUT/check.log | tail -12
python3 benchmarks/gpu_bench.py --count 400 --big --decomps "data-parallel;auto;auto#128;data-parallel#64;data-parallel#128x64;data-parallel#64x128" > $OUT/bench.log 2>&1; grep -A40 "^float16:" $OUT/bench.log | grep -v "TFLOP/s geomean"
mkdir -p $OUT/mb3 $OUT/s7 $OUT/bf16 $OUT/f64
STREAMK_DEFINES=STREAMK_T64_MIN_BLOCKS=3 python3 benchmarks/gpu_bench.py --count 400 --decomps "data-parallel;auto" --out $OUT/mb3 > $OUT/mb3/log 2>&1; grep -A6 "^float16:" $OUT/mb3/log | tail -2
python3 benchmarks/gpu_bench.py --count 200 --seed 7 --decomps "data-parallel;auto;auto#128" --out $OUT/s7 > $OUT/s7/log 2>&1; grep -A12 "^float16:" $OUT/s7/log | tail -4
python3 benchmarks/gpu_bench.py --count 100 --dtype bfloat16 --decomps "data-parallel;auto" --out $OUT/bf16 > $OUT/bf16/log 2>&1; grep -A10 "^bfloat16:" $OUT/bf16/log | tail -3
python3 benchmarks/gpu_bench.py --count 120 --dtype float64 --decomps "data-parallel;auto" --out $OUT/f64 > $OUT/f64/log 2>&1; grep -A10 "^float64:" $OUT/f64/log | tail -3
rm -f $OUT/*.png $OUT/*/*.png $OUT/check.jsonl
