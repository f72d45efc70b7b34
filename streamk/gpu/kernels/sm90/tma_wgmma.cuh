// tma_wgmma.cuh: the Hopper FP16/BF16 -> FP32 mainloop, C = alpha*A@B + beta*C with A and B FP16
// or BF16, FP32 accumulate and FP32 C, run by the shared outer loop (common/outer_loop.cuh
// run_units) over any Schedule table (common/schedule_table.cuh) under every fixup policy
// (common/fixup.cuh; the separate-reduce and atomic passes are common/passes.cuh on this layout).
//
// TmaWgmma<BF16, BN, STAGES, A_MN, B_K, BLOCKS, BM> (config.cuh): a BM x BN x 64 tile per MAC
// iteration: BM 128 with BN 64 (3 stages, two CTAs an SM), 128 (5 stages, ping-pong), 192 or 256 (4);
// BM 64 with BN 128 (7 stages), 192 (5) or 256 (4). 128 + BM threads: a producer warp
// group and BM/64 consumer ones, __launch_bounds__(128 + BM, BLOCKS):
//   producer  (warp group 0, setmaxnreg down to 40): one thread walks the CTA's unit rows (work.cuh)
//             and, for every MAC iteration of every unit, waits for a free stage and issues the TMA
//             bulk tensor loads of A (one BM x 64 box) and B (BN/64 boxes of 64 x 64) into it; the
//             stage's mbarrier completes on their bytes. It runs ahead across units: the ring
//             persists, so the next unit's operands arrive while the consumers run an epilogue.
//   consumers (warp groups 1 .. BM/64; setmaxnreg up to 232, 256 on 64-row tiles, or 96 on 128x64
//             at two CTAs an SM; one thread group on named barrier 1): the
//             outer loop with its fixup and epilogue; per MAC iteration each warp group waits for
//             the stage, issues four wgmma.m64nBNk16 (rows 64g .. 64g + 63, all BN columns: BN/2
//             accumulators per thread) and frees the previous stage once its batch has completed
//             (one batch in flight; one arrival per warp group).
//   ping-pong (128x128, config.cuh PINGPONG): the two consumer warp groups are two groups (named
//             barriers 1 and 2), each holding a whole 128x128 tile (two wgmma.m64n128k16 a k16 step,
//             128 accumulators a thread); group g runs the CTA's units g, g + 2, ... (outer_loop.cuh
//             Lanes), starting a unit's mainloop once the other group has issued the previous one's
//             and handed over the ring position (barriers 3 and 4), so one group's fixup and epilogue
//             run under the other's mainloop. Each writes C through TMA in 32-column boxes, two
//             staged at a time (write_tile_tma_boxes), which frees room for a fifth stage. Held out,
//             auto on this tile ran 1.03x faster (FP16), 1.04x (BF16), 1.09x (x @ W.t()) than the
//             cooperative kernel; Stream-K on few deep tiles, whose owners read peers' slots with 128
//             threads, 0.92-0.97x (LOG.md v130).
// Why 64-row tiles with one consumer: a GEMM of few rows (a Linear of 16-64 tokens) pads half as
// many rows as on 128-row tiles, and the ring, deep on these tiles (7 stages on 64x128), keeps loading
// the next unit's operands through the epilogue. Two 64x128 CTAs of 3 stages an SM, which overlapped
// one's epilogue with the other's mainloop (the effect of CUTLASS's "pingpong" schedule,
// include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_pingpong.hpp), ran 1.05x slower (LOG.md v75).
// Why 64 x BN per warp group and not 128 x BN/2: per k16 step the two groups then read A 2 x 2 KB
// and B 2 x BN/16 KB of shared memory, where two m64n(BN/2) halves of 128 rows each would read A
// 2 x 4 KB and B the same: on 128x256, 20 KB against 24 KB per 128x256x16 step, with half the
// wgmma instructions (the split of the 128x256 anchors, github pranjalssh/fast.cu matmul_12.cuh).
// Shared memory (dynamic, 1024-byte aligned by hand): STAGES x (A BM/8 KB + B BN/8 KB) 128-byte
// swizzled as TMA writes and wgmma reads them, the epilogue's staging (BM x (BN + 8) x 4 B, its own,
// so loads go on during epilogues; 64x256 stages and writes C in two column halves, epilogue.cuh
// EPILOGUE_PARTS; 128x192, 128x256 and each ping-pong group: two 32-column C boxes), 2 x STAGES mbarriers:
// 230,488 B on 128x128 (five stages, ping-pong), 197,696 B on 128x192 and 230,464 B on 128x256 (four),
// 207,984 B on 64x128, 217,168 B on 64x192, 199,744 B on 64x256 (config.cuh has every tile's).
// Arch: sm_90a.
// Operands (TMA descriptors built by the host, streamk/gpu/runtime/tma.py): A m x k and B k x n, each
// row-major or column-major with a 16-byte-aligned base and stride (the host packs others:
// common/pack.cuh). A row-major A is read K-major (swizzled rows of 64 k), a column-major one
// M-major (A_MN: BM/64 boxes of 64 k rows of 64 m, imm-trans-a); a row-major B N-major (imm-trans-b:
// rows of 64 n per box), a column-major one K-major (B_K: rows of 64 k, one per n). wgmma reads
// either layout of 16-bit inputs, so torch's x @ W.t() needs no copy (the Linear layout). Elements
// outside the matrices arrive as zeros from TMA, so edge tiles in m, n and k need no predication;
// C is written by the shared epilogue with any strides.
// Ideas from public code (written here, not copied): the producer / two-consumer split with
// setmaxnreg and per-stage full/empty mbarriers follow github pranjalssh/fast.cu
// examples/matmul/matmul_12.cuh (its split is 24 / 240 registers; ours 40 / 232 leaves the
// producer's table walk room); the MN-major 128-byte-swizzle descriptor (LBO: stride between
// 64-element column blocks, SBO: between 8-row groups) follows the canonical layouts of NVIDIA
// CUTLASS include/cute/atom/mma_traits_sm90_gmma.hpp (make_gmma_desc) and the PTX ISA's matrix
// descriptor section.
// Clusters (launched with two CTAs a cluster where the host found pairs, four where it was asked
// for 2x2 blocks, three or four on one tile column's splits; streamk/gpu/clusters.py): each CTA's share word names the ranks of its cluster
// whose A is its A (one tile row, same k ranges) and whose B is its B (one tile column). The CTAs
// of a B group each load their share of every stage's B boxes (the first the larger share of an odd
// count) and multicast them to the group (the 2x1 clusters of the anchors, github pranjalssh/fast.cu
// matmul_12.cuh: one operand's L2 reads halved); the CTAs of an A group take turns loading a whole
// stage's A (MAC iteration kt: member kt % members), multicast to the group, so A needs no other
// box than the unclustered kernel's. A CTA's stage is refilled once the consumers of every CTA its
// producer writes into (its A and B groups) freed it: its empty barrier counts CONSUMERS arrivals
// of each (NVIDIA CUTLASS include/cutlass/pipeline/sm90_pipeline.hpp PipelineTmaAsync: consumers
// release the stage in every CTA of their cluster row and column). Share word 0: a single CTA.
// Invariants: those of the outer loop; the producer issues exactly the MAC iterations the consumers
// consume, in the same order, so the ring's phases agree without any other handshake; the CTAs of
// an A or B group run the same number of MAC iterations in the same ring order.
#pragma once

