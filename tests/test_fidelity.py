"""Fidelity's pure parts on CPU: rebuilding the Schedule a GPU row ran, predicting it, the
statistics and the plot, from synthetic rows (the device run is ``streamk fidelity`` on a GPU)."""

import dataclasses
import json
import math

import numpy as np
import pytest

from streamk.calibrate import fidelity
from streamk.calibrate.model import Calibration, Term, term_names
from streamk.calibrate.predict import predict_us
from streamk.cli import main
from streamk.cli.fidelity_cmd import sample
from streamk.errors import InputError
from streamk.plot.fidelity import plot_fidelity
from streamk.shapes import GemmShape, TileShape
from streamk.target import PRESETS, preset, with_calibration

TILE = TileShape(128, 128, 32)
TERMS = {"launch": 4.0, "a": 1.5, "c1": 0.47, "c_shared": 0.92, "a_shared": 0.0, "b": 1.2, "d": 1.3, "pass_launch": 3.0,
         "d_reduce": 0.15, "unit": 2.0, "dram_us_per_mb": 0.35, "atomic": 9.0, "handoff": 0.0, "c_free": 0.05, "c_tpc": 0.0,
         "c_l2": 0.15, "l2_us_per_mb": 0.01, "c_shifted": 0.3, "c_row32": 0.1, "c_scatter": 0.0, "pack": 1.0,
         "pack_us_per_mb": 0.7}  # made up for the test
CAL = Calibration("float16", TILE, 2, tuple(Term(n, TERMS[n], 0.0) for n in term_names(2)), "test GPU", 132,
                  l2_bytes=50 * 2**20)
TARGET = with_calibration(preset("h100"), (CAL,))
SHAPES = [(300, 1000, 4000), (2000, 2048, 512), (128, 128, 8192)]


def _gpu_rows(error: float = 0.05, seed: int = 0) -> list[dict]:
    """Rows as a GPU run writes them, each measured time the prediction times (1 + error N(0,1))."""
    rng = np.random.default_rng(seed)
    rows = []
    for m, n, k in SHAPES:
        for text in fidelity.default_variants(TILE):
            s = fidelity.resolve(text, GemmShape(m, n, k), "float16", TARGET)
            us = predict_us(s, CAL, 132) * (1 + error * rng.standard_normal())
            rows.append({"m": m, "n": n, "k": k, "variant": text, "tile": str(s.tile), "grid": s.grid,
                         "fixup": s.fixup, "fingerprint": fidelity.fingerprint(s), "measured_us": us, "error": ""})
    return rows


def test_spearman_ranks_ties_by_their_average():
    assert fidelity.ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]
    assert fidelity.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert fidelity.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert fidelity.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)  # 1 - 6*2/(4*15)
    assert math.isnan(fidelity.spearman([1, 2], [1, 2])) and math.isnan(fidelity.spearman([1, 2, 3], [5, 5, 5]))


def test_rows_are_predicted_from_the_very_schedule_the_gpu_ran():
    rows = _gpu_rows()
    rows[1] = dict(rows[1], fingerprint="0" * 16)
    rows[2] = dict(rows[2], error="DeadlockError: refused")
    out = fidelity.predict_rows(rows, TARGET, "float16")
    assert out[1]["unpredicted"] == "the rebuilt schedule differs from the one the GPU ran"
    assert math.isnan(out[1]["predicted_us"])
    assert out[2]["error"].startswith("DeadlockError") and math.isnan(out[2]["predicted_us"])
    s = fidelity.resolve(rows[0]["variant"], GemmShape(*SHAPES[0]), "float16", TARGET)
    assert out[0]["predicted_us"] == predict_us(s, CAL, 132)
    bare = dataclasses.replace(TARGET, tiles=tuple(dataclasses.replace(t, calibration=None) for t in TARGET.tiles))
    uncalibrated = fidelity.predict_rows(rows[:1], bare, "float16")[0]
    assert uncalibrated["unpredicted"] == "h100 has no calibration of the float16 128x128x32 kernel"
    assert fidelity.predict_rows([uncalibrated], TARGET, "float16")[0]["predicted_us"] == out[0]["predicted_us"]
    assert {fidelity.label(r["variant"]) for r in out} == set(fidelity.VARIANTS)


