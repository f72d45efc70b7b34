"""Benchmark our GPU kernels against cuBLAS (torch) on the seeded corpus sample; see streamk/gpu/bench.py.

    PYTHONPATH=. python3 benchmarks/gpu_bench.py [--count N] [--big] [--dtype float16|bfloat16|float64]
"""

import argparse
import sys

from streamk.gpu.bench import add_arguments, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
