// config.cuh (sm90): constants of the TMA + wgmma mainloop (tma_wgmma.cuh), one tile for now.
//
// Why 128x128x64 first, not 128x256x64: the epilogue stages a tile of FP32 accumulators in
// shared memory of its own (common/epilogue.cuh, BM x (BN + 8) x 4 B), so the producer can load the
// next unit's operands while the consumers run the fixup and write C. On 128x128 that is 68 KB
// beside four 32 KB stages (196 KB of the 227 KB a block may have); on 128x256 it would be 132 KB
// beside three 48 KB stages, 276 KB: no room. 128x256 needs an epilogue that stages half a tile at
// a time (or TMA stores); it is the next step (issue 17).
#pragma once

namespace streamk {
namespace sm90 {

constexpr int BM = 128;           // CTA tile rows
constexpr int BN = 128;           // CTA tile columns
constexpr int BK = 64;            // k per MAC iteration: one 128-byte swizzled row of A per tile row
constexpr int STAGES = 4;         // TMA pipeline depth: as many 32 KB stages as fit beside the staging
constexpr int WG_THREADS = 128;   // a warp group
constexpr int CONSUMERS = 2;      // consumer warp groups, 64 tile rows each
constexpr int THREADS = (1 + CONSUMERS) * WG_THREADS;  // producer + consumers
constexpr int WG_M = BM / CONSUMERS;                   // rows per consumer warp group: one wgmma m64
constexpr int MMA_K = 16;                              // wgmma k per instruction
constexpr int ELEM_BYTES = 2;
constexpr int SWIZZLE_BYTES = 128;  // TMA / wgmma 128-byte swizzle: a box's inner side is 128 bytes
constexpr int BOX_INNER = SWIZZLE_BYTES / ELEM_BYTES;  // 64 elements
constexpr int A_STAGE_BYTES = BM * BK * ELEM_BYTES;                 // one box: 128 rows x 64 k
constexpr int B_BOXES = BN / BOX_INNER;                             // B boxes of 64 k rows x 64 n
constexpr int B_BOX_BYTES = BK * BOX_INNER * ELEM_BYTES;
constexpr int B_STAGE_BYTES = B_BOXES * B_BOX_BYTES;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;          // TMA transaction bytes per stage
constexpr int ATOM_BYTES = 8 * SWIZZLE_BYTES;  // 8 rows of 128 B: the swizzle pattern's period
// Registers per thread after reallocation (setmaxnreg): the producer needs few, the consumers hold
// 64 accumulators each plus the fixup's; 128 x 40 + 256 x 232 = 64,512 of the SM's 65,536.
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;

static_assert(BK * ELEM_BYTES == SWIZZLE_BYTES, "an A row of one stage is one swizzle row");
static_assert(BN % BOX_INNER == 0 && WG_M == 64, "whole B boxes; one m64 wgmma per consumer group");
static_assert(A_STAGE_BYTES % ATOM_BYTES == 0 && B_BOX_BYTES % ATOM_BYTES == 0, "boxes start on swizzle atoms");
static_assert(BK % MMA_K == 0, "whole wgmma k-steps per stage");
static_assert(PRODUCER_REGS * WG_THREADS + CONSUMER_REGS * CONSUMERS * WG_THREADS <= 65536, "the SM's registers");

}  // namespace sm90
}  // namespace streamk
