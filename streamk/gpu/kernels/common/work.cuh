// work.cuh: the work iterator: one CTA's unit rows of the Schedule table, in order
// (cta_offsets[cta] .. cta_offsets[cta + 1] - 1), each read as a WorkUnit. The table is the
// host's plan (streamk.fixup.plan_fixup); nothing here derives a decomposition. Every role of a
// kernel can walk it: the sm80 outer loop with the whole block, a warp-specialized kernel with
// the role that reads the table.
#pragma once

#include "schedule_table.cuh"

namespace streamk {

// One unit row: the fields the mainloop and every epilogue need, read when the unit starts;
// the tile index and the waits list are read only by the actions that use them.
struct WorkUnit {
  const int* row;
  int tile_m, tile_n, action, slot, reads_offset, reads_count, k_begin, k_end;
  __device__ __forceinline__ int tile() const { return row[U_TILE]; }
  __device__ __forceinline__ int waits_offset() const { return row[U_WAITS_OFFSET]; }
  __device__ __forceinline__ int waits_count() const { return row[U_WAITS_COUNT]; }
};

// GUESS: read row `cta` of the unit table before cta_offsets is known (`prefetch`) and use it when
// it is the CTA's first unit (every DP-like CTA's), so the first copies wait for one global read,
// not two (H100 trace: a CTA's entry to its first mainloop ~0.6 us, LOG.md v14). The host gives
// the table a row per CTA at least.
template <bool GUESS>
struct WorkIterator {
  const TableParams* table;  // the parameter block: its unit pointer is read where used
  int first, last;
  int guess[U_READS_COUNT + 1];  // fields 0 .. U_READS_COUNT of row `cta` (GUESS)

  __device__ __forceinline__ void prefetch(const TableParams& t, unsigned cta) {
    table = &t;
    if constexpr (GUESS) {
      const int* row = t.units + cta * UNIT_FIELDS;
#pragma unroll
      for (int f = 0; f <= U_READS_COUNT; ++f) guess[f] = row[f];
    }
  }

  // after `prefetch`: this CTA's range of rows
  __device__ __forceinline__ void begin(const TableParams& t, unsigned cta) {
    first = t.cta_offsets[cta];
    last = t.cta_offsets[cta + 1];
  }

  __device__ __forceinline__ WorkUnit unit(int u, unsigned cta) const {
    const int* row = table->units + u * UNIT_FIELDS;
    const bool guessed = GUESS && u == first && first == static_cast<int>(cta);
    const auto field = [&](int f) { return guessed ? guess[f] : row[f]; };
    WorkUnit w;
    w.row = row;
    w.tile_m = field(U_TILE_M);
    w.tile_n = field(U_TILE_N);
    w.action = field(U_ACTION);
    w.slot = field(U_SLOT);
    w.reads_offset = field(U_READS_OFFSET);
    w.reads_count = field(U_READS_COUNT);
    w.k_begin = field(U_K_BEGIN);
    w.k_end = field(U_K_END);
    return w;
  }
};

}  // namespace streamk
