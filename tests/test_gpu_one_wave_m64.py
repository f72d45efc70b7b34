"""On an sm_90 GPU: auto's one wave of 64x128x64 or 64x192x64 tiles (gpu/decide/launches.one_wave_m64,
one_wave_m64_192; the decision is checked on the CPU in tests/test_one_wave_m64.py) gives C within the
float64 bound, the same over relaunches."""

from __future__ import annotations

import math

import pytest

from gpu_support import GPU, error_ratio, inputs, relaunched
from streamk.gpu.catalogue import SM90_M64_192_TILE, SM90_M64_TILE

pytestmark = GPU


@pytest.mark.parametrize(("m", "n", "k", "dtype", "tile"), [(630, 1512, 2160, "float16", SM90_M64_TILE),
                                                     (131, 5376, 3360, "bfloat16", SM90_M64_TILE),
                                                     (187, 7248, 1144, "float16", SM90_M64_192_TILE),
                                                     (150, 6152, 2056, "bfloat16", SM90_M64_192_TILE),
                                                     (100, 5120, 2048, "float16", SM90_M64_TILE),
                                                     (100, 9216, 1024, "bfloat16", SM90_M64_192_TILE),
                                                     (3599, 160, 3392, "float16", SM90_M64_192_TILE)])
def test_auto_on_one_wave_of_64_row_tiles_is_within_the_bound(m, n, k, dtype, tile):
    import torch

    from streamk.gpu import prepare
    from streamk.gpu.runtime.device import current

    if not current().target.one_wave_m64:
        pytest.skip(f"the rule is the H200 preset's (this GPU's Target: {current().target.name})")
    gen = torch.Generator(device="cuda").manual_seed(37)
    A, B = inputs(m, n, k, dtype, gen)
    C = torch.full((m, n), math.nan, device="cuda")
    p = prepare(A, B, C)
    assert p.schedule.tile == tile
    first, last = relaunched(p, C, 5)
    assert error_ratio(first, A, B) <= 1
    assert torch.equal(first, last)
