// outer_loop.cuh: the Stream-K outer loop, shared by every mainloop: a thread group G (group.cuh)
// holding the accumulators walks this CTA's unit rows (work.cuh), runs the mainloop over each
// unit's MAC iterations [k_begin, k_end) of its tile, then the unit's action (fixup.cuh) and the
// epilogue (epilogue.cuh). run_units<ML, G>(p, smem, mainloop[, write]) takes the mainloop as a callable
// mainloop(m0, n0, k_begin, k_end, acc) (and optionally its own write of C, SharedWrite); ML provides Acc, BM, BN, THREADS (G's size), ACC and
// coord(i, tid, r, c) (fragment element -> tile row, column). The sm80 mainloops, where every
// thread does everything, run it with the whole block as G (main_kernel below); a warp-specialized
// mainloop (sm90/) runs it in its consumer warp groups while its producer streams the operands.
// `smem` is G's epilogue staging, free whenever the mainloop returns.
// Invariants: the kernel reads the table, never recomputes the schedule; flags and counters carry
// the launch epoch; a mainloop never waits on a flag, so deferred signals cannot deadlock.
#pragma once

#include "epilogue.cuh"
#include "fixup.cuh"
#include "ptx.cuh"
#include "schedule_table.cuh"
#include "trace.cuh"
#include "work.cuh"

