"""The corpus, ``sweep()`` and ``streamk sweep``: CSV rows, JSON summary, user schedulers."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from streamk import Costs, GemmShape, Machine, Schedule, TileShape, make_schedule
from streamk.cli import main
from streamk.sched import names, register
from streamk.sched import registry
from streamk.sim import simulate
from streamk.sim.corpus import corpus
from streamk.sim.sweep import sweep

TILE = TileShape(128, 128, 32)


def test_corpus_is_seeded_and_log_uniform_in_the_papers_domain():
    a, b = corpus(5000, seed=3), corpus(5000, seed=3)
    assert a.shape == (5000, 3) and a.dtype == np.int64 and np.array_equal(a, b)
    assert not np.array_equal(a, corpus(5000, seed=4))
    assert a.min() >= 128 and a.max() <= 8192 and a.min() < 130 and a.max() > 8100
    # log-uniform: the median of each side sits at the geometric middle sqrt(128 * 8192) = 1024,
    # and each factor-of-two band [128,256), ..., [4096,8192] holds about a sixth of the draws.
    assert np.all(np.abs(np.median(a, axis=0) / 1024 - 1) < 0.1)
    bands = np.bincount(np.minimum(np.log2(a[:, 0] / 128).astype(int), 5), minlength=6) / len(a)
    assert np.all(np.abs(bands - 1 / 6) < 0.03)


def test_sweep_rows_agree_with_simulate():
    shapes = corpus(40, seed=1)
    machine = Machine(108)
    result = sweep(shapes, TILE, machine, workers=1)
    assert result.decompositions == tuple(names())
    util = result.utilization
    for d, name in enumerate(result.decompositions):
        for i in (0, 17, 39):
            shape = GemmShape(*shapes[i].tolist())
            options = {"splits": min(2, -(-shape.k // TILE.bk))} if name == "fixed-split" else {}
            t = simulate(make_schedule(name, shape, TILE, machine, **options))
            assert (result.grid[d, i], result.makespan[d, i]) == (t.schedule.grid, t.makespan), (name, shape)
            assert util[d, i] == pytest.approx(t.utilization)


def test_workers_give_the_same_answer():
    shapes = corpus(300, seed=2)
    one = sweep(shapes, TILE, Machine(20, 2), ["fixed-split", "two-tile-sk-dp"], Costs(1, 2, 1, 3), workers=1)
    two = sweep(shapes, TILE, Machine(20, 2), ["fixed-split", "two-tile-sk-dp"], Costs(1, 2, 1, 3), workers=2)
    assert np.array_equal(one.makespan, two.makespan) and np.array_equal(one.grid, two.grid)


def test_fixed_split_takes_two_splits_clamped_to_the_iterations():
    shapes = np.array([[256, 256, 1024], [256, 256, 32]])  # 32 and 1 iterations per tile
    result = sweep(shapes, TILE, Machine(4), ["fixed-split"], workers=1)
    assert result.grid[0].tolist() == [4 * 2, 4 * 1]


@pytest.fixture
def user_scheduler():
    """A user's scheduler: stream-k with its CTAs in reverse blockIdx order."""
    name = "test-reversed-sk"

    def reversed_sk(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
        s = make_schedule("stream-k", shape, tile, machine, grid=2 * machine.slots)
        return Schedule.from_ctas(name, shape, tile, list(reversed(s.ctas)), machine=machine)

    register(name)(reversed_sk)
    yield name
    del registry._REGISTRY[name]


def test_user_schedulers_are_swept_by_default(user_scheduler):
    shapes = corpus(12, seed=5, high=1024)
    result = sweep(shapes, TILE, Machine(3), costs=Costs(0, 1, 1, 1), workers=1)
    d = result.decompositions.index(user_scheduler)
    for i, row in enumerate(shapes.tolist()):
        shape = GemmShape(*row)
        t = simulate(make_schedule(user_scheduler, shape, TILE, Machine(3)), Costs(0, 1, 1, 1))
        assert result.makespan[d, i] == pytest.approx(t.makespan) and result.deadlock[d, i] == t.deadlock


def test_cli_sweep_writes_csv_and_json(tmp_path, capsys):
    out = tmp_path / "sweep.csv"
    argv = ["sweep", "--count", "50", "--seed", "7", "--tile", "128x128x32", "--sms", "108",
            "--decomp", "data-parallel,stream-k,fixed-split", "--out", str(out), "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 50 * 3
    assert set("m,n,k,decomposition,grid,makespan,utilization,deadlock".split(",")) <= set(rows[0])
    assert summary["shapes"] == 50 and summary["seed"] == 7
    for name in ("data-parallel", "stream-k", "fixed-split"):
        mine = [float(r["utilization"]) for r in rows if r["decomposition"] == name]
        assert summary["mean_utilization"][name] == pytest.approx(np.mean(mine), abs=1e-6)
    assert summary["speedup_vs_dp"]["data-parallel"] == 1.0
    # Under the ideal model Stream-K over every slot is never slower than data-parallel.
    assert summary["wins"]["stream-k"] == 50 and summary["speedup_vs_dp"]["stream-k"] > 1
    first = rows[0]
    shape = GemmShape(int(first["m"]), int(first["n"]), int(first["k"]))
    t = simulate(make_schedule(first["decomposition"], shape, TILE, Machine(108)))
    assert float(first["makespan"]) == t.makespan and int(first["grid"]) == t.schedule.grid


def test_cli_sweep_rejects_an_unknown_decomposition(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--count", "5", "--sms", "4", "--decomp", "stream-k,nope"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown decomposition 'nope'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("fixup, walk", [("turnstile", "forward"), ("turnstile", "backward"), ("last-arrival", "forward")])
def test_sweep_with_another_policy_or_walk_agrees_with_simulate(fixup, walk):
    shapes = corpus(12, seed=3)
    tile, machine, costs = TileShape(128, 128, 32), Machine(20), Costs(4, 8, 1, 2)
    result = sweep(shapes, tile, machine, ["stream-k", "two-tile-sk-dp"], costs, workers=1, fixup=fixup, walk=walk)
    for d, name in enumerate(result.decompositions):
        for i, (m, n, k) in enumerate(shapes):
            s = make_schedule(name, GemmShape(int(m), int(n), int(k)), tile, machine, fixup=fixup, walk=walk)
            assert result.makespan[d, i] == simulate(s, costs).makespan


def test_turnstile_forward_is_slower_than_backward_on_streamk():
    shapes = corpus(30, seed=5)
    tile, machine, costs = TileShape(128, 128, 32), Machine(16), Costs(4, 8, 1, 2)
    fwd = sweep(shapes, tile, machine, ["stream-k"], costs, workers=1, fixup="turnstile")
    back = sweep(shapes, tile, machine, ["stream-k"], costs, workers=1, fixup="turnstile", walk="backward")
    assert (back.makespan <= fwd.makespan).all() and (back.makespan < fwd.makespan).any()


def test_decode_corpus_has_one_short_side_and_is_seeded():
    from streamk.sim.corpus import DECODE_HIGH, DECODE_SMALL, decode_corpus

    shapes = decode_corpus(500, seed=3)
    m, n, k = shapes.T
    assert ((m <= DECODE_SMALL) | (n <= DECODE_SMALL)).all() and (np.minimum(m, n) >= 1).all()
    assert (np.maximum(m, n) >= 128).all() and (np.maximum(m, n) <= DECODE_HIGH).all()
    assert (k >= 128).all() and (k <= DECODE_HIGH).all() and k.max() > 8192  # beyond the paper's corpus
    assert 150 < (m <= DECODE_SMALL).sum() < 350  # either side is the short one
    assert np.array_equal(shapes, decode_corpus(500, seed=3)) and not np.array_equal(shapes, decode_corpus(500, seed=4))


def test_sweep_runs_each_decomposition_once_however_often_named(tmp_path, capsys):
    out = tmp_path / "d.csv"
    assert main(["sweep", "--count", "5", "--sms", "108", "--decomp", "stream-k,data-parallel,stream-k",
                 "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["decompositions"] == ["stream-k", "data-parallel"]
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    assert [r["decomposition"] for r in rows[:2]] == ["stream-k", "data-parallel"] and len(rows) == 5 * 2


def test_sweep_out_help_names_every_column_the_csv_has(tmp_path, capsys):
    from streamk.sim.sweep import CSV_COLUMNS

    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    assert ", ".join(CSV_COLUMNS) in " ".join(capsys.readouterr().out.split())
    out = tmp_path / "s.csv"
    assert main(["sweep", "--count", "2", "--sms", "4", "--decomp", "stream-k", "--out", str(out)]) == 0
    assert out.read_text().splitlines()[0] == ",".join(CSV_COLUMNS) and len(CSV_COLUMNS) == 13


def test_sweep_summary_json_has_null_where_a_number_is_not_finite():
    result = sweep(corpus(3, seed=0), TILE, Machine(4), ["data-parallel", "stream-k"], workers=1)
    result.makespan[1, 0] = np.nan  # a shape no path could time
    summary = json.loads(json.dumps(result.summary(), allow_nan=False))
    assert summary["mean_utilization"]["stream-k"] is None and summary["speedup_vs_dp"]["stream-k"] is None
    assert summary["mean_utilization"]["data-parallel"] > 0