def test_summary_scores_what_it_claims():
    rows = []
    for i, (m, n, k) in enumerate(SHAPES):  # within each shape the prediction ranks 3 variants right
        for j, err in enumerate((0.1, -0.2, 0.0)):
            measured = 10.0 * (i + 1) * (j + 1)
            rows.append({"m": m, "n": n, "k": k, "variant": f"v{j}", "measured_us": measured,
                         "predicted_us": measured * (1 + err), "error": ""})
    rows.append({"m": 1, "n": 1, "k": 1, "variant": "v0", "measured_us": 1.0, "predicted_us": math.nan, "error": "x"})
    s = fidelity.summary(rows)
    assert (s["runs"], s["shapes"], s["left_out"]) == (9, 3, 1)
    assert s["within_shape_spearman_median"] == pytest.approx(1.0)
    assert s["median_abs_rel_err"] == pytest.approx(0.1) and s["p90_abs_rel_err"] == pytest.approx(0.2)
    assert s["per_variant"]["v1"]["median_abs_rel_err"] == pytest.approx(0.2)
    assert s["per_variant"]["v1"]["median_rel_err"] == pytest.approx(-0.2)  # signed: under-predicted
    assert s["per_variant"]["v0"]["median_rel_err"] == pytest.approx(0.1) and s["median_rel_err"] == 0.0
    assert s["best_pick_share"] == 1.0 and s["best_pick_cost_geomean"] == pytest.approx(1.0)
    assert s["left_out_why"] == {"x": 1}
    assert "9 runs on 3 shapes (1 left out)" in fidelity.report(s) and "left out 1: x" in fidelity.report(s)


