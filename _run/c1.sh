set -x
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
git log --oneline | head -1
python3 benchmarks/repeat_check.py --linear --clear --shapes 2048x4096x14336,2048x4096x11008 --after 2048x14336x4096 --repeats 100 2>&1 | tail -8
python3 benchmarks/repeat_check.py --linear --clear --side-stream --shapes 2048x4096x14336,2048x4096x11008 --after 2048x14336x4096 --repeats 100 2>&1 | tail -8
timeout 330 python3 -m streamk bench --parity --seed 4800 --out $OUT/p 2>&1 | tail -40
cd $OUT && tar czf p.tgz p && rm -rf p
