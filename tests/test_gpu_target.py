"""On a GPU: the live device's Target is its arch's preset (each kernel's residency as the
occupancy API gives it), and ``gemm`` runs exactly what ``streamk schedule auto --target`` prints
on a 200-shape sample of the corpus (skipped without a GPU)."""

import json

import pytest
from gpu_support import GPU

from streamk.cli import main
from streamk.schedule import Schedule
from streamk.sim.corpus import corpus
from streamk.target import PRESETS

pytestmark = GPU


def _preset_name(dev) -> str | None:
    named = [name for name in PRESETS if name in dev.name.lower() and PRESETS[name].arch == dev.arch]
    return named[0] if named else None


def test_each_kernels_residency_is_what_the_occupancy_api_gives():
    from streamk.gpu.runtime.device import current
    from streamk.gpu.catalogue import spec_for_tile

    dev = current()
    target = dev.target
    assert (target.arch, target.sms) == (dev.arch, dev.sms)
    for t in target.tiles:
        spec = spec_for_tile(t.dtype, t.tile)
        for entry in (spec.main, *dict(spec.narrow).values()):  # every copy width plans with the same Machine
            got = dev.occupancy(entry, dev.block_size(entry), dev.smem_bytes(entry))
            assert got == t.ctas_per_sm, (entry, got, t)
    name = _preset_name(dev)
    if name is not None and dev.sms == PRESETS[name].sms:
        assert target.tiles == PRESETS[name].tiles


def test_gemm_runs_what_schedule_target_prints_on_a_200_shape_sample(capsys):
    import torch

    from streamk.gpu import prepare
    from streamk.gpu.runtime.device import current

    dev = current()
    name = _preset_name(dev)
    if name is None or dev.sms != PRESETS[name].sms:
        pytest.skip(f"{dev.name} ({dev.sms} SMs) is no preset's GPU")
    tiles = set()
    for i, (m, n, k) in enumerate(corpus(200, 3).tolist()):
        dtype = ("float16", "bfloat16")[i % 2]
        A = torch.empty((m, k), dtype=getattr(torch, dtype), device="cuda")
        B = torch.empty((k, n), dtype=getattr(torch, dtype), device="cuda")
        ran = prepare(A, B).schedule
        assert main(["schedule", "auto", "--shape", f"{m}x{n}x{k}", "--dtype", dtype, "--target", name, "--json"]) == 0
        printed = Schedule.from_json(json.loads(capsys.readouterr().out))
        assert printed == ran, (m, n, k, dtype, printed, ran)
        tiles.add(ran.tile)
    assert len(tiles) >= 4
