"""The table layout agrees with kernels/schedule_table.cuh, and encodes schedule + plan exactly.

Also the GPU API's input checks that need no GPU (pure NumPy / Python)."""

import re
from pathlib import Path

import numpy as np
import pytest

from streamk.errors import DeadlockError, ScheduleError
from streamk.fixup import (NO_WAIT_POLICIES, POLICY_ROLES, TRAIT_NAMES, TRAITS, Action, action_mask,
                           actions_with, needs_epoch, plan_fixup)
from streamk.gpu import table as tbl
from streamk.gpu.runtime.bind import refuse_unfinishable
from streamk.gpu.decide import tiles
from streamk.gpu.decide.schedule import schedule_for
from streamk.gpu.catalogue import SMALL_TILE, SPECS, tile_specs
from streamk.gpu.decide.operands import Operand, check_operands, copy_widths, describe, load_bytes, needs_pack
from streamk.gpu.decide.tiles import choose_tile, large_tiles
from streamk.sched import make_schedule
from streamk.schedule import FIXUP_POLICIES, Schedule
from streamk.shapes import GemmShape, Machine, TileShape
from streamk.gpu.catalogue import DOT_T_TILE, DOT_TILE
from streamk.target import Target, preset

HEADER = (Path(tbl.__file__).parent / "kernels" / "common" / "schedule_table.cuh").read_text()
TILE = TileShape(128, 128, 32)
H100 = preset("h100").with_large_rungs("sm80")  # the sm80 kernels' large rungs, which most tests here pin


def _enum(name):
    body = re.search(r"enum %s : int \{(.*?)\};" % name, HEADER, re.S).group(1)
    return {k: int(v) for k, v in re.findall(r"(\w+) = (\d+)", body)}


def test_header_mirrors_table_py():
    assert int(re.search(r"TABLE_VERSION = (\d+);", HEADER).group(1)) == tbl.TABLE_VERSION
    units = _enum("UnitField")
    assert units.pop("UNIT_FIELDS") == len(tbl.UNIT_FIELDS)
    assert [k.removeprefix("U_").lower() for k, _ in sorted(units.items(), key=lambda kv: kv[1])] == list(tbl.UNIT_FIELDS)
    items = _enum("ItemField")
    assert items.pop("ITEM_FIELDS") == len(tbl.ITEM_FIELDS)
    assert [k.removeprefix("I_").lower() for k, _ in sorted(items.items(), key=lambda kv: kv[1])] == list(tbl.ITEM_FIELDS)
    assert {k.removeprefix("ACT_"): v for k, v in _enum("Action").items()} == {a.name: int(a) for a in Action}
    assert _enum("StateWord")["STATE_WORDS"] == tbl.STATE_WORDS


def test_header_mirrors_the_action_traits():
    codes = {k: v for k, v in _enum("Action").items()}
    masks = dict(re.findall(r"constexpr unsigned ACTION_(\w+) =\s*([^;]*);", HEADER))
    assert sorted(masks) == sorted(t.upper() for t in TRAIT_NAMES)
    for trait in TRAIT_NAMES:
        bits = sum(1 << codes[name] for name in re.findall(r"1u << (ACT_\w+)", masks[trait.upper()]))
        assert bits == action_mask(trait), (trait, masks[trait.upper()], actions_with(trait))
    assert re.search(r"constexpr bool has\(unsigned mask, int action\)", HEADER)


@pytest.mark.parametrize("policy", FIXUP_POLICIES)
def test_policy_facts_follow_from_the_traits(policy):
    s = make_schedule("stream-k", GemmShape(384, 384, 128), TileShape(128, 128, 4), Machine(4), grid=20)
    plan = plan_fixup(s, policy)
    acts = {Action(a) for a in plan.action}
    assert acts - {Action.WRITE} == set(POLICY_ROLES[policy])  # 14-15 iterations a CTA: middles too
    assert (policy in NO_WAIT_POLICIES) == (len(plan.wait_units) == 0)
    assert needs_epoch(plan) == (policy in ("owner-waits", "turnstile", "last-arrival"))
    for a in acts:  # a waiting action has waits listed; a storing one a slot
        units = plan.action == a
        assert (np.diff(plan.wait_offsets)[units] > 0).all() == TRAITS[a].waits, (policy, a)
        assert (plan.slot[units] >= 0).all() == TRAITS[a].stores_partial, (policy, a)


def test_params_struct_matches_header_field_order():
    import ctypes

    from streamk.gpu.runtime.launch import GemmParams, OperandParams, PackPair, PackParams, TableParams, gemm_params

    for cls in (OperandParams, TableParams, GemmParams, PackParams, PackPair):
        body = re.search(r"struct %s \{(.*?)\};" % cls.__name__, HEADER, re.S).group(1)
        names = re.findall(r"(\w+);", re.sub(r"//.*", "", body))
        assert names == [f[0] for f in cls._fields_]
    # the operands (eleven eight-byte fields, then c_type and its pad), then the table: nine eight-byte
    # fields, then m, n, k, table_version
    assert ctypes.sizeof(GemmParams) == 184 and GemmParams.table.offset == 96
    assert GemmParams.table.offset + TableParams.table_version.offset == 8 * 21 + 12
    p = gemm_params(a=0x10, c_cs=1, beta=2.0, units=0x20, m=7, table_version=1)
    assert (p.ops.a, p.ops.c_cs, p.ops.beta, p.table.units, p.table.m, p.table.k) == (0x10, 1, 2.0, 0x20, 7, 0)
    assert (p.ops.a_cs, p.ops.b_cs) == (1, 1)  # unit column strides unless a plan says otherwise
    assert bytes(GemmParams(a=0x10, c_cs=1, beta=2.0, units=0x20, m=7, table_version=1)) == bytes(p)
    with pytest.raises(TypeError, match="must be among"):
        gemm_params(lda=1, ldc=2)


@pytest.mark.parametrize("policy", FIXUP_POLICIES)
@pytest.mark.parametrize("decomp,options", [("stream-k", {"grid": 7}), ("fixed-split", {"splits": 3}),
                                            ("two-tile-sk-dp", {}), ("data-parallel", {})])
def test_table_encodes_schedule_and_plan(decomp, options, policy):
    s = make_schedule(decomp, GemmShape(700, 500, 900), TILE, Machine(5), fixup=policy,
                      tile_order="column-major", **options)
    plan = plan_fixup(s)
    t = tbl.build_table(plan)
    assert t.units.dtype == np.int32 and t.units.shape == (len(s.units), len(tbl.UNIT_FIELDS))
    np.testing.assert_array_equal(t.cta_offsets, s.cta_offsets)
    np.testing.assert_array_equal(t.field("tile"), s.units[:, 0])
    np.testing.assert_array_equal(t.field("k_begin"), s.units[:, 1])
    np.testing.assert_array_equal(t.field("k_end"), s.units[:, 2])
    coords = np.array([s.tile_coords(int(x)) for x in s.units[:, 0]])
    np.testing.assert_array_equal(np.stack([t.field("tile_m"), t.field("tile_n")], 1), coords)
    np.testing.assert_array_equal(t.field("action"), plan.action)
    np.testing.assert_array_equal(t.field("slot"), plan.slot)
    for u in range(len(s.units)):
        off, cnt = t.field("reads_offset")[u], t.field("reads_count")[u]
        np.testing.assert_array_equal(t.reads[off:off + cnt], plan.reads(u))
        off, cnt = t.field("waits_offset")[u], t.field("waits_count")[u]
        np.testing.assert_array_equal(t.waits[off:off + cnt], plan.waits(u))
    assert len(t.items) == len(plan.split_tiles)
    for (tm, tn, off, cnt), tile in zip(t.items.tolist(), plan.split_tiles.tolist()):
        assert (tm, tn) == s.tile_coords(tile)
        if policy == "separate-reduce":
            slots = [int(plan.slot[u]) for u in plan.contributors(tile)]
            assert t.reads[off:off + cnt].tolist() == slots  # summed in k order