#include "../common/epilogue.cuh"
#include "../common/group.cuh"
#include "../common/outer_loop.cuh"
#include "../common/ptx.cuh"
#include "../common/schedule_table.cuh"
#include "../common/work.cuh"
#include "config.cuh"
#include "ptx.cuh"

namespace streamk {
namespace sm90 {

// A CUtensorMap as the kernel parameter carries it (128 bytes, 64-byte aligned).
struct alignas(64) TensorMap {
  unsigned long long words[16];
};

// The kernel's parameter block (passed `const __grid_constant__`, so the TMA unit can read the
// maps in parameter space): the table and C as every kernel has them, then A's and B's maps.
// Mirror of streamk/gpu/runtime/launch.py TmaParams.
struct TmaParams {
  GemmParams gemm;
  // per CTA its share word (config.cuh SHARE_BITS, streamk/gpu/clusters.py); null when the launch
  // has no clusters
  const int* shares;
  int c_store;  // 1: this launch writes C through `c` (write_tile_tma); 0: the shared epilogue
  TensorMap a;  // A: dims (k, m), box (BK, BM)
  TensorMap b;  // B: dims (n, k), box (64, BK)
  TensorMap c;  // C (FP32, or FP16 / BF16: ops.c_type; row-major): dims (n, m), box (128 B, BM), 128-byte swizzle
};
// (184 B, shares at 184, c_store at 192, then maps on 64-byte boundaries: a at 256, b at 384, c at 512;
// NVRTC 13.0 has no offsetof)
static_assert(sizeof(GemmParams) == 184 && alignof(TensorMap) == 64 && sizeof(TmaParams) == 640,
              "launch.py TmaParams mirrors this layout");

template <bool BF16, int BN_ = 128, int STAGES_ = TileConfig<BN_>::DEFAULT_STAGES, bool A_MN_ = false,
          bool B_K_ = false, int BLOCKS_ = 1, int BM_ = 128>
struct TmaWgmma {
  using Acc = float;
  using Elem = unsigned short;  // raw FP16 / BF16 bits
  using Config = TileConfig<BN_, BLOCKS_, BM_>;
  static constexpr bool IS_BF16 = BF16;
  // operand layouts in global and shared memory: A M-major (a column-major A, read in BM/64 boxes
  // of 64 k rows of 64 m) instead of K-major; B K-major (a column-major B: boxes of 64 n rows of 64 k)
  // instead of N-major
  static constexpr bool A_MN = A_MN_, B_K = B_K_;
  static constexpr int BM = BM_, BN = BN_, BK = sm90::BK, STAGES = STAGES_;
  static constexpr int CONSUMERS = Config::CONSUMERS;
  // ping-pong (config.cuh): each consumer warp group holds a whole tile and runs every other unit
  static constexpr bool PINGPONG = Config::PINGPONG;
  static constexpr int GROUPS = PINGPONG ? CONSUMERS : 1;  // groups holding accumulators, a staging each
  // the accumulators' group: fixup, epilogue, passes
  static constexpr int THREADS = PINGPONG ? WG_THREADS : CONSUMERS * WG_THREADS;
  static constexpr int BLOCK_THREADS = Config::THREADS;   // the block: producer + consumers
  static constexpr int ACC = BM * BN / THREADS;           // BN/2 FP32 per consumer thread (BN on ping-pong)
  static constexpr int EPILOGUE_PARTS = Config::EPILOGUE_PARTS;  // column slices the epilogue stages
  // a column-major C is staged transposed and leaves by columns (epilogue.cuh ColumnStage): tiles staged whole
  static constexpr bool STAGE_COLUMNS = EPILOGUE_PARTS == 1;
  // one slice, or the transposed tile where that is larger (64x192; epilogue.cuh EPILOGUE_STAGING_BYTES)
  static constexpr int ROW_STAGING_BYTES = BM * (BN / EPILOGUE_PARTS + 8) * 4;
  static constexpr int COLUMN_STAGING_BYTES = STAGE_COLUMNS ? BN * (BM + 4) * 4 : 0;
  // two C boxes of 32 columns (write_tile_tma_boxes), more than a slice of the shared epilogue
  static constexpr bool C_BOXES = Config::C_BOXES;
  static constexpr int BOX_STAGING_BYTES = C_BOXES ? 2 * BM * SWIZZLE_BYTES : 0;
  static constexpr int LARGER_STAGING_BYTES =
      COLUMN_STAGING_BYTES > ROW_STAGING_BYTES ? COLUMN_STAGING_BYTES : ROW_STAGING_BYTES;  // checked below
  static constexpr int STAGING_BYTES =  // a group's
      BOX_STAGING_BYTES > LARGER_STAGING_BYTES ? BOX_STAGING_BYTES : LARGER_STAGING_BYTES;
  static constexpr int RING_BYTES = STAGES * Config::STAGE_BYTES;
  // full and empty per stage, and on ping-pong the ring position the groups hand each other
  static constexpr int BARRIER_BYTES = 2 * STAGES * 8 + (PINGPONG ? 8 : 0);
  static constexpr int SMEM_ALIGN = ATOM_BYTES;  // swizzled boxes start on 1024-byte atoms
  // + SMEM_ALIGN: the dynamic area starts after the outer loop's static words; aligned by hand
  static constexpr int SMEM_BYTES = RING_BYTES + GROUPS * STAGING_BYTES + BARRIER_BYTES + SMEM_ALIGN;
  static_assert(ACC == (PINGPONG ? BM : WG_M) * BN / WG_THREADS, "a wgmma m64nBN fragment per consumer thread and m64");
  static_assert(SMEM_BYTES <= SMEM_LIMIT, "a block's shared memory on sm_90");
  static_assert(STAGING_BYTES % 8 == 0, "barriers after the staging are 8-byte aligned");

