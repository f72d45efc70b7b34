"""On a GPU: gemm() with NumPy inputs under every fixup policy, and which kernels and tiles it picks."""

import numpy as np
import pytest

from streamk.errors import ScheduleError
from streamk.schedule import FIXUP_POLICIES
from streamk.shapes import GemmShape, TileShape

from gpu_support import GPU
from streamk.gpu import gemm

pytestmark = GPU


def _bound(A, B, C):
    a, b = A.astype(np.float64), B.astype(np.float64)
    ref = a @ b
    eps = np.finfo(C.dtype).eps / 2
    return np.abs(C - ref), 4 * np.sqrt(A.shape[1]) * eps * (np.abs(a) @ np.abs(b)) + eps * np.abs(ref)


@pytest.mark.parametrize("policy", FIXUP_POLICIES)
@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_stream_k_matches_float64_reference(policy, dtype):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((301, 257)).astype(dtype)
    B = rng.standard_normal((257, 199)).astype(dtype)
    C = gemm(A, B, schedule="stream-k", fixup=policy, grid=9)
    err, bound = _bound(A, B, C)
    assert C.dtype == (np.float32 if dtype == np.float16 else np.float64)
    assert np.all(err <= bound), float((err / bound).max())


def test_mismatched_dtypes_fail_before_cuda():
    with pytest.raises(ScheduleError, match="same dtype"):
        gemm(np.ones((4, 4), np.float16), np.ones((4, 4), np.float64))


def test_auto_sums_few_deep_tiles_in_the_sliced_reduce_pass_where_measured():
    from streamk.gpu import prepare
    from streamk.gpu.runtime.device import current

    rng = np.random.default_rng(11)
    A = rng.standard_normal((185, 1362)).astype(np.float16)  # 4 tiles of 43 iterations
    B = rng.standard_normal((1362, 134)).astype(np.float16)
    prepared = prepare(A, B, tile=128)  # auto would take the small tile here
    C = prepared.run()
    err, bound = _bound(A, B, C)
    assert np.all(err <= bound), float((err / bound).max())
    if current().target.kernel("float16", TileShape(128, 128, 32)).reduce_costs is not None:
        assert prepared.schedule.fixup == "separate-reduce" and prepared.schedule.grid > 4
        assert prepared.launch.names[-1] == "streamk_reduce_f32"


def test_grids_of_at_most_a_block_per_sm_get_one_sm_each():
    from streamk.gpu import prepare
    from streamk.gpu.runtime.device import current

    dev = current()
    A = np.ones((256, 64), np.float16)  # 4 tiles: one block per SM fits the device
    B = np.ones((64, 256), np.float16)
    small = prepare(A, B, schedule="data-parallel")
    main = next(st for st in small.launch.steps if "_sm80_" in st.name)
    assert dev.occupancy(main.name, main.block, main.smem) == 1
    assert np.all(small.run() == 64.0)
    wide = dev.sms * 2 * 128  # two blocks per SM: the kernel's own shared memory
    big = prepare(np.ones((wide, 32), np.float16), np.ones((32, 128), np.float16), schedule="data-parallel")
    main = next(st for st in big.launch.steps if "_sm80_" in st.name)
    assert main.smem == dev.smem_bytes(main.name)


@pytest.mark.parametrize("tile", [64, "128x64", "64x128"])
@pytest.mark.parametrize("policy", FIXUP_POLICIES)
def test_smaller_tile_kernels_run_every_policy(policy, tile):
    from streamk.gpu import prepare

    rng = np.random.default_rng(13)
    A = rng.standard_normal((301, 260)).astype(np.float16)  # 5 x 4 tiles of 64x64, 9 iterations
    B = rng.standard_normal((260, 200)).astype(np.float16)
    prepared = prepare(A, B, schedule="stream-k", fixup=policy, grid=11, tile=tile)
    bm, bn = (tile, tile) if tile == 64 else map(int, tile.split("x"))
    assert prepared.schedule.tile == TileShape(bm, bn, 32)
    assert any(name.startswith("streamk_sm80_f16_t") for name in prepared.launch.names)
    C = prepared.run()
    err, bound = _bound(A, B, C)
    assert np.all(err <= bound), float((err / bound).max())


def test_auto_takes_the_small_tile_for_few_tiles_and_a_schedule_brings_its_own():
    from streamk.gpu import prepare
    from streamk.sched import make_schedule
    from streamk.shapes import Machine

    A = np.ones((200, 96), np.float16)  # 2 x 2 tiles of 128, k of 3 MAC iterations: 32x32 tiles (56)
    B = np.ones((96, 256), np.float16)
    tiny = prepare(A, B)
    assert tiny.schedule.tile == TileShape(32, 32, 32) and "streamk_sm80_f16_t32x32" in tiny.launch.names
    assert np.all(tiny.run() == 96.0)
    A2, B2 = np.ones((200, 2400), np.float16), np.ones((2400, 256), np.float16)  # k past 64 iterations: 64x64
    small = prepare(A2, B2)
    assert small.schedule.tile == TileShape(64, 64, 32) and "streamk_sm80_f16_t64" in small.launch.names
    assert np.all(small.run() == 2400.0)
    s = make_schedule("data-parallel", GemmShape(200, 256, 96), TileShape(128, 128, 32), Machine(132))
    assert prepare(A, B, schedule=s).launch.names == ["streamk_sm80_f16"]
    with pytest.raises(ScheduleError, match="no float16 kernel runs 96x96x32"):
        prepare(A, B, schedule=make_schedule("data-parallel", GemmShape(200, 256, 96), TileShape(96, 96, 32),
                                             Machine(132)))


def test_passes_behind_the_main_kernel_and_the_atomic_prescale_launch_by_pdl_at_any_grid_on_sm90():
    """sm_90's programmatic dependent launch: the reduce pass behind a main grid of more than one CTA
    per SM (a GEMV's spread over every resident slot) and the main kernel behind the atomic prescale
    start while the kernel before them runs and wait for it (LOG.md v35d); the sums stay right."""
    from streamk.gpu import prepare
    from streamk.gpu.runtime.device import current

    dev = current()
    if int("".join(ch for ch in dev.arch if ch.isdigit())) < 90:
        pytest.skip(f"programmatic dependent launch is sm_90's ({dev.arch} here)")
    rng = np.random.default_rng(17)
    A = rng.standard_normal((4096, 2048)).astype(np.float16)  # a GEMV of 64 tiles of 16 iterations
    B = rng.standard_normal((2048, 1)).astype(np.float16)
    spread = prepare(A, B)
    assert spread.schedule.grid > dev.sms and spread.schedule.fixup == "separate-reduce"
    assert spread.launch.steps[-1].name.startswith("streamk_reduce") and spread.launch.steps[-1].pdl
    atomic = prepare(A, B, fixup="atomic")
    assert atomic.schedule.grid == spread.schedule.grid
    assert atomic.launch.steps[0].name.startswith("streamk_prescale") and atomic.launch.steps[1].pdl
    for prepared in (spread, atomic):
        for _ in range(3):  # relaunches: each waits for its own prescale
            C = prepared.run()
        err, bound = _bound(A, B, C)
        assert np.all(err <= bound), float((err / bound).max())