def test_stream_k_table_has_split_tiles_and_waits():
    s = make_schedule("stream-k", GemmShape(384, 384, 128), TileShape(128, 128, 4), Machine(4))
    t = tbl.build_table(plan_fixup(s))
    assert t.grid == 4 and t.num_slots == 3 and len(t.items) == 3
    assert sorted(t.field("action").tolist()).count(int(Action.REDUCE)) == 3


def _host(shape, dtype="float16", strides=None):
    strides = strides or (shape[1], 1)
    return Operand(None, "cuda", 4096, shape, strides, dtype)


def test_operand_checks_name_what_is_wrong():
    with pytest.raises(ScheduleError, match="same dtype"):
        check_operands(_host((4, 8)), _host((8, 4), "float64"), None)
    with pytest.raises(ScheduleError, match="inner dimensions"):
        check_operands(_host((4, 8)), _host((9, 4)), None)
    with pytest.raises(ScheduleError, match="dtype must be one of"):
        check_operands(_host((4, 8), "float32"), _host((8, 4), "float32"), None)
    with pytest.raises(ScheduleError, match="C must be float32 or float16 for float16 inputs"):
        check_operands(_host((4, 8)), _host((8, 4)), _host((4, 4), "bfloat16"))
    with pytest.raises(ScheduleError, match="C must be float64 for float64 inputs"):
        check_operands(_host((4, 8), "float64"), _host((8, 4), "float64"), None, "float16")
    with pytest.raises(ScheduleError, match="out_dtype is float32 but C is float16"):
        check_operands(_host((4, 8)), _host((8, 4)), _host((4, 4), "float16"), "float32")
    assert check_operands(_host((4, 8)), _host((8, 4)), _host((4, 4), "float16")) is SPECS["float16"]
    assert check_operands(_host((4, 8), "bfloat16"), _host((8, 4), "bfloat16"), None, "bfloat16") is SPECS["bfloat16"]
    with pytest.raises(ScheduleError, match="C must be 4x4"):
        check_operands(_host((4, 8)), _host((8, 4)), _host((4, 5), "float32"))
    with pytest.raises(ScheduleError, match="rank 2"):
        describe(np.zeros((2, 2, 2), np.float16), "A")
    with pytest.raises(ScheduleError, match="NumPy array"):
        describe([[1.0]], "A")
    assert check_operands(_host((4, 8)), _host((8, 4)), None) is SPECS["float16"]


def test_unaligned_or_column_major_operands_get_packed():
    spec = SPECS["float16"]
    assert not needs_pack(_host((64, 64)), spec)
    assert needs_pack(_host((64, 63)), spec)                    # k not a multiple of 8
    assert needs_pack(_host((64, 64), strides=(1, 64)), spec)   # column-major
    assert needs_pack(Operand(None, "cuda", 4098, (64, 64), (64, 1), "float16"), spec)  # misaligned base
    assert not needs_pack(_host((64, 64), "float64"), SPECS["float64"])
    assert needs_pack(_host((64, 63), "float64"), SPECS["float64"])


def test_widest_copy_that_reads_an_operand_in_place():
    f16, f64 = SPECS["float16"], SPECS["float64"]
    assert load_bytes(_host((64, 64)), f16) == 16
    assert load_bytes(_host((64, 252)), f16) == 8                    # rows of 504 B
    assert load_bytes(_host((64, 90)), f16) == 4                     # rows of 180 B
    assert load_bytes(_host((64, 63)), f16) == 0                     # odd k: 2-byte rows are packed
    assert load_bytes(Operand(None, "cuda", 4097, (64, 64), (64, 1), "float16"), f16) == 0  # odd address
    assert load_bytes(_host((64, 90)), f16, narrow=False) == 0       # the packing of v1-v8
    assert load_bytes(_host((64, 64), strides=(1, 64)), f16) == 0    # column-major
    assert load_bytes(_host((64, 60), strides=(66, 1)), f16) == 4    # row stride decides too
    assert load_bytes(Operand(None, "cuda", 4100, (64, 64), (64, 1), "float16"), f16) == 4  # base
    assert load_bytes(_host((64, 63), "float64"), f64) == 8          # any k: one double per copy
    assert load_bytes(Operand(None, "numpy", 0, (64, 90), (90, 1), "float16"), f16) == 0  # host
    assert (f16.entry(16), f16.entry(8), f16.entry(4)) == ("streamk_sm80_f16", "streamk_sm80_f16_w8",
                                                           "streamk_sm80_f16_w4")
    assert SPECS["bfloat16"].entry(4) == "streamk_sm80_bf16_w4" and f64.entry(8) == "streamk_sm80_f64_w8"
    with pytest.raises(KeyError):
        f16.entry(2)  # no shifted copies on the paper's tile: 2-byte-aligned rows are packed
    small = tile_specs("float16")[SMALL_TILE]
    assert small.entry(2) == "streamk_sm80_f16_t64_w2"
    assert load_bytes(_host((64, 63)), small) == 2                   # odd k: shifted 16-byte copies
    assert load_bytes(Operand(None, "cuda", 4097, (64, 64), (64, 1), "float16"), small) == 0  # half an element


def test_four_byte_copies_only_where_they_save_all_packing_on_a_small_problem():
    f16 = SPECS["float16"]
    small_a, small_b = _host((300, 90)), _host((90, 302))      # 4-byte rows, ~70 flop/B
    assert copy_widths(small_a, small_b, f16) == (4, 4)
    assert copy_widths(small_a, _host((90, 301)), f16) == (0, 0)   # odd n: B packed, so A too
    assert copy_widths(small_a, _host((90, 301)), f16, "always") == (4, 0)  # B packed: 2-byte rows
    assert copy_widths(small_a, _host((90, 304)), f16) == (4, 16)
    assert copy_widths(small_a, small_b, f16, "never") == (0, 0)
    big_a, big_b = _host((4000, 4002)), _host((4002, 4002))    # > W4_MAX_INTENSITY flop/B
    assert copy_widths(big_a, big_b, f16) == (0, 0)
    assert copy_widths(big_a, big_b, f16, "always") == (4, 4)
    assert copy_widths(_host((4000, 4004)), _host((4004, 4002)), f16) == (8, 0)  # 8 bytes: always
    assert copy_widths(_host((4000, 4003)), _host((4003, 4002)), f16) == (0, 0)  # odd k: packed
    assert copy_widths(_host((4000, 4003)), _host((4003, 4002)), f16, "always") == (0, 4)
    with pytest.raises(ScheduleError, match="narrow must be one of"):
        copy_widths(small_a, small_b, f16, "yes")


def test_shifted_copies_read_decode_like_operands_in_place_where_the_pack_is_large():
    small = tile_specs("float16")[SMALL_TILE]
    # m <= SHIFTED_MAX_SIDE and B's odd n: a 36 MB pack saved; the aligned A read 16 bytes wide in the same _w2 kernel
    assert copy_widths(_host((3, 1368)), _host((1368, 13327)), small) == (16, 2)
    assert copy_widths(_host((2048, 4095)), _host((4095, 17)), small) == (2, 2)     # n <= 64: A's odd k, 17 MB
    assert copy_widths(_host((4879, 5958)), _host((5958, 1)), small) == (4, 2)      # A (58 MB) would be co-packed
    assert copy_widths(_host((64, 90)), _host((90, 129)), small) == (0, 0)          # a small pack: packed
    assert copy_widths(_host((300, 257)), _host((257, 30001)), small) == (0, 0)     # two large sides: packed
    assert copy_widths(_host((300, 257)), _host((257, 301)), small, "always") == (2, 2)
    assert copy_widths(_host((3, 1368)), _host((1368, 13327)), small, "never") == (16, 0)
    assert copy_widths(_host((3, 1368)), _host((1368, 13327)), SPECS["float16"]) == (16, 0)  # no _w2 on 128x128