  // fragment element i of consumer thread tid -> (row, col) inside the tile (the wgmma D layout,
  // rows offset by the warp group's 64)
  static __device__ __forceinline__ void coord(int i, int tid, int& r, int& c) {
    if constexpr (PINGPONG) {  // element i: columns 8 (i / 8) .., m64 half (i / 4) % 2 (ptx.cuh wgmma_k16_half)
      const int warp = tid / 32, lane = tid % 32, j = i % 4;
      r = ((i / 4) % 2) * WG_M + warp * 16 + lane / 4 + 8 * (j / 2);
      c = 8 * (i / 8) + 2 * (lane % 4) + j % 2;
      return;
    }
    const int wg = CONSUMERS == 1 ? 0 : tid / WG_THREADS, t = tid % WG_THREADS, warp = t / 32, lane = t % 32;
    r = wg * WG_M + warp * 16 + lane / 4 + 8 * ((i / 2) % 2);
    c = 8 * (i / 4) + 2 * (lane % 4) + (i % 2);
  }
  // the least tile row of consumer thread tid's accumulators (coord's row of element 0; the other is 8 below)
  static __device__ __forceinline__ int first_row(int tid) {
    const int wg = CONSUMERS == 1 || PINGPONG ? 0 : tid / WG_THREADS, t = tid % WG_THREADS;
    return wg * WG_M + (t / 32) * 16 + (t % 32) / 4;
  }
};

template <int BN, int BLOCKS = 1, int BM = 128>
constexpr bool staging_matches =
    EPILOGUE_STAGING_BYTES<TmaWgmma<false, BN, 3, false, false, BLOCKS, BM>> ==
    TmaWgmma<false, BN, 3, false, false, BLOCKS, BM>::STAGING_BYTES;
static_assert(staging_matches<64, 2> && staging_matches<128, 1, 64> &&
                  staging_matches<192, 1, 64> && staging_matches<256, 1, 64>,
              "the epilogue's staging size");
template <int BN>
using Boxed = TmaWgmma<false, BN, TileConfig<BN>::DEFAULT_STAGES>;
template <int BN>
constexpr bool boxes_hold_a_slice = EPILOGUE_STAGING_BYTES<Boxed<BN>> <= Boxed<BN>::STAGING_BYTES &&
                                    Boxed<BN>::STAGING_BYTES == Boxed<BN>::BOX_STAGING_BYTES;
static_assert(boxes_hold_a_slice<128> && boxes_hold_a_slice<192> && boxes_hold_a_slice<256>,
              "a shared-epilogue slice fits two C boxes");
static_assert(TmaWgmma<false, 64, 3, false, false, 2>::SMEM_BYTES == 111664 &&
                  TmaWgmma<false, 128>::SMEM_BYTES == 230488 && TmaWgmma<false, 192>::SMEM_BYTES == 197696 &&
                  TmaWgmma<false, 256>::SMEM_BYTES == 230464 &&
                  TmaWgmma<false, 128, 7, false, false, 1, 64>::SMEM_BYTES == 207984 &&
                  TmaWgmma<false, 256, 4, false, false, 1, 64>::SMEM_BYTES == 199744 &&
                  TmaWgmma<false, 192, 5, false, false, 1, 64>::SMEM_BYTES == 217168,
              "config.cuh states each tile's shared memory");
static_assert(TileConfig<256, 1, 64>::DEFAULT_STAGES == 4 &&
                  TmaWgmma<false, 256, 4, false, false, 1, 64>::SMEM_BYTES + TileConfig<256, 1, 64>::STAGE_BYTES >
                      SMEM_LIMIT,
              "64x256 runs as many stages as fit beside its staged halves (config.cuh)");
static_assert(TileConfig<128, 1, 64>::DEFAULT_STAGES == 7 &&
                  TmaWgmma<false, 128, 7, false, false, 1, 64>::SMEM_BYTES + TileConfig<128, 1, 64>::STAGE_BYTES >
                      SMEM_LIMIT,
              "64x128 runs as many stages as fit beside its staged tile (config.cuh)");
static_assert(TileConfig<192, 1, 64>::DEFAULT_STAGES == 5 &&
                  TmaWgmma<false, 192, 5, false, false, 1, 64>::SMEM_BYTES + TileConfig<192, 1, 64>::STAGE_BYTES >
                      SMEM_LIMIT,
              "64x192 runs as many stages as fit beside its staged tile (config.cuh)");

// Where each piece of the dynamic shared memory lies (shared-space byte addresses).
template <class ML>
struct Smem {
  unsigned base;  // 1024-byte aligned
  __device__ __forceinline__ unsigned a(int stage) const { return base + stage * ML::Config::A_STAGE_BYTES; }
  __device__ __forceinline__ unsigned b(int stage) const {
    return base + ML::STAGES * ML::Config::A_STAGE_BYTES + stage * ML::Config::B_STAGE_BYTES;
  }
  // group g's (ping-pong: one per consumer warp group)
  __device__ __forceinline__ unsigned staging(int g = 0) const { return base + ML::RING_BYTES + g * ML::STAGING_BYTES; }
  __device__ __forceinline__ unsigned full(int stage) const { return staging(ML::GROUPS) + 8 * stage; }
  __device__ __forceinline__ unsigned empty(int stage) const { return full(ML::STAGES + stage); }
  // ping-pong: the ring position after the last unit's stages, handed to the other group
  __device__ __forceinline__ unsigned ring_word() const { return full(2 * ML::STAGES); }
};

// The ring position both roles advance through, one MAC iteration at a time.
template <class ML>
struct Ring {
  int stage = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void next() {
    if (++stage == ML::STAGES) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// A B box's coordinates in its map, innermost first: (n, k) on an N-major B, (k, n) on a K-major one;
// either way a box is 64 n x 64 k (8 KB) and a stage's BN/64 boxes lie in n order.
template <class ML>
__device__ __forceinline__ int b_inner(int n, int kt) { return ML::B_K ? kt * ML::BK : n; }
template <class ML>
__device__ __forceinline__ int b_outer(int n, int kt) { return ML::B_K ? n : kt * ML::BK; }

// The CTAs of a B group run units of the same k ranges on tiles of one tile column, those of an A
// group on one tile row (the host checks it), so each loads its share of every stage's B boxes and
// its turns of A, multicast to the group. A stage is refilled once the consumers of every CTA this
// one writes into have freed it (empty counts them all).
template <class ML>
__device__ __forceinline__ void produce(const TmaParams& p, const Smem<ML>& s, unsigned a_mask, unsigned b_mask,
                                        unsigned rank) {
  const TableParams& t = p.gemm.table;
  tma_prefetch(&p.a);
  tma_prefetch(&p.b);
  WorkIterator<false> work;
  work.prefetch(t, blockIdx.x);
  work.begin(t, blockIdx.x);
  pdl_wait();  // behind the pack pass or any kernel before this GEMM: A and B are complete from here
  const unsigned below = (1u << rank) - 1u;
  const int a_members = __popc(a_mask), a_turn = __popc(a_mask & below);
  const int b_members = __popc(b_mask), b_index = __popc(b_mask & below);
  // member i of n loads boxes [ceil(i B / n), ceil((i + 1) B / n)): the first the larger share
  const int own_begin = (b_index * ML::Config::B_BOXES + b_members - 1) / b_members;
  const int own_end = ((b_index + 1) * ML::Config::B_BOXES + b_members - 1) / b_members;
  Ring<ML> ring;
  for (int u = work.first; u < work.last; ++u) {
    const WorkUnit w = work.unit(u, blockIdx.x);
    const int m0 = w.tile_m * ML::BM, n0 = w.tile_n * ML::BN;
    for (int kt = w.k_begin; kt < w.k_end; ++kt, ring.next()) {
      mbar_wait(s.empty(ring.stage), ring.phase ^ 1u);
      mbar_arrive_expect_tx(s.full(ring.stage), ML::Config::STAGE_BYTES);
      if (a_members == 1) {
        if constexpr (ML::A_MN) {
#pragma unroll
          for (int box = 0; box < ML::Config::A_MN_BOXES; ++box)
            tma_load_2d(s.a(ring.stage) + box * A_MN_BOX_BYTES, &p.a, s.full(ring.stage), m0 + box * BOX_INNER,
                        kt * ML::BK);
        } else {
          tma_load_2d(s.a(ring.stage), &p.a, s.full(ring.stage), kt * ML::BK, m0);
        }
      } else if (kt % a_members == a_turn) {  // this stage's A is this CTA's turn
        if constexpr (ML::A_MN) {
#pragma unroll
          for (int box = 0; box < ML::Config::A_MN_BOXES; ++box)
            tma_load_2d_multicast(s.a(ring.stage) + box * A_MN_BOX_BYTES, &p.a, s.full(ring.stage),
                                  m0 + box * BOX_INNER, kt * ML::BK, a_mask);
        } else {
          tma_load_2d_multicast(s.a(ring.stage), &p.a, s.full(ring.stage), kt * ML::BK, m0, a_mask);
        }
      }
      if (b_members > 1) {
        for (int box = own_begin; box < own_end; ++box)
          tma_load_2d_multicast(s.b(ring.stage) + box * B_BOX_BYTES, &p.b, s.full(ring.stage),
                                b_inner<ML>(n0 + box * BOX_INNER, kt), b_outer<ML>(n0 + box * BOX_INNER, kt),
                                b_mask);
      } else {
#pragma unroll
        for (int box = 0; box < ML::Config::B_BOXES; ++box)
          tma_load_2d(s.b(ring.stage) + box * B_BOX_BYTES, &p.b, s.full(ring.stage),
                      b_inner<ML>(n0 + box * BOX_INNER, kt), b_outer<ML>(n0 + box * BOX_INNER, kt));
      }
    }
  }
  // The peers' consumers arrive on this CTA's barriers: stay until the last of them has (every
  // stage's last phase freed; a stage never filled passes at once), so none lands after exit.
  if ((a_mask | b_mask) != 1u << rank)
    for (int i = 0; i < ML::STAGES; ++i, ring.next()) mbar_wait(s.empty(ring.stage), ring.phase ^ 1u);
}

// One unit's MAC iterations [k_begin, k_end) for consumer warp group `wg` (0 .. CONSUMERS - 1).
// One batch of wgmma stays in flight: a stage is freed once the batch after it has been issued and
// its own has completed (wait_group 1), the last one when the unit's accumulators are complete
// (wait_group 0), so the tensor cores never wait for the stage handshake (the pattern of NVIDIA CUTLASS
// include/cutlass/gemm/collective/sm90_mma_tma_gmma_ss_warpspecialized.hpp, K_PIPE_MMAS = 1).
// A clustered CTA frees each stage in every CTA of its A and B groups too (`peers`: their ranks;
// their multicasts write here). A ping-pong group computes all BM rows (`wg` unused) and calls
// `issued` once its last batch is issued: the other group's mainloop may start from there.
template <class ML, class Issued>
__device__ __forceinline__ void consume(const Smem<ML>& s, Ring<ML>& ring, int wg, int k_begin, int k_end,
                                        float (&acc)[ML::ACC], unsigned peers, Issued&& issued) {
  const bool arrives = threadIdx.x % WG_THREADS == 0;
  const auto release = [&](int stage) {
    mbar_arrive(s.empty(stage));
#pragma unroll
    for (unsigned r = 0; r < MAX_CLUSTER; ++r)
      if (peers >> r & 1u) mbar_arrive_cluster(s.empty(stage), r);
  };
  int previous = -1;  // the stage whose batch may still be in flight
  for (int kt = k_begin; kt < k_end; ++kt, ring.next()) {
    mbar_wait(s.full(ring.stage), ring.phase);
    wgmma_fence();
    // rows 64 h on of A: of the K-major box, or the M-major box h (h: this warp group's, or on
    // ping-pong each half of the tile in turn)
    const auto rows = [&](int h) { return s.a(ring.stage) + h * (ML::A_MN ? A_MN_BOX_BYTES : WG_M * SWIZZLE_BYTES); };
    const unsigned a = rows(ML::PINGPONG ? 0 : wg), b = s.b(ring.stage);
#pragma unroll
    for (int kk = 0; kk < ML::BK / MMA_K; ++kk) {
      // K-major (A, or B where B_K): k-step kk starts 32 bytes into each swizzled row (LBO unused,
      // SBO: 8 rows); M-/N-major: k-step kk starts 16 rows down (LBO: the next 64 columns' box,
      // SBO: 8 rows)
      const auto desc_a = [&](unsigned at) {
        return ML::A_MN ? smem_desc(at + kk * MMA_K * SWIZZLE_BYTES, A_MN_BOX_BYTES, ATOM_BYTES)
                        : smem_desc(at + kk * MMA_K * ELEM_BYTES, 16, ATOM_BYTES);
      };
      const unsigned long long db = ML::B_K ? smem_desc(b + kk * MMA_K * ELEM_BYTES, 16, ATOM_BYTES)
                                            : smem_desc(b + kk * MMA_K * SWIZZLE_BYTES, B_BOX_BYTES, ATOM_BYTES);
      if constexpr (ML::PINGPONG) {
        wgmma_k16_half<0, ML::IS_BF16, ML::A_MN, ML::B_K>(acc, desc_a(a), db);
        wgmma_k16_half<1, ML::IS_BF16, ML::A_MN, ML::B_K>(acc, desc_a(rows(1)), db);
      } else {
        wgmma_k16<ML::BN, ML::IS_BF16, ML::A_MN, ML::B_K>(acc, desc_a(a), db);
      }
    }
    wgmma_commit();
    wgmma_wait<1>();
    if (arrives && previous >= 0) release(previous);
    previous = ring.stage;
  }
  issued();
  wgmma_wait<0>();
  if (arrives && previous >= 0) release(previous);
}

// C tile (m0, n0) = alpha * acc through the TMA unit, for every WRITE unit of a CTA but its last, on
// the tiles whose whole FP32 C tile fits the epilogue's staging (TMA_STORE: all but 64x256, which
// stages C in column halves, and the tiles of C boxes, below; the host sets c_store where C is a
// row-major FP32 matrix TMA can address, beta is 0 and no unit adds to C atomically: catalogue
// TMA_STORE_TILES). The tile
// goes to the staging as C_BOX_COLS-column boxes of 128-byte rows, 16-byte chunks swizzled by row
// (the map's 128-byte swizzle: a warp's pair stores take the minimum two wavefronts), then one thread
// issues the boxes' bulk stores and the consumers go on to their next unit while the copy engine
// writes C: the epilogue's global stores no longer hold the tensor cores (persistent 128x128x64 CTAs
// 1.07x, LOG.md v39). A CTA's last tile, with no mainloop after it to hide behind, leaves the SM
// faster through the 128-row tiles' shared epilogue (one-tile CTAs 0.92-0.95x through TMA), but not
// on the tiles of LAST_TILE_TMA. The staging is rewritten only once the previous tile's stores have
// read it (bulk_wait_read), and the CTA ends once the last ones have read it too: the writes complete
// with the grid, as CUTLASS's kernels end on cute::tma_store_wait (include/cute/arch/copy_sm90_tma.hpp,
// a wait_group.read).
// (The TMA-store epilogue of NVIDIA CUTLASS include/cutlass/epilogue/collective/
// sm90_epilogue_tma_warpspecialized.hpp, written here for one staging buffer.)
template <class ML>
constexpr bool TMA_STORE = ML::EPILOGUE_PARTS == 1;
// Tiles whose last tile leaves through TMA too: rows the shared epilogue stores in a flattened loop
// (epilogue.cuh store_rows: 192 columns; 1.12x on one-tile-per-CTA GEMMs, LOG.md v39), and the tiles
// of one consumer warp group, whose 128 threads take 16 passes over a 64x128 tile (1.01-1.06x on 9 of
// 9 launches of 64x128x64, LOG.md v115), and the tiles of C boxes (128x256's last tile through the
// shared epilogue's 32-column slices ran 0.98x, LOG.md v137).
template <class ML>
constexpr bool LAST_TILE_TMA = ML::C_BOXES || ML::THREADS % (ML::BN / 4) != 0 || ML::CONSUMERS == 1;

// The two values of C columns c, c + 1 as one 32-bit word of FP16 or BF16 (cvt.rn: round to nearest
// even, as epilogue.cuh's stores), for the staging of a 16-bit C.
__device__ __forceinline__ unsigned pack_c16(float lo, float hi, bool bf16) {
  unsigned w;
  if (bf16) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(w) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(w) : "f"(hi), "f"(lo));
  }
  return w;
}

// Columns c, c + 1 of C staged at shared address `at`: two FP32 values, or (C16) one word of two
// 16-bit ones.
template <bool C16>
__device__ __forceinline__ void stage_pair(unsigned at, float lo, float hi, bool bf16) {
  if constexpr (C16) {
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(pack_c16(lo, hi, bf16)) : "memory");
  } else {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(at), "f"(lo), "f"(hi) : "memory");
  }
}

