// config.cuh (sm90): constants of the TMA + wgmma mainloop (tma_wgmma.cuh), for its two tiles,
// 128x128x64 and 128x256x64 (TileConfig<BN>).
//
// Shared memory (dynamic; 227 KB = 232,448 B a block may have on sm_90): the ring of STAGES x
// (A 128 x 64 + B 64 x BN) FP16/BF16, the epilogue's FP32 staging (its own, so the producer loads the
// next unit's operands while the consumers run the fixup and write C), 2 x STAGES mbarriers and
// 1 KB of alignment slack:
//   128x128: 4 x 32 KB + a whole tile staged (128 x 136 x 4 B = 68 KB)                 = 201,792 B
//   128x256: 3 x 48 KB + the tile staged in two column halves (128 x 136 x 4 B = 68 KB) = 218,160 B
// A whole 128x256 FP32 staging (132 KB) would leave room for one 48 KB stage only, and a fourth
// stage does not fit beside the halves (196,608 + 69,632 > 232,448), so 128x256 runs 3 stages and
// writes C in two passes of 128 columns (common/epilogue.cuh EPILOGUE_PARTS). Of three 64-deep
// stages two load while one is computed: ~1.1 us of math ahead at the H100's ~7.5 TFLOP/s per SM
// (a 128x256x64 stage is 4.2 Mflop).
#pragma once

namespace streamk {
namespace sm90 {

constexpr int BM = 128;           // CTA tile rows (both tiles)
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
constexpr int SMEM_LIMIT = 227 * 1024;         // a block's dynamic shared memory on sm_90
// Registers per thread after reallocation (setmaxnreg): the producer needs few, the consumers hold
// BN/2 accumulators each plus the fixup's; 128 x 40 + 256 x 232 = 64,512 of the SM's 65,536.
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;
// Pipeline depth per tile: as many stages as fit beside the epilogue's staging (above).
constexpr int STAGES_128 = 4;
constexpr int STAGES_256 = 3;
// Clusters of two CTAs along m share each stage's B boxes (TMA multicast to both ranks).
constexpr int CLUSTER = 2;
constexpr unsigned short CLUSTER_MASK = (1u << CLUSTER) - 1u;

static_assert(BK * ELEM_BYTES == SWIZZLE_BYTES, "an A row of one stage is one swizzle row");
static_assert(WG_M == 64, "one m64 wgmma per consumer group");
static_assert(A_STAGE_BYTES % ATOM_BYTES == 0 && B_BOX_BYTES % ATOM_BYTES == 0, "boxes start on swizzle atoms");
static_assert(BK % MMA_K == 0, "whole wgmma k-steps per stage");
static_assert(PRODUCER_REGS * WG_THREADS + CONSUMER_REGS * CONSUMERS * WG_THREADS <= 65536, "the SM's registers");

// What depends on the tile's width: each consumer warp group computes 64 x BN with one
// wgmma.m64nBNk16 per k-step (BN/2 FP32 accumulators per thread), B arrives in BN/64 boxes, and
// the epilogue stages EPILOGUE_PARTS column slices of 128 (the FP32 staging of 128x128).
template <int BN_>
struct TileConfig {
  static constexpr int BN = BN_;
  static constexpr int B_BOXES = BN / BOX_INNER;
  static constexpr int B_STAGE_BYTES = B_BOXES * B_BOX_BYTES;
  static constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;  // TMA transaction bytes per stage
  static constexpr int DEFAULT_STAGES = BN == 128 ? STAGES_128 : STAGES_256;
  static constexpr int EPILOGUE_PARTS = BN / 128;
  static_assert(BN == 128 || BN == 256, "the sm90 tiles are 128x128 and 128x256 (wgmma n128 / n256)");
  static_assert(BN % BOX_INNER == 0, "whole B boxes");
  static_assert(B_BOXES % CLUSTER == 0, "a cluster's CTAs each multicast whole B boxes");
};

}  // namespace sm90
}  // namespace streamk