def test_the_dot_tiles_read_their_small_operand_in_place_at_any_strides():
    from streamk.gpu.catalogue import spec_for_tile

    dot, dot_t = spec_for_tile("float16", DOT_TILE), spec_for_tile("float16", DOT_T_TILE)
    # the 64x8 tile streams A (unit column stride, any row) and reads B an element at a time
    assert copy_widths(_host((4096, 1001)), _host((1001, 3), strides=(1, 1001)), dot) == (16, 16)  # x^T
    assert copy_widths(_host((4096, 1001)), _host((1001, 3), strides=(6, 9)), dot) == (16, 16)
    assert copy_widths(_host((4096, 1001), strides=(1, 4096)), _host((1001, 3)), dot) == (0, 16)  # A packed
    # the 8x128 tile streams B and reads A an element at a time
    assert copy_widths(_host((3, 1001), strides=(1, 3)), _host((1001, 4096)), dot_t) == (16, 16)
    assert copy_widths(_host((3, 1001)), _host((1001, 4096), strides=(1, 1001)), dot_t) == (16, 0)

def test_schedule_for_another_shape_or_tile_is_refused():
    s = make_schedule("stream-k", GemmShape(256, 256, 256), TILE, Machine(4))
    with pytest.raises(ScheduleError, match="operands are 256x256x128"):
        schedule_for(s, GemmShape(256, 256, 128), "float16", H100)
    other = make_schedule("stream-k", GemmShape(256, 256, 256), TileShape(64, 64, 16), Machine(4))
    with pytest.raises(ScheduleError, match="runs 128x128x32 tiles"):
        schedule_for(other, GemmShape(256, 256, 256), "float16", H100, tile=TILE)
    with pytest.raises(ScheduleError, match="no float16 kernel on 64x64x16 tiles"):
        schedule_for(other, GemmShape(256, 256, 256), "float16", H100)
    again = schedule_for(s, GemmShape(256, 256, 256), "float16", H100, fixup="turnstile")
    assert again.fixup == "turnstile" and np.array_equal(again.units, s.units)


def test_waits_beyond_residency_are_refused_with_a_safe_policy():
    # owner-waits: the 8 owners (CTAs 0-7) each wait on a peer among CTAs 8-15 -> 9 slots needed
    s = Schedule.from_ctas("custom", GemmShape(8 * 128, 128, 64), TILE,
                           [[(t, 0, 1)] for t in range(8)] + [[(t, 1, 2)] for t in range(8)])
    plan = plan_fixup(s, "owner-waits")
    assert plan.residency_needed() == 9
    refuse_unfinishable(plan, 9)
    with pytest.raises(DeadlockError, match="on this launch's 4 resident CTAs: CTA 0 waits on CTA 8.*"
                                            "fixup='turnstile' \\(checked to finish here: turnstile, last-arrival"):
        refuse_unfinishable(plan, 4)
    refuse_unfinishable(plan_fixup(s, "turnstile"), 1)
    refuse_unfinishable(plan_fixup(s, "last-arrival"), 1)


def test_a_self_wait_is_refused_naming_only_policies_checked_to_finish():
    # CTA 0 runs tile 0's tail before its head: under turnstile the tail waits on its own later unit
    s = Schedule.from_ctas("custom", GemmShape(128, 128, 64), TILE, [[(0, 1, 2), (0, 0, 1)]])
    with pytest.raises(DeadlockError, match="its own later unit.*use fixup='owner-waits' \\(checked to finish "
                                            "here: owner-waits, last-arrival, atomic, separate-reduce\\)"):
        refuse_unfinishable(plan_fixup(s, "turnstile"), 132)


def test_auto_on_an_h100_uses_its_measured_model_constants():
    from streamk import Costs, make_schedule

    shape, machine = GemmShape(640, 1536, 2000), Machine(132, 2)  # 60 tiles x 63 iterations
    kernel = H100.kernel("float16", TILE)
    measured, reduce = kernel.model_costs, kernel.reduce_costs
    s = schedule_for("auto", shape, "float16", H100, tile=TILE)
    both = make_schedule("auto", shape, TILE, machine, model_costs=measured, reduce_costs=reduce)
    assert s.machine == machine and (s.grid, s.fixup) == (both.grid, both.fixup) == (119, "owner-waits")
    owner = schedule_for("auto", shape, "float16", H100, tile=TILE, fixup="owner-waits")  # a policy given
    assert owner.grid == make_schedule("auto", shape, TILE, machine, model_costs=measured).grid == 119
    paper = schedule_for("auto", shape, "float16", preset("a100"), tile=TILE, machine=machine)  # no measurement
    assert paper.grid == 60  # AUTO_COSTS' b = 32: splitting the 60 tiles in two is not worth it
    mine = schedule_for("auto", shape, "float16", H100, tile=TILE, model_costs=Costs(0, 0, 1, 0))
    assert mine.grid == make_schedule("auto", shape, TILE, machine, model_costs=Costs(0, 0, 1, 0)).grid != 119


def test_auto_on_the_gpu_walks_the_two_tile_hybrid_backwards_unless_a_policy_is_given():
    from streamk import make_schedule

    wide, shape = TileShape(128, 256, 32), GemmShape(5120, 5120, 5120)  # 800 tiles, one CTA per SM
    s = schedule_for("auto", shape, "float16", H100)
    forward = make_schedule("two-tile-sk-dp", shape, wide, Machine(132, 1))
    assert s.tile == wide and np.array_equal(s.units, forward.walked_backward().units) and s.fixup == "turnstile"
    given = schedule_for("auto", shape, "float16", H100, fixup="owner-waits")
    assert np.array_equal(given.units, forward.units) and given.fixup == "owner-waits"


def test_launches_without_signals_waits_or_arrivals_need_no_epoch():
    from streamk import make_schedule, plan_fixup

    shape, tile, machine = GemmShape(384, 384, 128), TileShape(128, 128, 4), Machine(4)
    assert not needs_epoch(plan_fixup(make_schedule("data-parallel", shape, tile, machine)))
    sk = make_schedule("stream-k", shape, tile, machine, grid=4)
    assert needs_epoch(plan_fixup(sk, "owner-waits")) and needs_epoch(plan_fixup(sk, "last-arrival"))
    assert not needs_epoch(plan_fixup(sk, "atomic")) and not needs_epoch(plan_fixup(sk, "separate-reduce"))


