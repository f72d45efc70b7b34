// sm80_f16_t64.cu: the sm80_f16.cu kernels on a 64x64x32 tile (4 warps of 32x32, the same k-64
// stages, 3 deep: 3 x (64x72 + 64x64) x 2 B = 52,224 B of shared memory, up to 3 CTAs per SM),
// for GEMMs of few 128x128 tiles: a CTA writes 16 KB of C instead of 64 KB (one SM stores ~25
// GB/s, so a 128x128 tile's epilogue alone took ~2.5 us on an H100) and four times as many CTAs
// share the work. The host picks it (streamk.gpu.api.choose_tile) or a Schedule of 64x64x32
// tiles asks for it. Same table, fixup policies and operand rules as sm80_f16.cu; 16-, 8- and
// 4-byte copies, and shifted copies for rows only 2-byte aligned (_t64_w2: no pack pass, for
// narrow="always"). Entry points: streamk_sm80_f16_t64, streamk_sm80_bf16_t64 (and
// _t64_w8, _t64_w4, _t64_w2), streamk_reduce_f32_t64, streamk_prescale_f32_t64.
#include "sm80_half.cuh"

using Tile64 = streamk::sm80::Tile64;
// blocks per SM __launch_bounds__ asks for: 3 gives 152 registers and no spills; 4 (128 registers,
// 100 B of spills outside the mainloop) ran auto 3.3% slower on the 131 shapes it takes 64x64 (LOG.md v13)
#ifndef STREAMK_T64_MIN_BLOCKS
#define STREAMK_T64_MIN_BLOCKS 3
#endif

STREAMK_SM80_HALF_ENTRIES(_t64, 16, Tile64, Tile64::THREADS, STREAMK_T64_MIN_BLOCKS)
STREAMK_SM80_HALF_ENTRIES(_t64_w8, 8, Tile64, Tile64::THREADS, STREAMK_T64_MIN_BLOCKS)
STREAMK_SM80_HALF_ENTRIES(_t64_w4, 4, Tile64, Tile64::THREADS, STREAMK_T64_MIN_BLOCKS)
STREAMK_SM80_HALF_ENTRIES(_t64_w2, 2, Tile64, Tile64::THREADS, STREAMK_T64_MIN_BLOCKS)

STREAMK_SM80_HALF_PASSES(_t64, Tile64)
