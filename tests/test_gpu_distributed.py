"""On two GPUs: the row-parallel Linear of tensor parallelism, one process per GPU under
torch.distributed (NCCL): each rank multiplies its slice of x by its rows of W.t() with
streamk.gpu.gemm, then all_reduce sums the partial outputs. A Stream-K GEMM never spans GPUs;
splitting one across devices is torch.distributed's job."""

from __future__ import annotations

import os
import sys
import tempfile


from gpu_support import GPU, TWO_GPUS

pytestmark = GPU


def _rank(rank: int, world: int, store: str, result: str) -> None:
    import torch
    import torch.distributed as dist

    from streamk.gpu import gemm

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world)
    gen = torch.Generator(device=f"cuda:{rank}").manual_seed(0)  # every rank draws the same x and W
    tokens, d_in, d_out = 512, 4096, 1024
    x = torch.randn(tokens, d_in, generator=gen, device=f"cuda:{rank}").half()
    W = torch.randn(d_out, d_in, generator=gen, device=f"cuda:{rank}").half()
    part = slice(rank * d_in // world, (rank + 1) * d_in // world)
    y = gemm(x[:, part], W[:, part].t())  # this rank's partial sum, on its own GPU
    dist.all_reduce(y)
    ref = x.double() @ W.double().t()
    err = float((y.double() - ref).abs().max() / ref.abs().max())
    if rank == 0:
        with open(result, "w") as f:
            f.write(repr(err))
    dist.destroy_process_group()


@TWO_GPUS
def test_row_parallel_linear_over_two_ranks():
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        store, result = os.path.join(tmp, "store"), os.path.join(tmp, "result")
        env = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
        os.environ.update(env)
        sys.path.insert(0, os.path.dirname(__file__))
        mp.spawn(_rank, args=(2, store, result), nprocs=2, join=True)
        with open(result) as f:
            assert float(f.read()) < 1e-3