def test_small_tile_kernels_and_autos_tile_choice():
    from streamk.gpu.catalogue import spec_for_tile

    def choose_tile(shape, dtype, sms, target=H100):
        assert sms == target.sms
        return tiles.choose_tile(shape, dtype, target)

    assert list(tile_specs("float16")) == [TileShape(128, 128, 32), TileShape(64, 64, 32), TileShape(128, 64, 32),
                                           TileShape(64, 128, 32), TileShape(32, 64, 32), TileShape(32, 32, 32),
                                           TileShape(128, 256, 32), TileShape(128, 128, 64), TileShape(128, 256, 64),
                                           TileShape(128, 64, 64), TileShape(128, 192, 64), TileShape(64, 128, 64),
                                           TileShape(64, 256, 64), TileShape(64, 192, 64), TileShape(64, 8, 128),
                                           TileShape(8, 128, 64)]
    assert spec_for_tile("float16", "64x8").main == "streamk_dot_f16" and spec_for_tile("float16", "64x8").any_rows
    assert spec_for_tile("bfloat16", "8x128").main == "streamk_dot_t_bf16" and spec_for_tile("float16", "8x128").any_rows
    assert choose_tile(GemmShape(5000, 8, 4000), "float16", 132) == TileShape(64, 8, 128)  # at most 8 columns, 40 MB
    assert choose_tile(GemmShape(5000, 9, 4000), "float16", 132) != TileShape(64, 8, 128)
    assert choose_tile(GemmShape(500, 8, 4000), "float16", 132) == TileShape(64, 8, 128)  # 32 iterations deep
    assert choose_tile(GemmShape(1000, 8, 384), "float16", 132) != TileShape(64, 8, 128)  # 3 deep, 0.8 MB: fixed costs
    assert choose_tile(GemmShape(10000, 8, 384), "float16", 132) == TileShape(64, 8, 128)  # 3 deep, 7.7 MB
    assert spec_for_tile("bfloat16", "32x64").entry(4) == "streamk_sm80_bf16_t32x64_w4"
    assert spec_for_tile("float16", "128x64").main == "streamk_sm80_f16_t128x64"
    with pytest.raises(ScheduleError, match="tile must look like 128x64"):
        spec_for_tile("float16", "big")
    # the paper's FP64 tile first (auto's), then the larger ones (tile= only)
    assert list(tile_specs("float64")) == [TileShape(64, 64, 16), TileShape(128, 64, 16), TileShape(128, 128, 16)]
    assert spec_for_tile("float64", 128).main == "streamk_sm80_f64_t128x128"
    assert spec_for_tile("bfloat16", 64) is tile_specs("bfloat16")[SMALL_TILE]
    assert spec_for_tile("float16", TileShape(128, 128, 32)) is SPECS["float16"]
    assert tile_specs("float16")[SMALL_TILE].entry(8) == "streamk_sm80_f16_t64_w8"
    with pytest.raises(ScheduleError, match="no float64 kernel runs 256.*there are: 64x64x16, 128x64x16, 128x128x16"):
        spec_for_tile("float64", 256)
    with pytest.raises(ScheduleError, match="no float16 kernel runs 96x96x32"):
        spec_for_tile("float16", TileShape(96, 96, 32))
    # 64x64 tiles that fit one wave on the SMs -> the small tile; the FP64 tile is the paper's
    few = GemmShape(300, 300, 4000)  # 25 tiles of 64x64
    edge = GemmShape(64 * 12, 64 * 11, 64)  # 132
    many = GemmShape(64 * 12, 64 * 11 + 1, 64)  # 144
    assert choose_tile(few, "float16", 132) == TileShape(64, 64, 32)  # k past 64 MAC iterations
    assert choose_tile(GemmShape(146, 395, 166), "float16", 132) == TileShape(32, 32, 32)  # 65 tiles, short k
    assert choose_tile(GemmShape(32 * 12, 32 * 12, 2000), "float16", 132) == TileShape(32, 64, 32)  # 144, 72
    assert choose_tile(GemmShape(64 * 6, 64 * 11, 2048), "float16", 132) == TileShape(32, 64, 32)  # 132
    assert choose_tile(GemmShape(64 * 6 + 1, 64 * 11, 2048), "float16", 132) == TileShape(64, 64, 32)  # 143
    assert choose_tile(edge, "float16", 132) == TileShape(64, 64, 32)
    assert choose_tile(many, "bfloat16", 132) == TileShape(64, 128, 32)  # 72 of either rectangle: a tie
    assert choose_tile(GemmShape(768, 705, 4096), "bfloat16", 132) == TileShape(128, 128, 32)  # long k
    assert choose_tile(GemmShape(64 * 20, 64 * 15, 1024), "float16", 132) == TileShape(64, 64, 32)  # 300: 2-3 per SM
    assert choose_tile(GemmShape(64 * 20, 64 * 15, 1025), "float16", 132) != TileShape(64, 64, 32)
    assert choose_tile(GemmShape(64 * 20, 64 * 20, 1024), "float16", 132) != TileShape(64, 64, 32)  # 400
    assert choose_tile(few, "float64", 132) == TileShape(64, 64, 16)
    # 128x256 tiles filling a wave with k of 32 MAC iterations or more: the wide tile
    assert choose_tile(GemmShape(8192, 8192, 8192), "float16", 132) == TileShape(128, 256, 32)
    assert choose_tile(GemmShape(128 * 12, 256 * 11, 1024), "bfloat16", 132) == TileShape(128, 256, 32)  # 132
    assert choose_tile(GemmShape(128 * 12, 256 * 11, 992), "float16", 132) == TileShape(128, 128, 32)  # 31 its
    assert choose_tile(GemmShape(128 * 12, 256 * 11 - 256, 4096), "float16", 132) == TileShape(128, 128, 32)  # 120
    # GEMMs of at most 1400 columns: 128x192x64 where it pads fewer columns than 128x256x64 and its
    # tiles need no second wave where the wide tile's fit one (decide.tiles.narrower_wide)
    on = H100.with_large_rungs("sm90")
    assert choose_tile(GemmShape(7040, 296, 520), "float16", 132, on) == TileShape(128, 192, 64)  # 384 vs 512
    assert choose_tile(GemmShape(5425, 472, 656), "float16", 132, on) == TileShape(128, 192, 64)  # 129 tiles, not 86
    assert choose_tile(GemmShape(8960, 472, 2048), "float16", 132, on) == TileShape(128, 256, 64)  # 576 vs 512 columns
    assert choose_tile(GemmShape(3224, 944, 256), "float16", 132, on) == TileShape(128, 192, 64)  # 960 vs 1024
    assert choose_tile(GemmShape(2078, 1336, 1744), "float16", 132, on) == TileShape(128, 192, 64)  # 119 tiles, not 102
    assert choose_tile(GemmShape(4806, 1320, 4976), "float16", 132, on) == TileShape(128, 192, 64)  # 266, not 228
    assert choose_tile(GemmShape(3791, 960, 304), "float16", 132, on) == TileShape(128, 256, 64)  # 150 > 132 >= 120
    assert choose_tile(GemmShape(2200, 1800, 1640), "float16", 132, on) == TileShape(128, 256, 64)  # over 1400
    assert choose_tile(GemmShape(1454, 1800, 1640), "float16", 132, on) == TileShape(128, 192, 64)  # 120 tiles, not 96
    # past 1400 columns too where 128x256's tiles fill less than a wave and 128x192's fit one
    assert choose_tile(GemmShape(1280, 2304, 2048), "float16", 132, on) == TileShape(128, 192, 64)  # 120, not 90
    assert choose_tile(GemmShape(1408, 2304, 2048), "float16", 132, on) == TileShape(128, 192, 64)  # 132, not 99
    assert choose_tile(GemmShape(1536, 2304, 2048), "float16", 132, on) == TileShape(128, 256, 64)  # 144 > 132: 108
    # the 64x128 rectangle on the sm90 64x128x64 tile where that kernel reads the operands in place
    assert choose_tile(GemmShape(1625, 632, 1560), "float16", 132, on) == TileShape(64, 128, 64)
    assert choose_tile(GemmShape(539, 1360, 176), "bfloat16", 132, on) == TileShape(64, 128, 64)
    assert choose_tile(GemmShape(539, 1361, 176), "float16", 132, on) == TileShape(64, 128, 32)  # B packed there
    # FP64: the 128x128x16 tile from a wave of its tiles on sm_90a (decide.tiles F64_WIDE_TILE)
    assert choose_tile(GemmShape(8192, 8192, 8192), "float64", 132) == TileShape(128, 128, 16)
    assert choose_tile(GemmShape(128 * 12, 128 * 11, 512), "float64", 132) == TileShape(128, 128, 16)  # 132
    assert choose_tile(GemmShape(128 * 12, 128 * 11 - 128, 512), "float64", 132) == TileShape(64, 64, 16)  # 120
    no_wide = Target("no-wide", "sm_90a", 132, tuple(t for t in H100.tiles if t.tile != TileShape(128, 256, 32)))
    assert choose_tile(GemmShape(8192, 8192, 8192), "float16", 132, no_wide) == TileShape(128, 128, 32)
    # 128x128 tiles under a wave, short k: the rectangle with fewer tiles that fits (a tie: 64x128)
    assert choose_tile(GemmShape(356, 2457, 360), "float16", 132) == TileShape(128, 64, 32)  # 117 vs 120
    assert choose_tile(GemmShape(2522, 203, 960), "float16", 132) == TileShape(64, 128, 32)  # 80 vs 80
    assert choose_tile(GemmShape(2522, 203, 2049), "float16", 132) == TileShape(128, 128, 32)  # k: 65 iterations
    assert choose_tile(GemmShape(4047, 457, 64), "float16", 132) == TileShape(64, 128, 32)  # 256 (two per SM)
    # two rectangles per SM only where their kernel reads contiguous operands 16 bytes wide (an odd n:
    # B is packed, and the packed copy is read 16 bytes wide)
    assert choose_tile(GemmShape(4047, 458, 64), "float16", 132) == TileShape(128, 128, 32)  # 4-byte rows of B
    assert choose_tile(GemmShape(4047, 460, 64), "float16", 132) == TileShape(128, 128, 32)  # 8-byte rows of B
    assert choose_tile(GemmShape(356, 2458, 360), "float16", 132) == TileShape(128, 64, 32)  # 117: one per SM
    assert choose_tile(GemmShape(4047, 593, 64), "float16", 132) == TileShape(128, 128, 32)  # 160 128x128 tiles
    # decode-like (m or n <= 64) where a large operand would be packed: the tiles with shifted copies
    assert choose_tile(GemmShape(9, 13327, 1368), "float16", 132) == TileShape(64, 128, 32)  # 209 tiles of 32x64
    assert choose_tile(GemmShape(3, 4001, 1368), "float16", 132) == TileShape(32, 64, 32)    # 63, short k (10 MB)
    assert choose_tile(GemmShape(38, 2036, 135), "float16", 132) == TileShape(32, 32, 32)   # a small pack: as before
    assert choose_tile(GemmShape(16384, 17, 16383), "bfloat16", 132) == TileShape(128, 64, 32)  # not 128x128x64 + pack
    assert choose_tile(GemmShape(65, 13327, 1368), "float16", 132) != TileShape(64, 128, 32)  # 65: not decode-like
    # other deep decode-like GEMMs: 32x32 or 32x64 up to a quarter wave of them, else the rectangle along
    assert choose_tile(GemmShape(4, 150, 7698), "float16", 132) == TileShape(32, 32, 32)  # 5 tiles
    assert choose_tile(GemmShape(100, 6, 13854), "float16", 132) == TileShape(64, 8, 128)  # at most 8 columns, deep
    assert choose_tile(GemmShape(100, 9, 13854), "float16", 132) == TileShape(32, 32, 32)  # 4
    assert choose_tile(GemmShape(200, 6, 13854), "float16", 132) == TileShape(64, 8, 128)  # at most 8 columns, 5.3 MB
    assert choose_tile(GemmShape(38, 1000, 5984), "float16", 132) == TileShape(32, 64, 32)  # 32 (64 of 32x32)
    assert choose_tile(GemmShape(9, 7128, 4556), "float16", 132) == TileShape(64, 128, 32)  # 56
    assert choose_tile(GemmShape(2088, 9, 6320), "float16", 132) == TileShape(128, 64, 32)  # 17
    assert choose_tile(GemmShape(9, 7128, 2048), "float16", 132) == TileShape(32, 64, 32)  # short: a wave, as before
    # at most 8 rows and 12 MB of B: the transposed dot tile
    assert choose_tile(GemmShape(3, 13327, 1368), "float16", 132) == TileShape(8, 128, 64)  # 36 MB
    assert choose_tile(GemmShape(8, 4096, 1536), "bfloat16", 132) == TileShape(8, 128, 64)  # 12.6 MB
    assert choose_tile(GemmShape(8, 4096, 1408), "float16", 132) != TileShape(8, 128, 64)  # 11.5 MB
    assert choose_tile(GemmShape(4, 6, 1 << 20), "float16", 132) == TileShape(64, 8, 128)  # 8 columns first


