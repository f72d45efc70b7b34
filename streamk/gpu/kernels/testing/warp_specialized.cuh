// warp_specialized.cuh: a test kernel proving that the outer loop's pieces (common/work.cuh,
// common/fixup.cuh, common/epilogue.cuh) work with a thread group per role, as a producer /
// consumer (TMA + wgmma) mainloop will use them. Not a fast GEMM: C = alpha*A@B + beta*C in FP32.
//
// Block: 256 threads, two warp groups. The table group (threads 0-127, named barrier 1) alone
// reads the Schedule table through the work iterator, waits on peers' flags, counts arrivals and
// signals; the math group (threads 128-255, named barrier 2) alone computes: a 32x32 tile, 8 FP32
// dot products per thread read straight from global memory (k 8 per MAC iteration), then stores
// or adds workspace slots and writes C through the epilogue. They talk through a shared mailbox
// and one-way handoffs on named barriers 3-6 (group.cuh Handoff): FULL (a unit is in the mailbox),
// GO (peers' slots may be read, or the last arrival's verdict is in), STORED (the math group's slot
// stores are done), EMPTY (the math group is done with the unit). Each unit uses each handoff at
// most once and the table group waits for EMPTY before the next unit, so no barrier is reused
// before it completes. The math group reads nothing of the table but the slot ids its sums name.
// Shared memory: 5,120 B dynamic (the epilogue's staging of one tile) + the mailbox. Arch: sm_80
// and later. Table: common/schedule_table.cuh; A m x k and B k x n row-major FP32 (lda, ldb), C any
// strides. Fixup policies: every one whose units the main kernel runs alone (not atomic, not
// separate-reduce: those need passes of this layout). Invariants: those of common/fixup.cuh.
#pragma once

#include "../common/epilogue.cuh"
#include "../common/fixup.cuh"
#include "../common/group.cuh"
#include "../common/schedule_table.cuh"
#include "../common/work.cuh"

namespace streamk {
namespace testing {

// The math group's "mainloop" and fragment layout: thread t holds row t / 4, columns
// (t % 4) * 8 .. + 7 of the tile (so elements 2j, 2j+1 are neighbours, as the epilogue needs).
struct DotTile {
  using Acc = float;
  using Elem = float;
  static constexpr int BM = 32, BN = 32, BK = 8;
  static constexpr int THREADS = 128;  // the math group: the slots' and the epilogue's thread count
  static constexpr int ACC = BM * BN / THREADS;
  static_assert(ACC == 8 && BN / ACC * BM == THREADS, "a thread per row segment of 8");

  static __device__ __forceinline__ void coord(int i, int tid, int& r, int& c) {
    r = tid / (BN / ACC);
    c = (tid % (BN / ACC)) * ACC + i;
  }