// The staging address of accumulator pair i of a thread whose first pair is at (r0, c0) (ML::coord),
// in a box of 128-byte swizzled rows (BM x 128 B): FP32 boxes hold 32 columns, 16-bit (C16) ones 64.
// Element i sits at row r0 + 8 ((i / 2) % 2), column c0 + 8q with q = i / 4; on ping-pong at row
// r0 + 64 ((i / 4) % 2) + 8 ((i / 2) % 2), q = i / 8. Returns the offset inside box q / (4 or 8).
template <class ML, bool C16>
__device__ __forceinline__ unsigned staged_pair(int i, int r0, int c0) {
  const int q = ML::PINGPONG ? i / 8 : i / 4, r = (ML::PINGPONG ? 64 * ((i / 4) % 2) : 0) + 8 * ((i / 2) % 2);
  const int swz = r0 % 8;  // (r0 + r) % 8: r is a multiple of 8
  if constexpr (C16) {
    return (r0 + r) * SWIZZLE_BYTES + (((q % 8) ^ swz) * 16) + c0 * 2;
  } else {
    return (r0 + r) * SWIZZLE_BYTES + (((2 * (q % 4) + c0 / 4) ^ swz) * 16) + (c0 % 4) * 4;
  }
}

template <class ML, class G, bool C16 = false>
__device__ __forceinline__ void write_tile_tma(const TmaParams& p, unsigned staging, int m0, int n0,
                                               const float (&acc)[ML::ACC]) {
  constexpr int BOX_COLS = C16 ? 2 * C_BOX_COLS : C_BOX_COLS, PER_Q = ML::PINGPONG ? 8 : 4;
  constexpr int BOX_BYTES = ML::BM * SWIZZLE_BYTES, BOXES = ML::BN / BOX_COLS;
  static_assert(TMA_STORE<ML> && !ML::PINGPONG && BOXES * BOX_BYTES <= ML::STAGING_BYTES, "the whole tile staged");
  static_assert(C_BOX_COLS == 32 && ML::ACC == WG_M * ML::BN / WG_THREADS, "the wgmma D layout, 32-column boxes");
  // the thread's first pair (row r0, columns c0, c0 + 1; ML::coord of element 0), from a fresh read
  // of %tid: kept across the unit loop, these addresses spilled beside 128 accumulators
  unsigned tid;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
  tid -= WG_THREADS;  // the consumers' rank (the producer is warp group 0)
  int r0, c0;
  ML::coord(0, static_cast<int>(tid), r0, c0);
  const float alpha = static_cast<float>(p.gemm.ops.alpha);
  const bool bf16 = p.gemm.ops.c_type == C_BF16;
  if (G::leader()) bulk_wait_read();
  G::sync();
#pragma unroll
  for (int i = 0; i < ML::ACC; i += 2) {
    const unsigned at = staging + (i / PER_Q / (BOX_COLS / 8)) * BOX_BYTES + staged_pair<ML, C16>(i, r0, c0);
    stage_pair<C16>(at, alpha * acc[i], alpha * acc[i + 1], bf16);
  }
  fence_proxy_async_shared();
  G::sync();
  if (G::leader()) {
#pragma unroll
    for (int box = 0; box < BOXES; ++box) tma_store_2d(&p.c, staging + box * BOX_BYTES, n0 + box * BOX_COLS, m0);
    bulk_commit();
  }
}