def test_auto_takes_the_sm90_tiles_on_its_large_rungs_where_the_target_says_so():
    """Target.large_rungs="sm90" (the h100 and h200 presets'): the square and wide rungs run
    128x128x64 and 128x256x64 with the same thresholds, in the kernels' grouped-8 order; the smaller
    rungs and FP64 are unchanged, and a target without the sm90 tiles falls back to the sm80 ones."""
    on = preset("h100")
    assert on.large_rungs == preset("h200").large_rungs == "sm90" and preset("a100").large_rungs == "sm80"
    assert large_tiles(H100, "float16") == (TileShape(128, 128, 32), TileShape(128, 256, 32))
    assert large_tiles(on, "bfloat16") == (TileShape(128, 128, 64), TileShape(128, 256, 64))
    assert large_tiles(on, "float64") == (TileShape(64, 64, 16), None)
    cases = [(GemmShape(8192, 8192, 8192), TileShape(128, 256, 64)),
             (GemmShape(128 * 12, 256 * 11, 1024), TileShape(128, 256, 64)),  # 132 wide tiles, 32 iterations
             (GemmShape(128 * 12, 256 * 11, 992), TileShape(128, 128, 64)),   # 31 iterations, two whole waves of 128x128
             (GemmShape(2522, 203, 2049), TileShape(128, 128, 64)),
             (GemmShape(300, 300, 4000), TileShape(64, 64, 32)),   # the small rungs stay sm80
             (GemmShape(356, 2457, 360), TileShape(128, 64, 32))]
    for shape, tile in cases:
        assert choose_tile(shape, "float16", on) == tile, shape
        off = choose_tile(shape, "float16", H100)
        assert off == tile if tile.bk == 32 else off == TileShape(tile.bm, tile.bn, 32), shape
    # 120 wide tiles: the sm80 rungs keep the square tile (under a wave of wide ones); the sm90 ones take
    # the wide tile where its one wave replaces 1.8 waves of 128x128x64
    shape = GemmShape(128 * 12, 256 * 11 - 256, 4096)
    assert choose_tile(shape, "float16", H100) == TileShape(128, 128, 32)
    assert choose_tile(shape, "float16", on) == TileShape(128, 256, 64)
    assert choose_tile(GemmShape(8192, 8192, 8192), "float64", on) == TileShape(128, 128, 16)  # F64_WIDE_TILE
    sm80_only = Target("sm80-only", "sm_90a", 132, tuple(t for t in H100.tiles if t.tile.bk != 64), "sm90")
    assert choose_tile(GemmShape(8192, 8192, 8192), "float16", sm80_only) == TileShape(128, 256, 32)
    # auto on an sm90 tile takes the kernel's tile order unless the caller names one
    big = GemmShape(4096, 4096, 4096)
    assert schedule_for("auto", big, "float16", on).tile_order == "grouped-8"
    assert schedule_for("auto", big, "float16", H100).tile_order == "row-major"
    assert schedule_for("auto", big, "float16", H100, tile=TileShape(128, 128, 64)).tile_order == "grouped-8"
    assert schedule_for("auto", big, "float16", on, tile_order="row-major").tile_order == "row-major"
    assert schedule_for("data-parallel", big, "float16", on, tile=TileShape(128, 256, 64)).tile_order == \
        "row-major"  # named decompositions run as asked
    with pytest.raises(ScheduleError, match="large_rungs must be one of sm80, sm90 \\(got 'sm100'\\)"):
        H100.with_large_rungs("sm100")


def test_programmatic_dependent_launch_only_on_sm90_and_behind_a_pack_or_the_stream_by_default_for_one_wave():
    from streamk.gpu.decide.launches import STREAM_PDL_MAX_MACS, use_pdl

    for behind in ("pack", "stream"):  # the kernel before may be a multi-wave grid: one wave by default
        assert use_pdl(None, 132, 132, "sm_90a", behind=behind) and not use_pdl(None, 133, 132, "sm_90a", behind=behind)
        assert use_pdl(True, 500, 132, "sm_90a", behind=behind) and not use_pdl(False, 10, 132, "sm_90a", behind=behind)
        assert not use_pdl(True, 10, 108, "sm_80", behind=behind) and use_pdl(None, 10, 148, "sm_100", behind=behind)
    # behind the main kernel or the one-wave prescale: every grid, unless told not to
    for behind in ("main", "prescale"):
        assert use_pdl(None, 528, 132, "sm_90a", behind=behind) and not use_pdl(False, 528, 132, "sm_90a", behind=behind)
        assert not use_pdl(None, 528, 132, "sm_80", behind=behind)
    # behind an unknown kernel, not where the busiest CTA runs more than eight 128x128x64
    # iterations and the grid is more than half a wave and less than 90% of one
    deep = STREAM_PDL_MAX_MACS + 1
    assert not use_pdl(None, 100, 132, "sm_90a", behind="stream", cta_macs=deep)
    assert not use_pdl(None, 67, 132, "sm_90a", behind="stream", cta_macs=deep)
    assert use_pdl(None, 66, 132, "sm_90a", behind="stream", cta_macs=deep)
    assert use_pdl(None, 119, 132, "sm_90a", behind="stream", cta_macs=deep)
    assert use_pdl(None, 100, 132, "sm_90a", behind="stream", cta_macs=STREAM_PDL_MAX_MACS)
    assert use_pdl(None, 100, 132, "sm_90a", behind="pack", cta_macs=deep)  # the pack's end is known
    assert use_pdl(True, 100, 132, "sm_90a", behind="stream", cta_macs=deep)  # +pdl
    with pytest.raises(ValueError, match="behind must be one of pack, prescale, main, stream"):
        use_pdl(None, 10, 132, "sm_90a", behind="pass")


