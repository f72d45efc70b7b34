// sm80_f16_w4.cu: the sm80_f16.cu kernels (same tile, warps, stages, shared memory, table and
// fixup) with 4-byte cp.async copies, for operands whose rows are 4-byte but not 8-byte
// aligned (fp16 row-major A with k % 2 == 0, B with n % 2 == 0): read in place instead of packed.
// The host picks the narrowest width either operand needs (an operand it packs counts as 16),
// and these 4-byte ones only where they save all packing on a small problem (operands.py
// copy_widths: 458 instructions per 64-k stage per warp against 327). Own module, so only the GEMMs that need it compile it. Entry points: streamk_sm80_f16_w4,
// streamk_sm80_bf16_w4.
#include "sm80_half.cuh"

STREAMK_SM80_HALF_ENTRIES(_w4, 4, streamk::sm80::Tile128, streamk::sm80::THREADS_128)
