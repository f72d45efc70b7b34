"""The CPU executor follows the schedule and fixup plan literally and matches a float64 reference.

Tolerance: |C - ref| <= 4*sqrt(k)*eps(acc)*(|A|@|B|) + eps(out)*|ref|, the reference
computed in float64 from the same rounded inputs.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamk import (FIXUP_POLICIES, DeadlockError, GemmShape, Machine, Schedule, ScheduleError, TileShape,
                     execute, make_schedule)
from streamk.executor import round_to_bf16
from strategies import schedules

DETERMINISTIC = [p for p in FIXUP_POLICIES if p != "atomic"]


def inputs(s, precision, rng, order="C"):
    m, n, k = s.shape.m, s.shape.n, s.shape.k
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n))
    c = rng.standard_normal((m, n))
    if precision == "fp16":
        a, b = a.astype(np.float16), b.astype(np.float16)
    elif precision == "bf16":
        a, b = round_to_bf16(a.astype(np.float32)), round_to_bf16(b.astype(np.float32))
    return np.asarray(a, order=order), np.asarray(b, order=order), c


def check_close(out, a, b, c, alpha, beta, precision):
    acc_eps = np.finfo(np.float64 if precision == "fp64" else np.float32).eps
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = alpha * (a64 @ b64) + beta * c.astype(out.dtype).astype(np.float64)
    k = a.shape[1]
    bound = 4 * np.sqrt(k) * acc_eps * (abs(alpha) * (np.abs(a64) @ np.abs(b64)) + abs(beta * c)) + acc_eps * np.abs(ref)
    assert not np.isnan(out).any(), "every element of C must be written"
    err = np.abs(out - ref)
    assert (err <= bound).all(), f"max error {err.max():.3g} exceeds bound at {np.unravel_index(np.argmax(err - bound), err.shape)}"


@given(schedules(max_tiles=24, max_iters=12, weigh_reduce=True), st.sampled_from(FIXUP_POLICIES),
       st.sampled_from(["fp16", "bf16", "fp64"]), st.sampled_from(["C", "F"]), st.integers(0, 2**32 - 1),
       st.sampled_from(["row-major", "column-major", "grouped-2", "grouped-8"]))
@settings(max_examples=40)
def test_executor_matches_float64_reference(s, policy, precision, order, seed, tile_order):
    s = Schedule(s.decomposition, s.shape, s.tile, s.units, s.cta_offsets, s.machine, tile_order, s.fixup)
    rng = np.random.default_rng(seed)
    a, b, c = inputs(s, precision, rng, order)
    alpha, beta = 1.25, -0.5
    out = execute(s, a, b, c, alpha=alpha, beta=beta, precision=precision, fixup=policy)
    assert out.dtype == (np.float64 if precision == "fp64" else np.float32)
    check_close(out, a, b, c, alpha, beta, precision)


@given(schedules(max_tiles=24, max_iters=12), st.sampled_from(DETERMINISTIC), st.integers(0, 2**32 - 1))
@settings(max_examples=40)
def test_deterministic_policies_are_bitwise_identical_in_any_cta_order(s, policy, seed):
    rng = np.random.default_rng(seed)
    a, b, c = inputs(s, "fp16", rng)
    first = execute(s, a, b, c, beta=1.0, fixup=policy)
    for _ in range(3):
        shuffled = execute(s, a, b, c, beta=1.0, fixup=policy, cta_order=rng.permutation(s.grid).tolist())
        assert np.array_equal(first, shuffled)


def test_streamk_example_equals_data_parallel_result_within_rounding():
    rng = np.random.default_rng(1)
    sk = make_schedule("stream-k", GemmShape(384, 384, 128), TileShape(128, 128, 4), Machine(4))
    dp = make_schedule("data-parallel", GemmShape(384, 384, 128), TileShape(128, 128, 4), Machine(4))
    a, b, c = inputs(sk, "fp64", rng)
    assert np.allclose(execute(sk, a, b), execute(dp, a, b), rtol=1e-13, atol=1e-12)


def test_a_wait_cycle_is_a_deadlock_error_not_a_hang():
    # Each CTA first owns a tile (k = 0, so under owner-waits it waits for the peer's tail),
    # and that tail is the other CTA's *second* unit: each blocks the other forever.
    s = Schedule.from_ctas("custom", GemmShape(2, 1, 2), TileShape(1, 1, 1),
                           [[(0, 0, 1), (1, 1, 2)], [(1, 0, 1), (0, 1, 2)]])
    with pytest.raises(DeadlockError, match="wait forever"):
        execute(s, np.ones((2, 2)), np.ones((2, 1)))


@pytest.mark.parametrize("a_shape, b_shape, message", [
    ((64, 32), (33, 16), "A must be 64x32 and B 32x16"),
    ((64, 32, 1), (32, 16), "A must be 64x32"),
])
def test_bad_operands_are_clear_errors(a_shape, b_shape, message):
    s = make_schedule("data-parallel", GemmShape(64, 16, 32), TileShape(32, 16, 8), Machine(2))
    with pytest.raises(ScheduleError, match=message):
        execute(s, np.zeros(a_shape), np.zeros(b_shape))


def test_beta_without_c_and_unknown_precision_are_refused():
    s = make_schedule("data-parallel", GemmShape(8, 8, 8), TileShape(8, 8, 8), Machine(1))
    with pytest.raises(ScheduleError, match="beta != 0 needs a C"):
        execute(s, np.ones((8, 8)), np.ones((8, 8)), beta=1.0)
    with pytest.raises(ScheduleError, match="precision must be one of"):
        execute(s, np.ones((8, 8), dtype=np.int32), np.ones((8, 8), dtype=np.int32))


def test_round_to_bf16_keeps_8_significant_bits_and_rounds_to_even():
    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-7, -3.14159], dtype=np.float32)
    assert round_to_bf16(x).tolist() == [1.0, 1.0, 1 + 2**-6, 1 + 2**-7, -3.140625]