def test_the_busiest_ctas_macs_count_on_the_sm90_kernels_only():
    from streamk.gpu.decide import decide
    from streamk.gpu.decide.launches import longest_cta_macs
    from streamk.gpu.decide.operands import Operand
    from streamk.gpu.request import request

    def op(rows, cols):
        return Operand(None, "torch", 0, (rows, cols), (cols, 1), "float16")

    # 8 x 2 tiles of 128x128, 40 iterations of k 64 each: data-parallel CTAs run one tile each;
    # Stream-K over 132 CTAs spreads 640 iterations, at most ceil(640 / 132) = 5 a CTA
    for schedule, iterations in (("data-parallel", 40), ("stream-k", 5)):
        d = decide(op(1024, 2560), op(2560, 256), None, preset("h100"), request(schedule, None, "128x128x64"))
        assert longest_cta_macs(d.spec, d.schedule) == \
            iterations * 128 * 128 * 64, schedule
    d = decide(op(1024, 2560), op(2560, 256), None, preset("h100"), request("data-parallel", None, "64x64x32"))
    assert longest_cta_macs(d.spec, d.schedule) == 0  # an sm80 tile


def test_launch_steps_launch_the_main_kernel_by_pdl_behind_any_kernel_on_sm90():
    """The main kernel waits (griddepcontrol) for the kernel before it, so it launches by PDL as the
    GEMM's first kernel too (behind the stream's last kernel: one-wave grids by default, as behind
    the pack), behind the pack, behind the atomic prescale; Tuning.pdl False (+nopdl) turns every
    step's off, True every one's on; never on sm_80; never behind a prescale behind a pack."""
    from types import SimpleNamespace

    from streamk.gpu.decide import decide
    from streamk.gpu.decide.operands import Operand
    from streamk.gpu.request import request
    from streamk.gpu.runtime.bind import launch_steps, operand_params
    from streamk.gpu.runtime.launch import Step

    def op(rows, cols):
        return Operand(None, "torch", 0, (rows, cols), (cols, 1), "float16")

    def flags(m, n, k, schedule, fixup=None, arch="sm_90a", pdl=None, **options):
        d = decide(op(m, k), op(k, n), None, preset("h100"), request(schedule, fixup, "128x128x64", options=options))
        dev = SimpleNamespace(sms=132, arch=arch, function=lambda name, smem=0: None, block_size=lambda name: 256,
                              smem_bytes=lambda name: 0)
        main = Step(d.main, None, d.schedule.grid, 384, 0)
        steps = launch_steps(dev, d, operand_params(d).pack, main, len(tbl.build_table(d.plan).items), pdl)
        return [(st.name.split("_")[1], st.pdl) for st in steps], d.schedule.grid

    # the GEMM's first kernel (aligned, nothing packed): behind whatever ran before it on the stream
    first, grid = flags(1024, 1024, 1024, "stream-k", "owner-waits")
    assert grid == 132 and first == [("sm90", True)]
    assert flags(1024, 1024, 1024, "stream-k", "owner-waits", pdl=False)[0] == [("sm90", False)]  # +nopdl
    assert flags(1024, 1024, 1024, "stream-k", "owner-waits", arch="sm_80", pdl=True)[0] == [("sm90", False)]
    waves, grid = flags(4096, 4096, 1024, "data-parallel")
    assert grid > 132 and waves == [("sm90", False)]  # more CTAs than SMs: not by default
    assert flags(4096, 4096, 1024, "data-parallel", pdl=True)[0] == [("sm90", True)]  # +pdl
    # 80 CTAs of 64 iterations each: not behind an unknown kernel by default; 16 such CTAs, yes
    assert flags(1280, 1024, 4096, "data-parallel")[0] == [("sm90", False)]
    assert flags(1280, 1024, 4096, "data-parallel", pdl=True)[0] == [("sm90", True)]
    assert flags(1024, 256, 4096, "data-parallel")[0] == [("sm90", True)]
    # behind the pack pass (k odd: A's rows packed), which itself launches plainly
    assert flags(1024, 1024, 1001, "stream-k", "owner-waits")[0] == [("pack", False), ("sm90", True)]
    assert flags(1024, 1024, 1001, "stream-k", "owner-waits", pdl=False)[0] == [("pack", False), ("sm90", False)]
    # the reduce pass behind the main kernel at any grid; the main kernel of 256 CTAs not by default
    split = dict(fixup="separate-reduce", splits=4)
    assert flags(1024, 1024, 4096, "fixed-split", **split)[0] == [("sm90", False), ("reduce", True)]
    assert flags(1024, 1024, 4096, "fixed-split", **split, pdl=True)[0] == [("sm90", True), ("reduce", True)]
    assert flags(1024, 1024, 4096, "fixed-split", **split, pdl=False)[0] == [("sm90", False), ("reduce", False)]
    # the atomic prescale launches plainly and the main kernel behind it by PDL at any grid; behind a
    # prescale behind a pack, plainly
    assert flags(1024, 1024, 4096, "fixed-split", "atomic", splits=4)[0] == [("prescale", False), ("sm90", True)]
    assert flags(1024, 1024, 4001, "fixed-split", "atomic", splits=4)[0] == \
        [("pack", False), ("prescale", False), ("sm90", False)]


def test_auto_runs_gemms_transposed_where_that_copies_less():
    """x @ W.t() (torch's Linear) has a column-major B, which no kernel reads in place: auto runs
    C^T = W @ x^T, which reads W's rows in place and packs only x, unless C (written down its
    columns then, at half the price of a packed byte) outweighs what that saves. A tile asked,
    another schedule, or nothing to save: as asked."""
    from streamk.gpu.decide import decide
    from streamk.gpu.decide.operands import Operand
    from streamk.gpu.request import request

    def op(rows, cols, strides):
        return Operand(None, "torch", 0, (rows, cols), strides, "float16")

    h100 = preset("h100")

    def transposed(a, b, c=None, schedule="auto", tile=None):
        return decide(a, b, c, h100, request(schedule, tile=tile)).transposed

    # W: 4096 x 11008, row-major (a wide W of 40 MiB or more runs on 64x256x64 in place instead:
    # test_auto_runs_linear_decode_on_an_sm90_64_row_tile_where_w_outgrows_the_l2)
    x, wt = op(1, 11008, (11008, 1)), op(11008, 4096, (1, 11008))
    assert transposed(x, wt)
    assert not transposed(x, op(11008, 4096, (4096, 1)))  # row-major: nothing to save
    assert not transposed(x, wt, tile="64x8")
    assert not transposed(x, wt, schedule="stream-k")
    assert transposed(op(6001, 1203, (1, 6001)), op(1203, 5, (5, 1)))  # column-major A, n <= 8
    assert transposed(op(8, 320, (320, 1)), op(320, 3000, (1, 320)))  # packs x, not W
    assert transposed(op(64, 320, (320, 1)), op(320, 3000, (1, 320)))
    assert transposed(op(64, 320, (1, 64)), op(320, 3000, (1, 320)))  # both column-major
    assert transposed(op(3000, 320, (1, 3000)), op(320, 64, (64, 1)))  # column-major A, n = 64
    assert not transposed(op(30, 320, (1, 30)), op(320, 3000, (3000, 1)))  # A's copy is the smaller
    # prefill on the sm90 tiles: W.t() is read in place as a column-major B, nothing to save
    assert not transposed(op(2048, 4096, (4096, 1)), op(4096, 11008, (1, 4096)))
    assert not transposed(op(8192, 4096, (4096, 1)), op(4096, 11008, (1, 4096)))
    # a column-major C given: the transposed problem writes it row-major, so it tips the other way
    assert transposed(op(8192, 4096, (4096, 1)), op(4096, 11008, (1, 4096)), op(8192, 11008, (1, 8192)))
    # W's rows only 2-byte aligned (stride 303): the transposed problem, too shallow for the dot
    # tile, packs W too, but as rows, at half the price of transposing it (H100: 9.4 -> 6.9 us)
    assert transposed(op(8, 300, (300, 1)), op(300, 3000, (1, 303)))
    # a row-major GEMM of at most 8 rows packs its odd-width B either way: transposed, B would be
    # a column-major source, at twice the price (H100, 2x953x1661: 16.0 us transposed, 8.7 direct)
    assert not transposed(op(2, 1661, (1661, 1)), op(1661, 953, (953, 1)))
    assert not transposed(op(1, 625, (625, 1)), op(625, 643, (643, 1)))