// C tile (m0, n0) = alpha * acc through the TMA unit in 32-column boxes, two staged at a time (G's
// staging: 2 x BM x 128 B), each box's bulk store issued as soon as it is staged and its buffer
// rewritten once the store two boxes back has read it. A whole FP32 tile would take 64 KB of staging
// on ping-pong 128x128 (a ring stage and a half), 96 KB on 128x192, 128 KB on 128x256: the boxes
// leave room for one more stage. Ping-pong: a group's waits here run under the other group's mainloop. The staging's
// addresses and swizzle are write_tile_tma's; the accumulators of box b are acc[PER_BOX b ..] (coord:
// 8 columns per 4 of them; on ping-pong per 8, both m64 halves).
// A 16-bit C (C16) leaves in boxes of 64 columns, the same 128-byte rows.
template <class ML, class G, bool C16 = false>
__device__ __forceinline__ void write_tile_tma_boxes(const TmaParams& p, unsigned staging, int m0, int n0,
                                                     const float (&acc)[ML::ACC]) {
  constexpr int BOX_COLS = C16 ? 2 * C_BOX_COLS : C_BOX_COLS;
  constexpr int BOX_BYTES = ML::BM * SWIZZLE_BYTES, BOXES = ML::BN / BOX_COLS, PER_BOX = ML::ACC / BOXES;
  static_assert(ML::C_BOXES && 2 * BOX_BYTES <= ML::STAGING_BYTES && ML::BN % BOX_COLS == 0 &&
                    PER_BOX == (ML::PINGPONG ? 32 : 16) * BOX_COLS / C_BOX_COLS,
                "two boxes of 128-byte rows staged");
  const int tid = G::rank();
  int r0, c0;
  ML::coord(0, tid, r0, c0);
  const float alpha = static_cast<float>(p.gemm.ops.alpha);
  const bool bf16 = p.gemm.ops.c_type == C_BF16;
#pragma unroll
  for (int box = 0; box < BOXES; ++box) {
    if (G::leader()) bulk_wait_read_all_but_one();  // this buffer's last store (two boxes back) has read it
    G::sync();
    const unsigned buffer = staging + (box % 2) * BOX_BYTES;
#pragma unroll
    for (int i = box * PER_BOX; i < (box + 1) * PER_BOX; i += 2) {
      const unsigned at = buffer + staged_pair<ML, C16>(i, r0, c0);
      stage_pair<C16>(at, alpha * acc[i], alpha * acc[i + 1], bf16);
    }
    fence_proxy_async_shared();
    G::sync();
    if (G::leader()) {
      tma_store_2d(&p.c, staging + (box % 2) * BOX_BYTES, n0 + box * BOX_COLS, m0);
      bulk_commit();
    }
  }
}

