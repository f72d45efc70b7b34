"""Benchmark our GPU kernels against cuBLAS (torch) on the seeded corpus sample: ``streamk bench``
under its old name (same arguments; streamk/bench/harness.py).

    PYTHONPATH=. python3 benchmarks/gpu_bench.py [--count N] [--big] [--dtype float16|bfloat16|float64]
"""

import sys

from streamk.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