namespace streamk {

// Kernels on tiles smaller than the paper's FP16/BF16 128x128 read their first unit row early
// (work.cuh GUESS: 85 of the 131 64x64 launches on the 400 shapes are DP-like); the 128x128 and
// larger kernels keep their register allocation.
template <class ML>
constexpr bool GUESS_FIRST_ROW = sizeof(typename ML::Elem) == 2 && ML::BM * ML::BN < 128 * 128;

// The shared epilogue's write of C (write_c) for every WRITE: a mainloop with a write of its own
// passes run_units a callable write(m0, n0, acc, last) (last: the group's last unit) that returns
// false where it leaves C to write_c.
struct SharedWrite {
  template <class Acc, int N>
  __device__ __forceinline__ bool operator()(int, int, const Acc (&)[N], bool) const {
    return false;
  }
};

// Which of a CTA's units the group runs: all of them (OneLane), or every count-th from its lane on
// (several groups sharing the CTA's units, as the ping-pong consumers do, sm90/tma_wgmma.cuh), and
// how the CTA ends its launch once the groups are through (finish_launch, once a CTA).
struct OneLane {
  static constexpr int lane = 0, count = 1;
  template <class G>
  __device__ __forceinline__ void finish(const TableParams& t) const {
    G::sync();
    finish_launch<G>(t);
  }
};

template <class ML, class G, class Mainloop, class Write = SharedWrite, class Lanes = OneLane>
__device__ __forceinline__ void run_units(const GemmParams& p, unsigned char* smem, Mainloop&& mainloop,
                                          Write&& write = SharedWrite{}, const Lanes& lanes = Lanes{}) {
  using Acc = typename ML::Acc;
  static_assert(G::THREADS == ML::THREADS, "the group holds the accumulators");
  const TableParams& t = p.table;
  const unsigned cta = blockIdx.x;
  WorkIterator<GUESS_FIRST_ROW<ML>> work;
  work.prefetch(t, cta);
  const int tid = G::rank();
  trace<G>(-1, 0);
  pdl_trigger();  // the separate-reduce pass may start launching (it waits for this kernel's end)
  if (t.table_version != TABLE_VERSION) __trap();
  // state is null when no unit signals, waits or arrives (the host checks): such a launch needs
  // no epoch, so it skips the epoch read and the end-of-launch count (~1 us, LOG.md v10)
  const bool epochs = t.state != nullptr;
#if __CUDA_ARCH__ >= 900
  unsigned epoch = 0u;  // this launch's, read after pdl_wait at the first unit
#else
  // sm_80 never launches by PDL (decide.launches.use_pdl), so the epoch is read up front there, as
  // the A100's kernels were measured (the read after the wait cost them 12-32 B of spills, LOG.md v40)
  __shared__ unsigned launch_epoch;
  if (epochs) share_epoch<G>(t, launch_epoch);
  const unsigned epoch = epochs ? launch_epoch : 0u;
#endif
  work.begin(t, cta);
  const int first = work.first, last = work.last;
  // A PARTIAL unit's signal waits until the end of this CTA's next mainloop: by then its slot
  // stores have landed, so the release costs nothing, where signalling at once stalled the CTA
  // until 64 KB of stores drained (LOG.md v10). Pending signals go out before any wait, and a
  // mainloop never waits, so no wait can depend on a deferred signal: no new deadlock. Groups taking
  // turns (Lanes count 2) signal at once: the stall is this group's, under the other's mainloop.
  int pending = -1;
  const int mine = first + lanes.lane, step = lanes.count;  // this group's first unit, the stride
  for (int u = mine; u < last; u += step) {
    const WorkUnit w = work.unit(u, cta);
    const int m0 = w.tile_m * ML::BM, n0 = w.tile_n * ML::BN;
    const int action = w.action;
    Acc acc[ML::ACC];
#pragma unroll
    for (int i = 0; i < ML::ACC; ++i) acc[i] = Acc(0);
    trace<G>(u - first, 0);
    // Launched by programmatic dependent launch (behind the pack pass, the prescale or any kernel
    // before this GEMM): that kernel is complete and its writes visible from here. The table and
    // this first row, written once before any launch, were read while it finished (LOG.md v13:
    // 3.4%); the epoch (the last launch on this lane bumps it at its end), A, B, C, the workspace,
    // flags and counters only after. Each thread reads the epoch itself: no barrier, and the load
    // lands under the mainloop (its first use is the unit's fixup).
    if (u == mine) {
      pdl_wait();
      trace<G>(-1, 2);
#if __CUDA_ARCH__ >= 900
      if (epochs) epoch = read_epoch(t);
#endif
    }
    mainloop(m0, n0, w.k_begin, w.k_end, acc);
    trace<G>(u - first, 1);
    if (pending >= 0) {
      signal<G>(t, pending, epoch);
      pending = -1;
    }

    // Each epilogue piece appears once (the unrolled loops are large): sum peers' slots, store
    // our own, signal, write or add to C, as the unit's action asks. These are the traits of
    // streamk.fixup.TRAITS (schedule_table.cuh ACTION_*), spelled as compares: testing the masks
    // with has() took ptxas from 60 to 76-100 bytes of spills on the 128x128 kernel (LOG.md v16).
    bool sums = action == ACT_REDUCE || action == ACT_HANDOFF || action == ACT_FINISH;
    bool writes = action == ACT_WRITE || action == ACT_REDUCE || action == ACT_FINISH;
    if (action == ACT_ARRIVE) {
      store_slot<ML>(t, w.slot, acc, tid, m0);
      if (arrive_last<G>(t, w.tile(), w.reads_count, epoch)) {  // the last arrival sums every slot in k order
        sums = writes = true;
#pragma unroll
        for (int i = 0; i < ML::ACC; ++i) acc[i] = Acc(0);
      }
    }
    if (sums) {
      wait_units<G>(t, w.waits_offset(), w.waits_count(), epoch);
      for (int j = 0; j < w.reads_count; ++j) add_slot<ML>(t, t.reads[w.reads_offset + j], acc, tid, m0);
    }
    if (action == ACT_PARTIAL || action == ACT_HANDOFF || action == ACT_DEFER) store_slot<ML>(t, w.slot, acc, tid, m0);
    if (action == ACT_PARTIAL && Lanes::count == 1 && u + 1 < last) {
      pending = u;
    } else if (action == ACT_PARTIAL || action == ACT_HANDOFF) {
      signal<G>(t, u, epoch);
    }
    if (writes && !write(m0, n0, acc, u + step >= last)) write_c<ML, G>(p.ops, problem(t), m0, n0, acc, smem);
    if (action == ACT_ATOMIC) atomic_c<ML, G>(p.ops, problem(t), m0, n0, acc, smem);
    trace<G>(u - first, 2);
  }
  // a group without units waits too: its CTA's finish_launch must not count into the previous
  // launch's (same lane), and every CTA waiting keeps "this grid done" implying "the one before it done"
  if (mine >= last) pdl_wait();
  if (epochs) lanes.template finish<G>(t);
}

// The sm80 main kernel's body: the whole block is the group; dynamic shared memory holds the
// mainloop's stages, then the epilogue's staging, at the alignment the mainloop's shared layout
// needs (ML::SMEM_ALIGN bytes).
template <class ML>
__device__ __forceinline__ void main_kernel(const GemmParams& p) {
  extern __shared__ __align__(ML::SMEM_ALIGN) unsigned char smem[];
  run_units<ML, BlockGroup<ML::THREADS>>(p, smem, [&](int m0, int n0, int k_begin, int k_end,
                                                      typename ML::Acc (&acc)[ML::ACC]) {
    ML::mainloop(p.ops, problem(p.table), m0, n0, k_begin, k_end, smem, acc);
  });
}

}  // namespace streamk