def test_pack_kernel_block_size_mirrors_the_plan():
    from streamk.gpu.runtime import bind

    pack = (Path(tbl.__file__).parent / "kernels" / "common" / "pack.cuh").read_text()
    assert int(re.search(r"constexpr int PACK_THREADS = (\d+);", pack).group(1)) == bind.PACK_THREADS


def test_the_sm90_kernels_read_aligned_column_major_operands_in_place():
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.decide.operands import Operand, copy_widths, layout_of

    def op(rows, cols, strides, ptr=0):
        return Operand(None, "torch", ptr, (rows, cols), strides, "float16")

    sm90, sm80 = spec_for_tile("float16", "128x128x64"), spec_for_tile("float16", "128x128x32")
    x, wt = op(512, 4096, (4096, 1)), op(4096, 11008, (1, 4096))  # torch's x @ W.t()
    assert copy_widths(x, wt, sm90) == (16, 16) and layout_of(x, wt, sm90) == "bcm"
    assert copy_widths(x, wt, sm80) == (16, 0) and layout_of(x, wt, sm80) == ""  # sm80 packs W.t()
    at = op(512, 4096, (1, 512))  # a column-major A
    assert copy_widths(at, wt, sm90) == (16, 16) and layout_of(at, wt, sm90) == "acm_bcm"
    assert layout_of(at, op(4096, 300, (300, 1)), sm90) == "acm"  # B row-major but 2-byte rows: packed
    assert copy_widths(at, op(4096, 300, (300, 1)), sm90) == (16, 0)
    # column strides a multiple of 16 bytes, from a 16-byte-aligned base, or the operand is packed
    assert copy_widths(x, op(4096, 11008, (1, 4100)), sm90) == (16, 0)
    assert copy_widths(x, op(4096, 11008, (1, 4096), ptr=2), sm90) == (16, 0)
    assert layout_of(x, op(4096, 11008, (1, 4100)), sm90) == ""
    # neither row- nor column-major (a strided view): packed
    assert copy_widths(x, op(4096, 11008, (2, 8192)), sm90) == (16, 0)
    # rows ending mid-chunk with 16-byte strides: TMA reads them in place, cp.async kernels cannot
    assert copy_widths(x, op(4096, 130, (160, 1)), sm90) == (16, 16)
    assert copy_widths(x, op(4096, 130, (160, 1)), sm80, "never") == (16, 0)
    host = Operand(None, "numpy", 0, (4096, 11008), (1, 4096), "float16")
    assert copy_widths(x, host, sm90) == (16, 0)  # host data is copied in row-major


def test_auto_takes_the_sm90_tile_where_its_own_pick_would_copy_what_sm90_reads_in_place():
    from streamk.gpu.decide import decide
    from streamk.gpu.decide.operands import Operand
    from streamk.gpu.decide.orient import orient
    from streamk.gpu.request import request
    from streamk.target import preset

    def op(rows, cols, strides):
        return Operand(None, "torch", 0, (rows, cols), strides, "float16")

    h100, a100 = preset("h100"), preset("a100")

    def in_place_tile(a, b, c, target):
        way = orient(a, b, c, target)
        return way.tile if way.in_place else None

    # x @ W.t() with k = 3072 (96 MAC iterations: under decide.tiles.small_on_sm90's depth, so auto's
    # own pick is 64x64, which packs W^T)
    k = 3072
    x, wt = op(128, k, (k, 1)), op(k, 4096, (1, k))
    assert in_place_tile(x, wt, None, h100) == TileShape(128, 128, 64)
    assert in_place_tile(x, wt, None, a100) is None  # no sm90 tiles there
    assert decide(x, wt, None, h100, request("auto", tile="64x64")).spec.tile == TileShape(64, 64, 32)  # as given
    assert decide(x, wt, None, h100, request("stream-k")).spec.tile == TileShape(128, 128, 32)
    assert in_place_tile(x, op(k, 4096, (4096, 1)), None, h100) is None  # nothing copied
    assert in_place_tile(op(64, k, (k, 1)), wt, None, h100) is None  # decode-like
    assert in_place_tile(op(4096, k, (k, 1)), wt, None, h100) is None  # auto's sm90 already
    assert in_place_tile(x, op(k, 4096, (1, k + 4)), None, h100) is None  # W's rows unaligned
    assert in_place_tile(x, wt, op(128, 4096, (1, 128)), h100) is None  # C column-major


