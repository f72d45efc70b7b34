// sm80_f16_w8.cu: the sm80_f16.cu kernels (same tile, warps, stages, shared memory, table and
// fixup) with 8-byte cp.async copies, for operands whose rows are 8-byte but not 16-byte
// aligned (fp16 row-major A with k % 4 == 0, B with n % 4 == 0): read in place instead of packed.
// The host picks the narrowest width either operand needs (an operand it packs counts as 16).
// Own module, so only the GEMMs that need it compile it. Entry points: streamk_sm80_f16_w8,
// streamk_sm80_bf16_w8.
#include "sm80_half.cuh"

STREAMK_SM80_HALF_ENTRIES(_w8, 8, streamk::sm80::Tile128, streamk::sm80::THREADS_128)
