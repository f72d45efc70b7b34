// config.cuh (sm90): constants of the TMA + wgmma mainloop (tma_wgmma.cuh), for its tiles 128 x BN x 64,
// BN 64, 128, 192 or 256 (TileConfig<BN, BLOCKS>).
//
// Shared memory (dynamic; 227 KB = 232,448 B a block may have on sm_90, 228 KB an SM): the ring of
// STAGES x (A 128 x 64 + B 64 x BN) FP16/BF16, the epilogue's FP32 staging (its own, so the producer
// loads the next unit's operands while the consumers run the fixup and write C), 2 x STAGES mbarriers
// and 1 KB of alignment slack:
//   128x64  (two CTAs an SM): 3 x 24 KB + the tile staged (128 x 72 x 4 B = 36 KB)       = 111,664 B
//   128x128: 4 x 32 KB + a whole tile staged (128 x 136 x 4 B = 68 KB)                   = 201,792 B
//   128x192: 3 x 40 KB + a whole tile staged (128 x 200 x 4 B = 100 KB)                  = 226,352 B
//   128x256: 3 x 48 KB + the tile staged in two column halves (128 x 136 x 4 B = 68 KB)  = 218,160 B
// A whole 128x256 FP32 staging (132 KB) would leave room for one 48 KB stage only, and a fourth
// stage does not fit beside the halves (196,608 + 69,632 > 232,448), so 128x256 runs 3 stages and
// writes C in two passes of 128 columns (common/epilogue.cuh EPILOGUE_PARTS). Of three 64-deep
// stages two load while one is computed: ~1.1 us of math ahead at the H100's ~7.5 TFLOP/s per SM
// (a 128x256x64 stage is 4.2 Mflop). 128x64 keeps two CTAs on an SM (2 x (111,664 + 1 KB static)
// of 228 KB), so one CTA's prologue and epilogue run beside the other's mainloop.
#pragma once

namespace streamk {
namespace sm90 {

constexpr int BM = 128;           // CTA tile rows (every tile)
constexpr int BK = 64;            // k per MAC iteration: one 128-byte swizzled row of A per tile row
constexpr int WG_THREADS = 128;   // a warp group
constexpr int CONSUMERS = 2;      // consumer warp groups, 64 tile rows each
constexpr int THREADS = (1 + CONSUMERS) * WG_THREADS;  // producer + consumers
constexpr int WG_M = BM / CONSUMERS;                   // rows per consumer warp group: one wgmma m64
constexpr int MMA_K = 16;                              // wgmma k per instruction
constexpr int ELEM_BYTES = 2;
constexpr int SWIZZLE_BYTES = 128;  // TMA / wgmma 128-byte swizzle: a box's inner side is 128 bytes
constexpr int BOX_INNER = SWIZZLE_BYTES / ELEM_BYTES;  // 64 elements
constexpr int A_STAGE_BYTES = BM * BK * ELEM_BYTES;    // one box: 128 rows x 64 k
constexpr int B_BOX_BYTES = BK * BOX_INNER * ELEM_BYTES;  // a B box: 64 k rows x 64 n
constexpr int A_MN_BOX_BYTES = BK * BOX_INNER * ELEM_BYTES;  // an M-major A box: 64 k rows x 64 m
constexpr int ATOM_BYTES = 8 * SWIZZLE_BYTES;  // 8 rows of 128 B: the swizzle pattern's period
constexpr int C_BOX_COLS = SWIZZLE_BYTES / 4;  // FP32 columns of a C box written by TMA (tma_wgmma.cuh write_tile_tma)
constexpr int SMEM_LIMIT = 227 * 1024;         // a block's dynamic shared memory on sm_90
// Registers per thread after reallocation (setmaxnreg): the producer needs few, the consumers hold
// BN/2 accumulators each plus the fixup's. One CTA an SM: 128 x 40 + 256 x 232 = 64,512 of the
// SM's 65,536; two (128x64): each CTA is launched with 80 a thread (__launch_bounds__(384, 2)), and
// 128 x 40 + 256 x 96 = 29,696 of its 30,720.
constexpr int PRODUCER_REGS = 40;
template <int BLOCKS>
constexpr int CONSUMER_REGS = BLOCKS == 1 ? 232 : 96;
// Clusters of two CTAs along m share each stage's B boxes (TMA multicast to both ranks).
constexpr int CLUSTER = 2;
constexpr unsigned short CLUSTER_MASK = (1u << CLUSTER) - 1u;

static_assert(BK * ELEM_BYTES == SWIZZLE_BYTES, "an A row of one stage is one swizzle row");
static_assert(WG_M == 64, "one m64 wgmma per consumer group");
static_assert(A_STAGE_BYTES % ATOM_BYTES == 0 && B_BOX_BYTES % ATOM_BYTES == 0, "boxes start on swizzle atoms");
static_assert(BK % MMA_K == 0, "whole wgmma k-steps per stage");
static_assert(PRODUCER_REGS * WG_THREADS + CONSUMER_REGS<1> * CONSUMERS * WG_THREADS <= 65536, "the SM's registers");
static_assert(PRODUCER_REGS * WG_THREADS + CONSUMER_REGS<2> * CONSUMERS * WG_THREADS <= 80 * THREADS,
              "a CTA's registers at two CTAs an SM");

// What depends on the tile's width: each consumer warp group computes 64 x BN with one
// wgmma.m64nBNk16 per k-step (BN/2 FP32 accumulators per thread), B arrives in BN/64 boxes, the
// pipeline is as deep as fits beside the epilogue's staging (above; BLOCKS CTAs an SM), and the
// epilogue stages the tile whole or, on 128x256, in two column halves.
template <int BN_, int BLOCKS_ = 1>
struct TileConfig {
  static constexpr int BN = BN_;
  static constexpr int BLOCKS = BLOCKS_;  // CTAs an SM (__launch_bounds__)
  static constexpr int B_BOXES = BN / BOX_INNER;
  static constexpr int B_STAGE_BYTES = B_BOXES * B_BOX_BYTES;
  static constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;  // TMA transaction bytes per stage
  static constexpr int DEFAULT_STAGES = BN == 128 ? 4 : 3;
  static constexpr int EPILOGUE_PARTS = BN == 256 ? 2 : 1;
  static constexpr int CONSUMER_REGS = sm90::CONSUMER_REGS<BLOCKS>;
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma n64, n128, n192 or n256");
  static_assert(BLOCKS == 1 || (BLOCKS == 2 && BN == 64), "two CTAs an SM fit on 128x64 only");
};

}  // namespace sm90
}  // namespace streamk