def test_auto_runs_linear_decode_on_an_sm90_64_row_tile_where_w_outgrows_the_l2():
    """torch's x @ W.t() of up to 64 rows with W of 40 MiB or more runs direct on an sm90 64-row tile,
    reading W in place (decide.orient.linear_decode_tile): 64x256x64 where its tiles number a quarter
    of the SMs (from 1 row), else 64x128x64 (from 9); the same launches LOG.md v57 and v70 measured.
    Fewer rows on the narrow W (the dot tiles), a smaller W, other layouts and other GPUs keep auto's choice."""
    from streamk.gpu.decide import decide
    from streamk.gpu.decide.operands import Operand
    from streamk.gpu.decide.orient import orient
    from streamk.gpu.request import request

    def op(rows, cols, strides, dtype="float16"):
        return Operand(None, "torch", 1 << 20, (rows, cols), strides, dtype)

    h200 = preset("h200")

    def linear(m, n, k, target=h200, dtype="float16", a_cm=False, b_cm=True, c=None):
        a = op(m, k, (1, m) if a_cm else (k, 1), dtype)
        b = op(k, n, (1, k + (4 if b_cm == "unaligned" else 0)) if b_cm else (n, 1), dtype)
        way = orient(a, b, c, target)
        return (way.transposed, f"{way.tile.bm}x{way.tile.bn}x{way.tile.bk}", way.in_place)

    sm90_256, sm90_128, sm80_t = (False, "64x256x64", True), (False, "64x128x64", True), (True, "128x64x32", False)
    for m in (16, 32, 64):  # the measured shapes
        assert linear(m, 11008, 4096) == linear(m, 14336, 4096) == sm90_256, m  # 43 and 56 tiles of 64x256
        assert linear(m, 4096, 11008) == linear(m, 4096, 14336) == sm90_128, m  # 16 tiles of 64x256
        assert linear(m, 4096, 4096) == sm90_128, m  # 32 MiB of W: the small-W rule (v93)
        assert linear(m, 4096, 4096, preset("h100")) == sm80_t, m  # measured on the H200 only
        assert linear(m, 6144, 4096) == sm90_128, m  # 48 MiB
    dot = (True, "64x8x128", False)  # the dot tile, on x^T's 8 columns or fewer
    for m in (1, 4, 7):  # below 8 rows: the wide tile where W is wide (v70), else the dot tile
        assert linear(m, 11008, 4096) == linear(m, 128256, 4096) == sm90_256, m
        assert linear(m, 4096, 11008) == linear(m, 4096, 4096) == dot, m
    assert linear(8, 11008, 4096) == linear(8, 32000, 4096) == sm90_256  # 43 and 125 tiles of 64x256
    assert linear(8, 4096, 11008) == linear(8, 6144, 4096) == dot  # 64x128 lost to the dot tile at 8 rows
    assert linear(12, 13824, 5120) == sm90_256 and linear(12, 5120, 13824) == sm90_128  # held out
    assert linear(12, 28672, 8192) == linear(64, 32000, 4096) == sm90_256  # not 128x256x64 in place
    assert linear(65, 32000, 4096) == (False, "128x256x64", False)
    assert linear(64, 8448, 8192) == sm90_256 and linear(64, 8192, 8192) == sm90_128  # 33 and 32 tiles of 64x256
    assert linear(64, 4096, 5120) == sm90_128 and linear(64, 4096, 5112, preset("h100")) == sm80_t  # W of 40 MiB, and just under
    assert linear(16, 4096, 11008, dtype="bfloat16") == sm90_128
    # W under 40 MiB on the H200 (decide.orient.small_w_linear): 64x128x64 from 16 tiles' columns where
    # x has more rows than the dot tile takes or k is at most 1024; as LOG.md v93 measured
    for m in (2, 6):
        assert linear(m, 3072, 1024) == linear(m, 8192, 1024) == sm90_128, m  # shallow: the dot tile's split lost
        assert linear(m, 3072, 3072) == linear(m, 2048, 2048) == dot, m  # deeper: the dot tile stays
    for m in (12, 24, 48):
        assert linear(m, 2560, 2560) == linear(m, 2048, 8192) == linear(m, 8192, 1024) == sm90_128, m
        assert linear(m, 1024, 4096)[1] != "64x128x64" and not linear(m, 1536, 1536)[2], m  # 8 and 12 tiles' columns
    assert linear(24, 2560, 2560, dtype="bfloat16") == sm90_128
    assert linear(16, 4096, 11008, h200.with_sms(64, "h200/64")) == sm90_256  # a quarter of 64 SMs: 16 tiles
    assert linear(65, 4096, 11008)[1] != "64x128x64"  # not decode-like
    assert not linear(16, 4096, 11008, preset("a100"))[2]  # no sm90 tiles
    assert not linear(16, 4096, 11008, dtype="float64")[2]
    assert not linear(16, 4096, 11008, b_cm=False)[2]  # a row-major W.t(): nothing packed
    assert not linear(16, 4096, 11008, b_cm="unaligned")[2]  # W's rows not 16-byte aligned: TMA cannot
    assert not linear(16, 4096, 11008, a_cm=True)[2]  # x^T's column-major view: not measured
    assert not linear(16, 4096, 11008, c=op(16, 4096, (1, 16), "float32"))[2]  # C column-major
    x, wt = op(32, 4096, (4096, 1)), op(4096, 11008, (1, 4096))
    auto = decide(x, wt, None, h200, request("auto"))
    pinned = decide(x, wt, None, h200, request("auto", tile="64x256x64"))
    assert (auto.transposed, auto.schedule, auto.main, auto.widths, auto.layout) == \
        (pinned.transposed, pinned.schedule, pinned.main, pinned.widths, pinned.layout)
    assert auto.main.endswith("_bcm") and auto.widths == (16, 16)  # W read in place, nothing packed


def test_auto_runs_linear_of_few_w_rows_over_many_tokens_transposed_on_64x128x64():
    """torch's x @ W.t() with W of 9-64 rows, x of 4096 rows or more and k of 640 or more runs as
    C^T = W x^T on the sm90 64x128x64 tile in place, on the H200 (decide.orient.tall_transposed_tile),
    the launches LOG.md v97 measured. Fewer rows of W (the dot tiles), fewer tokens, shallower k, a W
    TMA cannot read, a row-major B, a column-major x and other GPUs keep auto's choice."""
    from streamk.gpu.decide import decide
    from streamk.gpu.decide.orient import orient
    from streamk.gpu.request import request

    def op(rows, cols, strides, dtype="float16"):
        return Operand(None, "torch", 1 << 20, (rows, cols), strides, dtype)

    h200 = preset("h200")

    def way(m, n, k, linear=True, target=h200, dtype="float16", ldw=None, x_cm=False):
        x = op(m, k, (1, m) if x_cm else (k, 1), dtype)
        wt = op(k, n, (1, ldw or k) if linear else (n, 1), dtype)
        w = orient(x, wt, None, target)
        return (w.transposed, f"{w.tile.bm}x{w.tile.bn}x{w.tile.bk}", w.in_place)

    tall = (True, "64x128x64", True)
    for m, n, k in ((5120, 16, 5120), (4096, 60, 2048), (6000, 12, 3000), (65536, 16, 4096), (8000, 64, 640),
                    (16384, 9, 4096)):
        assert way(m, n, k) == way(m, n, k, dtype="bfloat16") == tall, (m, n, k)
        assert way(m, n, k, target=preset("h100")) != tall, (m, n, k)  # measured on the H200
        assert way(m, n, k, linear=False) != tall, (m, n, k)  # a row-major B: held out 5 of 12 faster
    assert way(10000, 8, 3000)[1] == "64x8x128"  # 8 rows of W: the dot tile stays
    assert way(4095, 32, 4096) != tall and way(9000, 32, 632) != tall  # fewer tokens, shallower k
    assert way(9000, 65, 2048) != tall  # not one 64-row tile of W
    assert way(9000, 24, 2048, x_cm=True) != tall  # a column-major x: not measured
    assert way(9000, 24, 2048, ldw=2052) != tall  # W's rows not 16-byte aligned: TMA cannot
    assert way(9000, 24, 2048, dtype="float64")[1] != "64x128x64"
    x, wt = op(12000, 2048, (2048, 1)), op(2048, 48, (1, 2048))
    auto = decide(x, wt, None, h200, request("auto"))
    pinned = decide(wt.transposed(), x.transposed(), None, h200, request("auto", tile="64x128x64"))
    assert auto.transposed and (auto.schedule, auto.main, auto.widths, auto.layout) == \
        (pinned.schedule, pinned.main, pinned.widths, pinned.layout)
    assert auto.widths == (16, 16)  # nothing packed


def test_deep_wide_decode_gemms_of_4096_columns_run_on_the_sm90_64x128_tile():
    """On the H200 a deep decode-like GEMM of at most 64 rows whose 64x128 tiles fit one wave, row-major
    and aligned as the decode oracles ran, takes the sm90 64x128x64 tile from 4096 columns
    (decide.tiles.deep_wide_decode_tile, LOG.md v99); fewer columns, other layouts and other GPUs keep
    the sm80 64x128x32 rectangle."""
    h200, h100 = preset("h200"), preset("h100")
    sm90, sm80 = TileShape(64, 128, 64), TileShape(64, 128, 32)
    for m, n, k in ((17, 7808, 4032), (54, 10488, 3040), (20, 14256, 8224), (9, 4096, 13664)):
        assert choose_tile(GemmShape(m, n, k), "float16", h200) == sm90, (m, n, k)
        assert choose_tile(GemmShape(m, n, k), "bfloat16", h200) == sm90, (m, n, k)
        assert choose_tile(GemmShape(m, n, k), "float16", h200, row_major=False) == sm80, (m, n, k)
        assert choose_tile(GemmShape(m, n, k), "float16", h100) == sm80, (m, n, k)
    for m, n, k in ((39, 1040, 7064), (19, 2600, 4344), (21, 3920, 2832), (9, 4088, 13664)):
        assert choose_tile(GemmShape(m, n, k), "float16", h200) == sm80, (m, n, k)
    assert choose_tile(GemmShape(17, 7808, 4036), "float16", h200) == sm80  # k not a multiple of 8: not measured
