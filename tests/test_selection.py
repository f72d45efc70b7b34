"""Selection quality as users judge it (issue 43): each shape's predicted-best and auto against the
measured best of every candidate, per tile family and overall; and the candidate table of
``streamk simulate --target``. CPU only."""

from __future__ import annotations

import json

import pytest

from streamk.calibrate import fidelity
from streamk.calibrate.candidates import CANDIDATES, candidate_tiles, candidates
from streamk.calibrate.selection import report, selection
from streamk.cli import main
from streamk.gpu.decide.schedule import schedule_for
from streamk.shapes import GemmShape, TileShape
from streamk.target import preset


def row(shape, variant, tile, measured, predicted, error=""):
    m, n, k = shape
    return {"m": m, "n": n, "k": k, "variant": f"{variant}#{tile}", "tile": tile, "measured_us": measured,
            "predicted_us": predicted, "error": error}


A, B, C = (256, 256, 256), (512, 512, 512), (1024, 1024, 1024)
ROWS = [
    # shape A, tile 1: the model picks the best; auto runs 1.2x it
    row(A, "data-parallel", "128x128x64", 10.0, 9.0), row(A, "stream-k", "128x128x64", 11.0, 10.0),
    row(A, "auto", "128x128x64", 12.0, 12.0),
    # shape B, tile 1: the model picks one 1.04x the best; auto is the best; a failed run is no candidate
    row(B, "data-parallel", "128x128x64", 20.8, 19.0), row(B, "stream-k", "128x128x64", 20.0, 21.0),
    row(B, "auto", "128x128x64", 20.0, 21.0), row(B, "fixed-split", "128x128x64", 1.0, 1.0, error="refused"),
    # shape A, tile 2: unpredicted rows still count for the best; the model's pick 1.5x it; no auto row
    row(A, "data-parallel", "128x256x64", 6.0, float("nan")), row(A, "stream-k", "128x256x64", 9.0, 8.0),
    # shape C, tile 2
    row(C, "data-parallel", "128x256x64", 30.0, 31.0), row(C, "auto", "128x256x64", 30.0, 30.0),
]


def test_each_shapes_picks_are_scored_against_the_measured_best_of_every_candidate():
    sel = selection(ROWS)
    one, two, every = sel["per_tile"]["128x128x64"], sel["per_tile"]["128x256x64"], sel["overall"]
    assert one["shapes"] == 2 and one["predicted_best"]["within_5pct"] == 1.0
    assert one["predicted_best"]["worst"] == pytest.approx(1.04)
    assert one["auto"]["shapes"] == 2 and one["auto"]["within_5pct"] == 0.5 and one["auto"]["worst"] == pytest.approx(1.2)
    assert two["predicted_best"]["worst"] == pytest.approx(1.5) and two["predicted_best"]["within_5pct"] == 0.5
    assert two["auto"]["shapes"] == 1 and two["auto"]["worst"] == 1.0
    # overall, a shape's best is over every tile: A's best is tile 2's DP (6 us); the model's pick
    # (tile 2's Stream-K, 8 predicted) runs 9 / 6; auto (tile 1's, A's only auto row) 12 / 6
    assert every["shapes"] == 3
    assert every["predicted_best"]["worst"] == pytest.approx(1.5) and every["auto"]["worst"] == pytest.approx(2.0)
    assert every["auto"]["within_5pct"] == pytest.approx(2 / 3)
    text = report(sel)
    assert "128x256x64   predicted best       2   50.0%  1.500" in text and text.splitlines()[-1].startswith("all")


def test_fidelity_from_csv_prints_and_returns_the_selection(tmp_path, capsys):
    src = tmp_path / "h200.csv"
    rows = []
    for (m, n, k) in ((3000, 2048, 512), (128, 4096, 4096)):
        for text in fidelity.default_variants(TileShape(128, 128, 64)):
            s = fidelity.resolve(text, GemmShape(m, n, k), "float16", preset("h200"))
            rows.append({"m": m, "n": n, "k": k, "variant": text, "tile": str(s.tile), "grid": s.grid,
                         "fixup": s.fixup, "fingerprint": fidelity.fingerprint(s), "measured_us": 10.0 + s.grid / 100,
                         "error": ""})
    fidelity.write_csv(rows, src)
    argv = ["fidelity", "--from-csv", str(src), "--target", "h200", "--tile", "128x128x64", "--out",
            str(tmp_path / "again.csv")]
    assert main(argv + ["--json"]) == 0
    out, err = capsys.readouterr()
    sel = json.loads(out)["selection"]
    assert set(sel["per_tile"]) == {"128x128x64"} and sel["overall"]["shapes"] == 2
    assert sel["overall"]["auto"]["shapes"] == 2 and "selection: each shape's pick" in err
    assert main(argv + ["--force"]) == 0
    assert "128x128x64   auto                 2" in capsys.readouterr().out


def test_the_candidates_are_the_issues_seven_on_auto_tiles_each_predicted_with_auto_and_argmin_marked():
    h200, shape = preset("h200"), GemmShape(3000, 5000, 701)
    auto = schedule_for("auto", shape, "float16", h200)
    tiles = candidate_tiles(h200, "float16", auto.tile)
    assert tiles == (TileShape(128, 128, 32), TileShape(128, 128, 64), TileShape(128, 256, 64))
    cands = candidates(shape, "float16", h200, auto)
    assert [c.variant.partition("#")[0] for c in cands[:7]] == [v.partition("+")[0] for v in CANDIDATES]
    assert len(cands) == 3 * 7 + 1 and cands[-1].variant == "auto"  # auto's own grid: a row of its own
    assert sum(c.auto for c in cands) == 1 and sum(c.argmin for c in cands) == 1
    best = next(c for c in cands if c.argmin)
    assert best.predicted_us == min(c.predicted_us for c in cands[:-1])
    dp = schedule_for("data-parallel", shape, "float16", h200, tile=TileShape(128, 256, 64))
    marked = candidates(shape, "float16", h200, dp)  # a schedule that is a candidate is marked there
    assert len(marked) == 21 and next(c for c in marked if c.auto).variant == "data-parallel#128x256x64"


def test_simulate_with_a_target_shows_the_candidates(capsys):
    argv = ["simulate", "auto", "--shape", "3000x5000x701", "--target", "h200"]
    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["candidates"]) == 22 and out["candidates"][-1]["predicted_us"] == pytest.approx(out["predicted_us"])
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "<- model's argmin" in text and "<- auto" in text and "x the model's argmin" in text
    assert main(["simulate", "auto", "--shape", "300x300x300", "--sms", "4", "--json"]) == 0
    assert "candidates" not in json.loads(capsys.readouterr().out)  # no target, no candidates


def test_candidates_predicted_on_worker_processes_are_the_ones_predicted_in_one(monkeypatch):
    import streamk.calibrate.candidates as module

    h200, shape = preset("h200"), GemmShape(2000, 3000, 1000)
    auto = schedule_for("auto", shape, "float16", h200)
    monkeypatch.setattr(module, "workers_available", lambda: 1)
    alone = candidates(shape, "float16", h200, auto)
    monkeypatch.setattr(module, "workers_available", lambda: 2)
    monkeypatch.setattr(module, "PARALLEL_ITERS", 0)
    assert candidates(shape, "float16", h200, auto) == alone
