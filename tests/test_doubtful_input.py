"""Input streamk could act on but should not take silently: a --dtype that changes nothing, a
schedule that runs on the CPU but deadlocks on the machine, speedups that leave deadlocks out
(and tests/test_plot.py: the demo prints each table once)."""

from __future__ import annotations

import json

import pytest

from streamk.cli import main

DEADLOCKS = ["stream-k", "--shape", "384x384x128", "--tile", "128x128x4", "--sms", "1", "--grid", "2"]


@pytest.mark.parametrize("verb", ["schedule", "simulate", "execute"])
def test_dtype_without_a_target_is_refused_in_one_line(verb, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([verb, "stream-k", "--shape", "384x384x128", "--sms", "4", "--dtype", "float64"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "--dtype float64 applies only with --target" in err


def test_dtype_with_a_target_picks_that_dtypes_tile(capsys):
    assert main(["simulate", "stream-k", "--shape", "384x384x128", "--target", "h100", "--dtype", "float64",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tile"] == [64, 64, 16]  # the paper's FP64 tile


def test_execute_says_when_the_schedule_deadlocks_on_the_machine(capsys):
    assert main(["execute", *DEADLOCKS]) == 0
    out = capsys.readouterr().out
    assert "DEADLOCKS (streamk simulate: CTA 0 waits on CTA 1" in out and "any order" in out
    assert main(["execute", *DEADLOCKS, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["deadlock"] is True and "CTA 0 waits on CTA 1" in result["deadlock_reason"]
    assert main(["execute", "stream-k", "--shape", "384x384x128", "--tile", "128x128x4", "--sms", "4"]) == 0
    assert "DEADLOCK" not in capsys.readouterr().out


def test_the_sweep_table_puts_the_deadlock_count_beside_the_speedup(monkeypatch, capsys):
    import streamk as sk
    from streamk.sched import registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # registered for this test only

    @sk.register("stream-k-2x")
    def twice_the_slots(shape, tile, machine):  # owners wait on a CTA beyond the slots: a split tile deadlocks
        grid = min(2 * machine.slots, sk.Problem(shape, tile).total_iters)
        return sk.make_schedule("stream-k", shape, tile, machine, grid=grid)

    argv = ["sweep", "--sms", "1", "--count", "40", "--decomp", "data-parallel,stream-k-2x"]
    assert main(argv + ["--json"]) == 0
    dead = json.loads(capsys.readouterr().out)["deadlocks"]["stream-k-2x"]
    assert 0 < dead < 40
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[3:6] == ["vs", "DP", "deadlocks"]  # the count right after the speedup
    row = next(line.split() for line in lines if line.startswith("stream-k-2x"))
    assert int(row[3]) == dead and any("did not deadlock" in line for line in lines)
