"""`streamk bench --parity`: issue 42's target table, each row's goal against what was measured."""

import math

import pytest

from streamk.bench.parity import Row, best_cublas, best_ours, corpus_row, table, unaligned_rows


def bench_row(raw, ours, half=None, padded=None):
    row = {"cublas_raw": raw, "auto": ours, "cublas_padded": raw if padded is None else padded}
    if half is not None:
        row["cublas_half"] = half
    return row


def test_a_row_is_met_only_with_its_geomean_and_its_worst_shape():
    assert Row("t", (1.0, 1.21), 1.0, 0.8).geo == pytest.approx(1.1)
    assert Row("t", (1.0, 1.21), 1.0, 0.8).met
    assert not Row("t", (0.79, 1.5), 1.0, 0.8).met  # geomean 1.089 but one shape below 0.8
    assert not Row("t", (0.95,), 1.0).met
    assert Row("t", (0.79, 1.5), 1.0).met  # no worst-shape goal
    assert math.isnan(Row("t", (), 1.0).geo) and not Row("t", (), 1.0).met


def test_cublas_is_its_faster_output_dtype_where_it_has_two():
    assert best_cublas(bench_row(10.0, 5.0, half=8.0)) == 8.0
    assert best_cublas(bench_row(10.0, 5.0)) == 10.0  # FP64: its raw run only
    row = corpus_row([bench_row(10.0, 5.0, half=8.0), bench_row(4.0, 8.0, half=6.0)], "aligned", 0.8)
    assert row.ratios == (1.6, 0.5) and not row.met


def test_each_sides_faster_output_takes_ours_with_a_16_bit_c_where_it_was_timed():
    rows = [{**bench_row(10.0, 5.0, half=8.0), "auto_half": 4.0}, bench_row(4.0, 8.0, half=6.0)]
    assert best_ours(rows[0]) == 4.0 and best_ours(rows[1]) == 8.0  # no auto_half: its FP32 C
    assert corpus_row(rows, "aligned", 0.8, best_ours).ratios == (2.0, 0.5)
    assert corpus_row(rows, "aligned", 0.8).ratios == (1.6, 0.5)  # ours with its FP32 C


def test_the_unaligned_corpus_is_judged_against_padded_and_raw_cublas():
    padded, raw = unaligned_rows([bench_row(30.0, 10.0, padded=9.5), bench_row(25.0, 10.0, padded=9.0)])
    assert padded.ratios == (0.95, 0.9) and padded.met  # >= 0.9
    assert raw.ratios == (3.0, 2.5) and raw.met  # >= 2.5
    assert "padded" in padded.target and "raw" in raw.target


def test_the_table_names_every_target_its_goal_figure_and_verdict():
    text = table([Row("aligned corpus FP16, 2 shapes", (0.7, 0.9), 1.0, 0.8), Row("8192^3 FP16", (1.02,), 1.0)])
    lines = text.splitlines()
    assert lines[0] == "| target | goal | measured | |"
    assert lines[2] == "| aligned corpus FP16, 2 shapes | >= 1x, none < 0.8 | 0.794x, min 0.700 (2 shapes) | not met |"
    assert lines[3] == "| 8192^3 FP16 | >= 1x | 1.020x | met |"
