// schedule_table.cuh: the layout of the Schedule table the host uploads, and the kernel
// parameter blocks. Mirror of streamk/gpu/table.py (TABLE_VERSION, UNIT_FIELDS, ITEM_FIELDS,
// Action values) and streamk/gpu/runtime/launch.py (GemmParams = OperandParams + TableParams,
// PackParams); tests/test_gpu_table.py parses this file and checks they agree. Change both together and bump the version.
//
// Table (all int32, device memory):
//   cta_offsets[grid + 1]   CTA c runs unit rows cta_offsets[c] .. cta_offsets[c+1]-1, in order
//   units[n][UNIT_FIELDS]   one row per work unit (fields below); k_begin/k_end in MAC iterations
//   reads[]                 workspace slot ids, each unit's run in k order (reads_offset/count)
//   waits[]                 unit rows whose flag must carry this launch's epoch (waits_offset/count)
//   items[t][ITEM_FIELDS]   split tiles, for the separate-reduce pass and the atomic prescale pass
#pragma once

namespace streamk {

constexpr int TABLE_VERSION = 1;

enum UnitField : int {
  U_TILE = 0,
  U_TILE_M = 1,
  U_TILE_N = 2,
  U_K_BEGIN = 3,
  U_K_END = 4,
  U_ACTION = 5,
  U_SLOT = 6,
  U_READS_OFFSET = 7,
  U_READS_COUNT = 8,
  U_WAITS_OFFSET = 9,
  U_WAITS_COUNT = 10,
  UNIT_FIELDS = 11
};

enum ItemField : int {
  I_TILE_M = 0,
  I_TILE_N = 1,
  I_READS_OFFSET = 2,
  I_READS_COUNT = 3,
  ITEM_FIELDS = 4
};

// streamk.fixup.Action
enum Action : int {
  ACT_WRITE = 0,
  ACT_PARTIAL = 1,
  ACT_REDUCE = 2,
  ACT_HANDOFF = 3,
  ACT_FINISH = 4,
  ACT_ARRIVE = 5,
  ACT_ATOMIC = 6,
  ACT_DEFER = 7
};

// streamk.fixup.TRAITS, one mask per trait: bit a is set when Action a has it (fixup.action_mask).
constexpr unsigned ACTION_WAITS = (1u << ACT_REDUCE) | (1u << ACT_HANDOFF) | (1u << ACT_FINISH);
constexpr unsigned ACTION_READS_PARTIALS = (1u << ACT_REDUCE) | (1u << ACT_HANDOFF) | (1u << ACT_FINISH);
constexpr unsigned ACTION_STORES_PARTIAL =
    (1u << ACT_PARTIAL) | (1u << ACT_HANDOFF) | (1u << ACT_ARRIVE) | (1u << ACT_DEFER);
constexpr unsigned ACTION_SIGNALS = (1u << ACT_PARTIAL) | (1u << ACT_HANDOFF);
constexpr unsigned ACTION_ARRIVES = (1u << ACT_ARRIVE);
constexpr unsigned ACTION_WRITES_C = (1u << ACT_WRITE) | (1u << ACT_REDUCE) | (1u << ACT_FINISH);
constexpr unsigned ACTION_ADDS_TO_C = (1u << ACT_ATOMIC);
constexpr unsigned ACTION_REDUCED_LATER = (1u << ACT_DEFER);
constexpr unsigned ACTION_NEEDS_EPOCH =
    (1u << ACT_PARTIAL) | (1u << ACT_REDUCE) | (1u << ACT_HANDOFF) | (1u << ACT_FINISH) | (1u << ACT_ARRIVE);

// Whether `action` has the trait of `mask` (one of ACTION_* above), e.g. has(ACTION_SIGNALS, a).
constexpr bool has(unsigned mask, int action) { return ((mask >> action) & 1u) != 0; }

// state[STATE_EPOCH] is this launch's epoch (>= 1; flags start at 0); the last CTA to finish
// bumps it, so the next launch on the stream sees a fresh one (CUDA-graph replays too).
enum StateWord : int { STATE_EPOCH = 0, STATE_DONE = 1, STATE_WORDS = 2 };

// The operands as the sm80 mainloops read them (a TMA mainloop brings its own description).
struct OperandParams {
  const void* a;          // A, m x k, row-major, row stride lda (elements), 16-byte rows
  const void* b;          // B, k x n, row-major, row stride ldb (elements), 16-byte rows
  void* c;                // C, m x n, element strides c_rs, c_cs (any)
  long long lda;
  long long ldb;
  long long c_rs;
  long long c_cs;
  double alpha;
  double beta;
  // column strides (elements) of A and B: 1, except for the operand the dot tiles read an element
  // at a time (sm80/dot.cuh V), which may have any strides
  long long a_cs;
  long long b_cs;
  int c_type;  // C's element type (c_elem.cuh CType): the accumulator's, or FP16 / BF16
  int c_pad;
};

// The Schedule table, the fixup's device memory and the problem: what every outer loop reads.
struct TableParams {
  const int* cta_offsets;
  const int* units;
  const int* reads;
  const int* waits;
  const int* items;
  void* workspace;                 // num_slots x BM x BN accumulators, fragment layout
  unsigned* flags;                 // one per unit row, holds the epoch of its last signal
  unsigned long long* counters;    // one per tile: epoch << 32 | arrivals (last-arrival)
  unsigned* state;                 // STATE_WORDS words; null: no unit signals, waits or arrives
  int m;
  int n;
  int k;
  int table_version;
};

// Kernel parameter block of the GEMM kernels and their passes: the operands first, so the bytes
// are those of the flat block of table version 1 (184 B).
struct GemmParams {
  OperandParams ops;
  TableParams table;
};

// m, n, k as the mainloops and the epilogue bound their accesses: views of the parameter block,
// read where they are used (as a plain parameter is), not copied up front.
struct Problem {
  const int& m;
  const int& n;
  const int& k;
};

__device__ __forceinline__ Problem problem(const TableParams& t) { return {t.m, t.n, t.k}; }

struct PackParams {
  const void* src;   // rows x cols, element strides rs, cs
  void* dst;         // rows x ld, row-major, zero past cols; ld a multiple of 16 bytes
  long long rs;
  long long cs;
  long long rows;
  long long cols;
  long long ld;
};

struct PackPair {
  PackParams a;
  PackParams b;
};

}  // namespace streamk