def test_fidelity_from_csv_reports_and_plots_without_a_gpu(tmp_path, capsys, monkeypatch):
    gpu_csv = fidelity.write_csv(_gpu_rows(), tmp_path / "gpu.csv")
    monkeypatch.setitem(PRESETS, "h100", TARGET)
    out = tmp_path / "again.csv"
    assert main(["fidelity", "--from-csv", str(gpu_csv), "--target", "h100", "--out", str(out), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["runs"] == len(SHAPES) * len(fidelity.VARIANTS) and stats["left_out"] == 0
    assert stats["spearman"] > 0.95 and 0.01 < stats["median_abs_rel_err"] < 0.1
    assert out.is_file() and out.with_suffix(".png").stat().st_size > 10_000
    assert len(fidelity.read_csv(out)) == stats["runs"]


def test_a_gzipped_fidelity_csv_reads_and_predicts_as_the_plain_one(tmp_path, capsys, monkeypatch):
    # benchmarks/data keeps its measurements gzipped; --from-csv names its output after the plain name
    import gzip
    import shutil

    plain = fidelity.write_csv(_gpu_rows(), tmp_path / "gpu.csv")
    packed = tmp_path / "gpu.csv.gz"
    with open(plain, "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert fidelity.read_csv(packed) == fidelity.read_csv(plain)
    monkeypatch.setitem(PRESETS, "h100", TARGET)
    assert main(["fidelity", "--from-csv", str(packed), "--target", "h100", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["runs"] == len(SHAPES) * len(fidelity.VARIANTS)
    assert len(fidelity.read_csv(tmp_path / "gpu-h100.csv")) == stats["runs"]
    broken = tmp_path / "broken.csv.gz"
    broken.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match="not a text CSV"):
        fidelity.read_csv(broken)


def test_plot_and_csv_refuse_what_they_cannot_use(tmp_path):
    with pytest.raises(InputError, match="nothing to plot"):
        plot_fidelity([{"variant": "x", "measured_us": 1.0, "predicted_us": math.nan, "error": ""}], tmp_path / "a.png")
    bad = tmp_path / "bad.csv"
    bad.write_text("m,n,k\n1,2,3\n")
    with pytest.raises(InputError, match="lacks column"):
        fidelity.read_csv(bad)


def test_the_sample_is_the_seeded_corpus_with_n_and_k_rounded_up_to_eight():
    whole = sample(10, 0, 5)
    assert sample(4, 6, 5) == whole[6:]
    assert all(n % 8 == 0 and k % 8 == 0 and 128 <= m <= 8192 for m, n, k in whole)


def test_fidelity_cli_device_path_against_a_stand_in_gpu(tmp_path, capsys, monkeypatch):
    # the device run's glue (sample, budget, prediction on the device's Target, CSV, plot), timer aside
    import types

    import streamk.calibrate.device as device
    import streamk.gpu.runtime.device as gpu_device

    dev = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", arch="sm_90a", sms=132, target=TARGET)
    asked = {}

    def measure(shapes, texts, dtype, seconds, on_shape):
        asked.update(shapes=shapes, texts=texts, seconds=seconds)
        return _gpu_rows()[: len(texts)]  # as if the budget ran out after the first shape

    monkeypatch.setattr(device, "require_gpu", lambda: None)
    monkeypatch.setattr(gpu_device, "current", lambda: dev)
    monkeypatch.setattr(device, "measure_fidelity", measure)
    out = tmp_path / "f.csv"
    assert main(["fidelity", "--count", "3", "--first", "2", "--seconds", "9", "--out", str(out), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert asked == {"shapes": sample(3, 2, 20260121), "texts": fidelity.default_variants(TILE), "seconds": 9.0}
    assert stats["runs"] == len(fidelity.VARIANTS) and stats["calibration"]["device"] == "test GPU"
    assert out.with_suffix(".png").is_file()


def test_given_variants_run_on_the_tile_asked_for_unless_they_name_their_own():
    # v23's "sm90 128x128x64" run passed --variants without #TILE and measured the paper's kernel
    pinned = fidelity.pin(["data-parallel", "stream-k!turnstile+back", "auto#64x64x32", "auto"],
                          TileShape(128, 128, 64))
    assert pinned == ["data-parallel#128x128x64", "stream-k!turnstile#128x128x64+back", "auto#64x64x32",
                      "auto#128x128x64"]
    for text in pinned[:2]:
        s = fidelity.resolve(text, GemmShape(1000, 1000, 1000), "float16", TARGET)
        assert s.tile == TileShape(128, 128, 64)


def test_fidelity_from_csv_that_nothing_can_predict_is_an_error_naming_why(tmp_path, capsys):
    """A Target without the runs' kernel predicts none of them: one line and exit 2, the reason
    whole enough to read (cut at a word), the CSV still written for a later --from-csv."""
    src = tmp_path / "runs.csv"
    fidelity.write_csv(_gpu_rows(), src)
    out = tmp_path / "f.csv"
    with pytest.raises(SystemExit) as exit_:
        main(["fidelity", "--from-csv", str(src), "--target", "a100", "--tile", "128x128x32", "--out", str(out)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "none of the" in err and "could be predicted" in err and "--from-csv" in err
    assert out.is_file()
    assert fidelity._gist("word " * 40).endswith(" ...") and len(fidelity._gist("word " * 40)) <= 104


def test_a_fidelity_run_cut_short_keeps_every_timed_shape_in_its_csv(tmp_path, monkeypatch):
    # the CSV is rewritten as each shape is timed: a run killed mid-way (a device call's time limit)
    # leaves the shapes it timed, which --from-csv predicts later
    import types

    import streamk.calibrate.device as device
    import streamk.gpu.runtime.device as gpu_device

    dev = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", arch="sm_90a", sms=132, target=TARGET)
    timed = _gpu_rows()

    def measure(shapes, texts, dtype, seconds, on_shape):
        on_shape(0, timed[: len(texts)])
        raise KeyboardInterrupt  # killed while timing the second shape

    monkeypatch.setattr(device, "require_gpu", lambda: None)
    monkeypatch.setattr(gpu_device, "current", lambda: dev)
    monkeypatch.setattr(device, "measure_fidelity", measure)
    out = tmp_path / "cut.csv"
    assert main(["fidelity", "--count", "3", "--out", str(out)]) == 130  # Ctrl-C: one line, the shell's status
    kept = fidelity.read_csv(out)
    assert [(r["m"], r["variant"], float(r["measured_us"])) for r in kept] == [
        (str(r["m"]), r["variant"], r["measured_us"]) for r in timed[: len(fidelity.default_variants(TILE))]]
    assert main(["fidelity", "--from-csv", str(out), "--target", "h100", "--out", str(tmp_path / "again.csv")]) == 0


@pytest.mark.slow(5)
def test_predictions_spread_over_processes_are_the_ones_made_in_one_in_the_same_order(monkeypatch):
    rows = _gpu_rows() * 12  # more than one task of fidelity.PARALLEL_ROWS
    rows[5] = dict(rows[5], fingerprint="0" * 16)
    monkeypatch.setattr(fidelity, "PARALLEL_ROWS", 64)
    one = fidelity.predict_rows(rows, TARGET, "float16", workers=1)
    two = fidelity.predict_rows(rows, TARGET, "float16", workers=2)
    assert len(one) == len(rows) and len(rows) > 2 * fidelity.PARALLEL_ROWS
    def key(r):  # NaN (a row not predicted) compares by what it says, not as a float
        return r["variant"], None if math.isnan(r["predicted_us"]) else r["predicted_us"], r["unpredicted"]
    assert [key(r) for r in two] == [key(r) for r in one]
    assert one[5]["unpredicted"] and math.isnan(one[5]["predicted_us"])


def test_from_csv_takes_the_dtype_its_runs_record_and_refuses_a_mix_or_a_contradiction(tmp_path, capsys):
    rows = [dict(r, dtype="float16") for r in _gpu_rows()]
    src = tmp_path / "runs.csv"
    fidelity.write_csv(rows, src)
    assert fidelity.read_csv(src)[0]["dtype"] == "float16"
    out = tmp_path / "again.csv"
    assert main(["fidelity", "--from-csv", str(src), "--target", "h100", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["dtype"] == "float16"
    with pytest.raises(SystemExit) as exit_:
        main(["fidelity", "--from-csv", str(src), "--target", "h100", "--out", str(out), "--dtype", "float64"])
    assert exit_.value.code == 2 and "--dtype float64, but the CSVs' runs are float16" in capsys.readouterr().err
    mixed = tmp_path / "mixed.csv"
    fidelity.write_csv(rows[:3] + [dict(r, dtype="bfloat16") for r in rows[3:6]], mixed)
    with pytest.raises(SystemExit) as exit_:
        main(["fidelity", "--from-csv", str(mixed), "--target", "h100", "--out", str(out)])
    assert exit_.value.code == 2 and "mix runs of bfloat16, float16" in capsys.readouterr().err


def test_no_verb_overwrites_measurements_unless_forced(tmp_path, capsys, monkeypatch):
    # an earlier GPU run's fidelity.csv sits in the working folder; predicting another CSV again
    # writes beside that CSV under a new name, and naming a measured file as --out needs --force
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(PRESETS, "h100", TARGET)
    earlier = fidelity.write_csv(_gpu_rows(seed=1), tmp_path / "fidelity.csv").read_bytes()
    other = fidelity.write_csv(_gpu_rows(seed=2), tmp_path / "other.csv")
    assert main(["fidelity", "--from-csv", str(other), "--target", "h100"]) == 0
    assert (tmp_path / "fidelity.csv").read_bytes() == earlier and (tmp_path / "other-h100.csv").is_file()
    for argv in (["fidelity", "--from-csv", str(other), "--target", "h100", "--out", "fidelity.csv"],
                 ["sweep", "--sms", "8", "--count", "5", "--out", "fidelity.csv"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "holds GPU measurements" in err and "--force" in err
        assert (tmp_path / "fidelity.csv").read_bytes() == earlier
    assert main(["sweep", "--sms", "8", "--count", "5", "--out", "fidelity.csv", "--force"]) == 0
    assert (tmp_path / "fidelity.csv").read_text().startswith("m,n,k,decomposition")
    timed = (tmp_path / "bench_float16.csv")  # a GPU bench's rows: refused before any GPU work
    timed.write_text("m,n,k,dtype,cublas_raw,cublas_padded\n128,128,128,float16,0.01,0.01\n")
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--out", str(tmp_path)])
    assert exit_.value.code == 2 and "holds GPU measurements (its cublas_raw column)" in capsys.readouterr().err


@pytest.mark.slow(5)
def test_predictions_on_spawned_workers_are_the_ones_made_in_one(monkeypatch):
    """Where PyTorch has initialized CUDA (a fidelity run on the GPU), the workers are spawned, not
    forked: a forked child that frees an inherited tensor recorded on another stream calls CUDA and
    aborts. Spawned workers must get the same Target and give the same predictions."""
    from streamk import parallel

    rows = _gpu_rows() * 6
    monkeypatch.setattr(fidelity, "PARALLEL_ROWS", 32)
    monkeypatch.setattr(parallel, "start_method", lambda: "spawn")
    one = fidelity.predict_rows(rows, TARGET, "float16", workers=1)
    two = fidelity.predict_rows(rows, TARGET, "float16", workers=2)
    assert len(rows) > 2 * fidelity.PARALLEL_ROWS
    assert [(r["variant"], r["predicted_us"], r["unpredicted"]) for r in two] == \
        [(r["variant"], r["predicted_us"], r["unpredicted"]) for r in one]


def test_workers_are_forked_unless_torch_has_initialized_cuda(monkeypatch):
    import sys
    import types

    from streamk import parallel

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert parallel.start_method() == "fork"
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: True))
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert parallel.start_method() == "spawn"


def test_auto_runs_its_own_tile_where_the_variants_name_theirs_and_no_tile_is_given():
    paper = TileShape(128, 128, 32)
    named = ["auto", "stream-k#128x256x64", "data-parallel!turnstile+back"]
    assert fidelity.run_variants(named, paper, tile_given=False) == named  # auto against every tile's candidates
    pinned = fidelity.run_variants(named, paper, tile_given=True)  # --tile: every variant on it
    assert pinned == ["auto#128x128x32", "stream-k#128x256x64", "data-parallel!turnstile#128x128x32+back"]
    assert fidelity.run_variants(["auto", "stream-k"], paper, tile_given=False) == ["auto#128x128x32",
                                                                                   "stream-k#128x128x32"]
