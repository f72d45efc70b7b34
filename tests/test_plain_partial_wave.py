"""auto's short launches of whole 128x128x64 tiles on sector-aligned rows run row-major and without
clusters (gpu/decide/launches.plain_partial_wave, LOG.md v80), on the CPU: the H200 shapes it was
measured on get the very launch of data-parallel#128x128x64 (same Schedule, row-major, no CTA shares
anything); straddling rows, a fuller wave, packed operands, a given order and the H100 keep auto's
grouped or 2x2 order and its clusters."""

from __future__ import annotations

import pytest

from streamk.bench.variants import variant
from streamk.calibrate.fidelity import fingerprint
from streamk.dispatch import waits_only_backward
from streamk.gpu.catalogue import SM90_TILE
from streamk.gpu.clusters import launch_clusters
from streamk.gpu.decide import decide
from streamk.gpu.decide.launches import PLAIN_MAX_WAVE, QUAD_ORDER
from streamk.gpu.decide.operands import Operand
from streamk.gpu.decide.schedule import schedule_for
from streamk.gpu.request import request
from streamk.gpu.runtime.bind import operand_params
from streamk.gpu.table import build_table
from streamk.shapes import GemmShape
from streamk.target import preset

H200 = preset("h200")


def launch(text: str, mnk: tuple[int, int, int], target=H200, dtype: str = "float16"):
    """(Schedule, CTAs a cluster that shares something: 1 for none) of ``streamk fidelity``'s launch of
    variant ``text`` on contiguous row-major operands."""
    m, n, k = mnk
    a = Operand(None, "cuda", 1 << 20, (m, k), (k, 1), dtype)
    b = Operand(None, "cuda", 1 << 30, (k, n), (n, 1), dtype)
    c = Operand(None, "cuda", 2 << 30, (m, n), (n, 1), "float32")
    args = variant(text, lambda: target.sms)
    d = decide(a, b, c, target, request(args.pop("schedule"), None, args.pop("tile", None), None, args))
    found = launch_clusters(build_table(d.plan), d.spec, d.cluster, not waits_only_backward(d.plan),
                            operand_params(d).ldb * d.spec.itemsize, d.schedule.problem.iters_per_tile)
    return d.schedule, found[0][0] if found else 1


# the H200 oracle shapes whose clustered launch ran 1.04-1.13x the plain one's time (LOG.md v80)
@pytest.mark.parametrize("mnk", [(1769, 592, 5168), (1315, 848, 5312), (1421, 688, 640), (1766, 608, 240)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_short_aligned_launches_run_plain(mnk, dtype):
    s, cluster = launch("auto", mnk, dtype=dtype)
    twin, twin_cluster = launch("data-parallel#128x128x64", mnk, dtype=dtype)
    assert s.tile == SM90_TILE and s.grid <= PLAIN_MAX_WAVE * H200.sms
    assert (fingerprint(s), s.tile_order, cluster) == (fingerprint(twin), "row-major", 1) == \
        (fingerprint(twin), twin.tile_order, twin_cluster)
    assert schedule_for("auto", GemmShape(*mnk), dtype, H200, tile=SM90_TILE).tile_order == "row-major"


@pytest.mark.parametrize("mnk, order, size", [
    ((1769, 600, 5168), "grouped-8", 2),  # B's rows 1200 bytes straddle sectors: the same 70 CTAs stay paired
    ((460, 2800, 2224), "grouped-8", 2),  # 88 CTAs, 0.67 of a wave (measured 0.951x the plain launch)
    ((3377, 304, 240), QUAD_ORDER, 4),    # 81 CTAs, just past 0.6 of a wave (measured 0.947x)
    ((1769, 592, 5169), "grouped-8", 2),  # k odd: A is packed, where the rule was not measured
])
def test_straddling_fuller_or_packed_launches_keep_their_clusters(mnk, order, size):
    s, cluster = launch("auto", mnk)
    assert (s.tile, s.tile_order, cluster) == (SM90_TILE, order, size)


def test_a_given_order_and_other_targets_are_left_alone():
    shape = GemmShape(1769, 592, 5168)
    assert schedule_for("auto", shape, "float16", H200, tile_order="grouped-8").tile_order == "grouped-8"
    h100 = preset("h100")
    assert not h100.plain_partial_waves and H200.plain_partial_waves
    assert launch("auto", (1769, 592, 5168), target=h100)[0].tile_order == "grouped-8"