  static __device__ __forceinline__ void mainloop(const OperandParams& p, const Problem& mnk, int m0, int n0,
                                                  int k_begin, int k_end, int tid, Acc (&acc)[ACC]) {
    int r, c;
    coord(0, tid, r, c);
    if (m0 + r >= mnk.m) return;
    const float* a = static_cast<const float*>(p.a) + static_cast<long long>(m0 + r) * p.lda;
    const float* b = static_cast<const float*>(p.b) + n0 + c;
    const int k_lim = min(mnk.k, k_end * BK);
    for (int kk = k_begin * BK; kk < k_lim; ++kk) {
      const float x = a[kk];
      const float* row = b + static_cast<long long>(kk) * p.ldb;
#pragma unroll
      for (int i = 0; i < ACC; ++i)
        if (n0 + c + i < mnk.n) acc[i] += x * row[i];
    }
  }
};

// What the registry instantiates: the block and its shared memory.
struct WsKernel {
  using Math = DotTile;
  static constexpr int BM = Math::BM, BN = Math::BN, BK = Math::BK;
  static constexpr int GROUP = 128;          // threads per warp group
  static constexpr int THREADS = 2 * GROUP;  // table group + math group
  static constexpr int SMEM_BYTES = TileStage<Math>::BYTES;
  using TableGroup = ThreadGroup<1, 0, GROUP>;
  using MathGroup = ThreadGroup<2, GROUP, GROUP>;
  using Full = Handoff<3, THREADS>;
  using Go = Handoff<4, THREADS>;
  using Stored = Handoff<5, THREADS>;
  using Empty = Handoff<6, THREADS>;
  static_assert(Math::THREADS == GROUP, "the math group holds the accumulators");
};

constexpr int STOP = -1;  // the mailbox's action once the CTA's units are done

struct Mailbox {
  int tile_m, tile_n, k_begin, k_end, action, slot, reads_offset, reads_count;
  int sum;  // ARRIVE: this unit was the last arrival and sums every slot
};

__device__ __forceinline__ bool stores_then_signals(int action) {
  return has(ACTION_SIGNALS, action);
}

template <class K>
__device__ __forceinline__ void table_role(const GemmParams& p, Mailbox& box) {
  using G = typename K::TableGroup;
  const TableParams& t = p.table;
  if (t.table_version != TABLE_VERSION) __trap();
  const bool epochs = t.state != nullptr;
  __shared__ unsigned launch_epoch;
  if (epochs) share_epoch<G>(t, launch_epoch);
  const unsigned epoch = epochs ? launch_epoch : 0u;
  WorkIterator<false> work;
  work.prefetch(t, blockIdx.x);
  work.begin(t, blockIdx.x);
  for (int u = work.first; u < work.last; ++u) {
    const WorkUnit w = work.unit(u, blockIdx.x);
    if (u > work.first) K::Empty::wait();  // the math group is done with the previous unit
    if (G::leader()) box = {w.tile_m, w.tile_n, w.k_begin, w.k_end, w.action, w.slot, w.reads_offset, w.reads_count, 0};
    K::Full::arrive();
    if (w.action == ACT_ARRIVE) {
      K::Stored::wait();
      const bool last = arrive_last<G>(t, w.tile(), w.reads_count, epoch);
      if (last) wait_units<G>(t, w.waits_offset(), w.waits_count(), epoch);
      if (G::leader()) box.sum = last;
      K::Go::arrive();
    } else if (has(ACTION_WAITS, w.action)) {
      wait_units<G>(t, w.waits_offset(), w.waits_count(), epoch);
      K::Go::arrive();
    }
    if (stores_then_signals(w.action)) {
      K::Stored::wait();
      signal<G>(t, u, epoch);
    }
  }
  if (work.last > work.first) K::Empty::wait();
  if (G::leader()) box.action = STOP;
  K::Full::arrive();
  if (epochs) {
    G::sync();
    finish_launch<G>(t);
  }
}

template <class K>
__device__ __forceinline__ void math_role(const GemmParams& p, const Mailbox& box, unsigned char* smem) {
  using G = typename K::MathGroup;
  using ML = typename K::Math;
  const TableParams& t = p.table;
  const int tid = G::rank();
  for (;;) {
    K::Full::wait();
    const Mailbox m = box;
    if (m.action == STOP) break;
    const int m0 = m.tile_m * ML::BM, n0 = m.tile_n * ML::BN;
    float acc[ML::ACC] = {};
    ML::mainloop(p.ops, problem(t), m0, n0, m.k_begin, m.k_end, tid, acc);
    bool sums = has(ACTION_READS_PARTIALS, m.action);
    bool writes = has(ACTION_WRITES_C, m.action);
    if (m.action == ACT_ARRIVE) {
      store_slot<ML>(t, m.slot, acc, tid, m0);
      K::Stored::arrive();
      K::Go::wait();
      if (box.sum) {
        sums = writes = true;
#pragma unroll
        for (int i = 0; i < ML::ACC; ++i) acc[i] = 0.0f;
      }
    } else if (sums) {
      K::Go::wait();
    }
    if (sums)
      for (int j = 0; j < m.reads_count; ++j) add_slot<ML>(t, t.reads[m.reads_offset + j], acc, tid, m0);
    if (stores_then_signals(m.action) || m.action == ACT_DEFER) store_slot<ML>(t, m.slot, acc, tid, m0);
    if (stores_then_signals(m.action)) K::Stored::arrive();
    if (writes) write_c<ML, G>(p.ops, problem(t), m0, n0, acc, smem);
    K::Empty::arrive();
  }
}

template <class K>
__device__ __forceinline__ void ws_kernel(const GemmParams& p) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ Mailbox box;
  if (K::TableGroup::contains()) {
    table_role<K>(p, box);
  } else {
    math_role<K>(p, box, smem);
  }
}

}  // namespace testing
}  // namespace streamk