// A group's bulk stores of C from its staging (its leader issues them): the shared epilogue, which
// stages there too, and the CTA's end wait until they have read it.
template <class G>
struct BulkStores {
  bool reading = false, issued = false;  // (the same on every thread of G)
  __device__ __forceinline__ void issue() { reading = issued = true; }
  __device__ __forceinline__ void free_staging() {
    if (reading) {
      if (G::leader()) bulk_wait_read();
      G::sync();
      reading = false;
    }
  }
  __device__ __forceinline__ void drain() const {
    if (issued && G::leader()) bulk_wait_read();
  }
};

// The ping-pong groups' turns (barriers 3 and 4: the turn of group 0 or 1; 5: both through their
// units): a group starts a unit's mainloop once the other has issued the previous unit's (the ring's
// stages are consumed in the producer's order) and takes the ring position from it.
constexpr int TURN_BARRIER = 3, DONE_BARRIER = 5;
using Turns = HandoffOn<2 * WG_THREADS>;  // both groups' threads

// Ping-pong: group g runs the CTA's units g, g + 2, ...; the CTA ends its launch once both are through.
struct PingPongLanes {
  int lane;
  static constexpr int count = 2;
  template <class G>
  __device__ __forceinline__ void finish(const TableParams& t) const {
    Turns::wait(DONE_BARRIER);
    if (lane == 0) finish_launch<G>(t);
  }
};

