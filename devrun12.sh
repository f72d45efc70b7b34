#!/bin/bash
export PYTHONPATH=.
python3 -m streamk kernels --arch sm_90a > /dev/null 2>&1
python3 benchmarks/gpu_bench.py --count 400 --seconds 500 --decomps "data-parallel;auto;stream-k@1;stream-k@1#128x64;stream-k@1#64x128;two-tile-sk-dp@1;auto#64" > $OUT/bench.log 2>&1
grep -A10 "^-- all" $OUT/bench.log | grep "vs DP"
rm -f $OUT/*.png
