// config.cuh (sm90): constants of the TMA + wgmma mainloop (tma_wgmma.cuh), for its tiles BM x BN x 64:
// BM 128 (two consumer warp groups) with BN 64, 128, 192 or 256, and BM 64 (one consumer warp group)
// with BN 128, 192 or 256 (TileConfig<BN, BLOCKS, BM>). On 128x128 the two groups run ping-pong: each
// holds a whole tile and they take the CTA's units in turn (PINGPONG below).
//
// Shared memory (dynamic; 227 KB = 232,448 B a block may have on sm_90, 228 KB an SM): the ring of
// STAGES x (A BM x 64 + B 64 x BN) FP16/BF16, the epilogue's FP32 staging (its own, so the producer
// loads the next unit's operands while the consumers run the fixup and write C), 2 x STAGES mbarriers
// and 1 KB of alignment slack:
//   128x64  (two CTAs an SM): 3 x 24 KB + the tile staged (128 x 72 x 4 B = 36 KB)       = 111,664 B
//   128x128: 5 x 32 KB + two C boxes per ping-pong group (2 x 2 x 16 KB) + a ring word    = 230,488 B
//   128x192: 4 x 40 KB + two C boxes of 32 columns (2 x 16 KB)                          = 197,696 B
//   128x256: 4 x 48 KB + two C boxes of 32 columns (2 x 16 KB)                          = 230,464 B
//   64x128:  7 x 24 KB + a whole tile staged (64 x 136 x 4 B = 34 KB)                   = 207,984 B
//   64x192:  5 x 32 KB + a whole tile staged transposed (192 x 68 x 4 B = 51 KB)          = 217,168 B
//   64x256:  4 x 40 KB + the tile staged in two column halves (64 x 136 x 4 B = 34 KB)   = 199,744 B
// A whole 128x256 FP32 staging (132 KB) would leave room for one 48 KB stage only, and a fourth
// stage does not fit beside two column halves (196,608 + 69,632 > 232,448). So 128x256, like the
// ping-pong 128x128, writes C through TMA in 32-column boxes, two staged at a time (tma_wgmma.cuh
// write_tile_tma_boxes; the shared epilogue in eight 32-column slices), and runs a ring of four
// stages: three load while one is computed. 128x192 does the same, for a fourth stage beside the
// boxes (its whole tile staged took 100 KB: three stages); a fifth fits only with one box staged at a
// time, and ran slower (1.007x against the four stages' 1.067x over three, LOG.md v143). 128x64
// keeps two CTAs on an SM (2 x (111,664 + 1 KB static) of 228 KB), so one CTA's prologue and
// epilogue run beside the other's mainloop. 64x128 runs alone on its SM with a ring of 7 (six
// stages load while one is computed, as cuBLAS's 64-row Hopper tiles run 8): at two CTAs of 3
// stages its loads waited, 1.05x auto's time and 1.19x Stream-K's (LOG.md v75). 64x256 stages its
// tile in halves, for a fourth stage: staged whole (66 KB) a fourth missed by 64 B (4 x 40 KB +
// 67,584 + 64 + 1,024 = 232,512), and its C then no longer leaves through TMA (tma_wgmma.cuh
// TMA_STORE). Its decode launches (x @ W.t(), 8-64 rows: 43-129 CTAs, a
// 64x256x64 stage 2.1 Mflop against 32 KB of W) are bound by W's stream, not the math: a TMA ring
// alone read W at 3.32 TB/s with 3 stages, 3.48 with 7 (LOG.md v60); a fifth stage does not fit
// beside the halves (5 x 40 KB + 34,816 + 80 + 1,024 = 240,720), and beside 32-column C boxes
// (222,288 B) it ran those launches 0.982x (LOG.md v144).
#pragma once