// The entry's body (catalogue/source.py instantiates it per dtype).
template <class ML>
__device__ __forceinline__ void tma_wgmma_kernel(const TmaParams& p) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned raw = smem_u32(smem_raw);
  const Smem<ML> s{(raw + ML::SMEM_ALIGN - 1) & ~static_cast<unsigned>(ML::SMEM_ALIGN - 1)};
  // the table's, uploaded before the launch (nothing before this kernel writes it: read before pdl_wait);
  // nonzero on every CTA of a cluster that shares anything, each then joins the cluster barrier
  const unsigned word = p.shares != nullptr ? static_cast<unsigned>(p.shares[blockIdx.x]) : 0u;
  const unsigned rank = word != 0 ? cluster_rank() : 0u, self = 1u << rank;
  const unsigned a_mask = word != 0 ? word & SHARE_MASK : self, b_mask = word != 0 ? word >> SHARE_BITS : self;
  const unsigned peers = (a_mask | b_mask) & ~self;  // the CTAs whose consumers free this one's stages
  if (threadIdx.x == 0) {
    for (int i = 0; i < ML::STAGES; ++i) {
      mbar_init(s.full(i), 1);  // the producer's arrival (+ the stage's TMA bytes)
      // one arrival per consumer warp group of this CTA and of each peer (ping-pong: the one consuming it)
      mbar_init(s.empty(i), (ML::PINGPONG ? 1 : ML::CONSUMERS) * (1 + __popc(peers)));
    }
    mbar_init_fence();
  }
  __syncthreads();
  if (word != 0) cluster_sync();  // the peers' barriers are initialized before their multicasts land here
  if (threadIdx.x < WG_THREADS) {
    regs_down<PRODUCER_REGS>();
    if (threadIdx.x == 0) produce<ML>(p, s, a_mask, b_mask, rank);
  } else if constexpr (ML::PINGPONG) {
    regs_up<ML::Config::CONSUMER_REGS>();
    using G = GroupOfThread<1, WG_THREADS, ML::THREADS>;  // barriers 1 and 2
    const int group = G::slot();
    unsigned char* staging = smem_raw + (s.staging(group) - raw);
    const TableParams& t = p.gemm.table;
    const int units = t.cta_offsets[blockIdx.x + 1] - t.cta_offsets[blockIdx.x];
    int position = group;  // the CTA's unit this group runs next
    Ring<ML> ring;
    const bool c_store = p.c_store != 0, c16 = p.gemm.ops.c_type != C_ACC;
    BulkStores<G> stores;
    run_units<ML, G>(
        p.gemm, staging,
        [&](int, int, int k_begin, int k_end, float (&acc)[ML::ACC]) {
          if (position > 0) {  // the other group ran the unit before: its turn ends, its ring position
            Turns::wait(TURN_BARRIER + group);
            const unsigned word = *reinterpret_cast<volatile unsigned*>(smem_raw + (s.ring_word() - raw));
            ring.stage = static_cast<int>(word >> 1);
            ring.phase = word & 1u;
          }
          consume<ML>(s, ring, 0, k_begin, k_end, acc, peers, [&] {
            if (position + 1 < units) {
              if (G::leader())
                *reinterpret_cast<volatile unsigned*>(smem_raw + (s.ring_word() - raw)) =
                    (static_cast<unsigned>(ring.stage) << 1) | ring.phase;
              Turns::arrive(TURN_BARRIER + 1 - group);
            }
          });
          position += 2;
        },
        [&](int m0, int n0, const float (&acc)[ML::ACC], bool) {
          if (c_store) {
            if (c16) {
              write_tile_tma_boxes<ML, G, true>(p, s.staging(group), m0, n0, acc);
            } else {
              write_tile_tma_boxes<ML, G>(p, s.staging(group), m0, n0, acc);
            }
            stores.issue();
            return true;
          }
          stores.free_staging();
          return false;
        },
        PingPongLanes{group});
    stores.drain();
  } else {
    regs_up<ML::Config::CONSUMER_REGS>();
    using G = ThreadGroup<1, WG_THREADS, ML::THREADS>;
    const int wg = ML::CONSUMERS == 1 ? 0 : G::rank() / WG_THREADS;
    unsigned char* staging = smem_raw + (s.staging() - raw);
    Ring<ML> ring;
    const bool c_store = (TMA_STORE<ML> || ML::C_BOXES) && p.c_store != 0, c16 = p.gemm.ops.c_type != C_ACC;
    BulkStores<G> stores;
    run_units<ML, G>(
        p.gemm, staging,
        [&](int, int, int k_begin, int k_end, float (&acc)[ML::ACC]) {
          consume<ML>(s, ring, wg, k_begin, k_end, acc, peers, [] {});
        },
        [&](int m0, int n0, const float (&acc)[ML::ACC], bool last) {
          if constexpr (TMA_STORE<ML> || ML::C_BOXES) {
            if (c_store && (!last || LAST_TILE_TMA<ML>)) {
              if constexpr (ML::C_BOXES) {
                if (c16) {
                  write_tile_tma_boxes<ML, G, true>(p, s.staging(), m0, n0, acc);
                } else {
                  write_tile_tma_boxes<ML, G>(p, s.staging(), m0, n0, acc);
                }
              } else if (c16) {
                write_tile_tma<ML, G, true>(p, s.staging(), m0, n0, acc);
              } else {
                write_tile_tma<ML, G>(p, s.staging(), m0, n0, acc);
              }
              stores.issue();
              return true;
            }
            stores.free_staging();
          }
          return false;
        });
    stores.drain();
  }
}

}  // namespace sm90
}  // namespace streamk