namespace streamk {
namespace sm90 {

constexpr int BK = 64;            // k per MAC iteration: one 128-byte swizzled row of A per tile row
constexpr int WG_THREADS = 128;   // a warp group
constexpr int WG_M = 64;          // rows per consumer warp group: one wgmma m64
constexpr int MMA_K = 16;         // wgmma k per instruction
constexpr int ELEM_BYTES = 2;
constexpr int SWIZZLE_BYTES = 128;  // TMA / wgmma 128-byte swizzle: a box's inner side is 128 bytes
constexpr int BOX_INNER = SWIZZLE_BYTES / ELEM_BYTES;  // 64 elements
constexpr int B_BOX_BYTES = BK * BOX_INNER * ELEM_BYTES;  // a B box: 64 k rows x 64 n
constexpr int A_MN_BOX_BYTES = BK * BOX_INNER * ELEM_BYTES;  // an M-major A box: 64 k rows x 64 m
constexpr int ATOM_BYTES = 8 * SWIZZLE_BYTES;  // 8 rows of 128 B: the swizzle pattern's period
constexpr int C_BOX_COLS = SWIZZLE_BYTES / 4;  // FP32 columns of a C box written by TMA (tma_wgmma.cuh write_tile_tma)
constexpr int SMEM_LIMIT = 227 * 1024;         // a block's dynamic shared memory on sm_90
constexpr int SM_REGS = 64 * 1024;             // an SM's register file (32-bit registers)
// Registers per thread after reallocation (setmaxnreg): the producer needs few, the consumers hold
// BN/2 accumulators each plus the fixup's. ptxas launches a kernel that reallocates with what its
// __launch_bounds__ allow (at most 255) or its largest setmaxnreg, the fewer, and the consumers
// take what the producer gives back, at most setmaxnreg's 256 (ptxas 13.5's counts at launch):
//   384 threads, one CTA an SM: 168 at launch, 128 x 40 + 256 x 232 = 64,512 of the SM's 65,536
//   384 threads, two (128x64): 80 at launch, 128 x 40 + 256 x 96 = 29,696 of the CTA's 30,720
//   256 threads, one (64x128, 64x256): 255 at launch, consumers 256, as FlashAttention-3's kernels with
//   one consumer warp group (github Dao-AILab/flash-attention hopper/flash_fwd_kernel_sm90.h)
constexpr int PRODUCER_REGS = 40;
constexpr int MAX_CONSUMER_REGS = 256;
// A thread's registers at launch under __launch_bounds__(threads, blocks), whole multiples of 8.
constexpr int launch_regs(int threads, int blocks) { return SM_REGS / (threads * blocks) / 8 * 8; }
// The consumers' registers after the producer's drop to PRODUCER_REGS, whole multiples of 8.
constexpr int consumer_regs(int consumers, int blocks) {
  const int freed = launch_regs((1 + consumers) * WG_THREADS, blocks) * (1 + consumers) - PRODUCER_REGS;
  return freed / consumers / 8 * 8 < MAX_CONSUMER_REGS ? freed / consumers / 8 * 8 : MAX_CONSUMER_REGS;
}
// Clusters of two CTAs along m share each stage's B boxes (TMA multicast to both ranks); launched
// in clusters of four (2x2 blocks of tiles: decide/launches.py auto_quads) they share A along rows
// too. What a CTA shares comes from the host as one share word (streamk/gpu/clusters.py): the ranks
// whose A is its A in bits 0-7, whose B is its B from bit SHARE_BITS on.
constexpr int CLUSTER = 2;
constexpr int MAX_CLUSTER = 4;   // ranks a share word may name (clusters.py QUAD)
constexpr int SHARE_BITS = 8;    // clusters.py SHARE_BITS
constexpr unsigned SHARE_MASK = (1u << SHARE_BITS) - 1u;
static_assert(MAX_CLUSTER <= SHARE_BITS, "a mask holds every rank of a cluster");

static_assert(BK * ELEM_BYTES == SWIZZLE_BYTES, "an A row of one stage is one swizzle row");
static_assert(B_BOX_BYTES % ATOM_BYTES == 0, "boxes start on swizzle atoms");
static_assert(BK % MMA_K == 0, "whole wgmma k-steps per stage");
static_assert(consumer_regs(2, 1) == 232 && consumer_regs(2, 2) == 96 && consumer_regs(1, 1) == 256,
              "the table above");

// What depends on the tile: BM/64 consumer warp groups each compute 64 x BN with one
// wgmma.m64nBNk16 per k-step (BN/2 FP32 accumulators per thread), A arrives in one BM x 64 box
// (K-major) or BM/64 boxes of 64 k x 64 m (M-major), B in BN/64 boxes, the pipeline is as deep as
// fits beside the epilogue's staging (above; BLOCKS CTAs an SM), and the epilogue stages the tile
// whole, in two column halves (64x256) or in 32-column C boxes (C_BOXES).
template <int BN_, int BLOCKS_ = 1, int BM_ = 128>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_;
  static constexpr int BLOCKS = BLOCKS_;  // CTAs an SM (__launch_bounds__)
  static constexpr int CONSUMERS = BM / WG_M;  // consumer warp groups, 64 tile rows each
  static constexpr int THREADS = (1 + CONSUMERS) * WG_THREADS;  // producer + consumers
  static constexpr int A_STAGE_BYTES = BM * BK * ELEM_BYTES;    // a K-major box of BM rows x 64 k
  static constexpr int A_MN_BOXES = BM / BOX_INNER;             // M-major A: boxes of 64 m a stage
  static constexpr int B_BOXES = BN / BOX_INNER;
  static constexpr int B_STAGE_BYTES = B_BOXES * B_BOX_BYTES;
  static constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;  // TMA transaction bytes per stage
  // Ping-pong (128x128, one CTA an SM): each consumer warp group holds a whole tile and the two take
  // the CTA's units in turn, so one's fixup and epilogue run under the other's mainloop (NVIDIA
  // CUTLASS include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_pingpong.hpp). Each stages C in
  // two 32-column boxes for TMA stores (2 x 16 KB; the shared epilogue in four column slices), which
  // leaves room for a ring of five stages.
  static constexpr bool PINGPONG = BM == 128 && BN == 128 && BLOCKS == 1;
  // C leaves through TMA in 32-column boxes, two staged at a time (ping-pong: per group), so a ring
  // stage more fits: ping-pong 128x128, 128x192 and 128x256
  static constexpr bool C_BOXES = PINGPONG || (BM == 128 && (BN == 192 || BN == 256));
  static constexpr int DEFAULT_STAGES =
      BM == 64 ? (BN == 128 ? 7 : BN == 192 ? 5 : 4) : PINGPONG ? 5 : BN == 64 ? 3 : 4;
  // the shared epilogue's column slices: 32 columns where C boxes take the staging, else halves of 256
  static constexpr int EPILOGUE_PARTS = C_BOXES ? BN / 32 : BN == 256 ? 2 : 1;
  static constexpr int CONSUMER_REGS = consumer_regs(CONSUMERS, BLOCKS);
  static_assert(BM == 128 || BM == 64, "one or two m64 consumer warp groups");
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma n64, n128, n192 or n256");
  static_assert(BLOCKS == 1 || (BLOCKS == 2 && BM == 128 && BN == 64), "two CTAs an SM fit on 128x64 only");
  static_assert(A_STAGE_BYTES % ATOM_BYTES == 0, "boxes start on swizzle atoms");
  static_assert(PRODUCER_REGS * WG_THREADS + CONSUMER_REGS * CONSUMERS * WG_THREADS <=
                    launch_regs(THREADS, BLOCKS) * THREADS,
                "the registers the CTA was launched with");
};

}  // namespace sm90
}  // namespace streamk
