// sm80_f16_rect.cu: the sm80_f16.cu kernels on 128x64x32 and 64x128x32 tiles (4 warps of 64x32 or
// 32x64, the same k-64 stages, 3 deep, 2 CTAs per SM), between the paper's 128x128 and the small
// 64x64 tile (sm80_f16_t64.cu). 16-, 8- and 4-byte copies (2-byte-aligned rows are packed). Entry
// points: streamk_sm80_{f16,bf16}_t128x64[_w8|_w4], streamk_sm80_{f16,bf16}_t64x128[_w8|_w4], streamk_reduce_f32_t128x64,
// streamk_reduce_f32_t64x128, streamk_prescale_f32_t128x64, streamk_prescale_f32_t64x128.
#include "sm80_half.cuh"

using Tile128x64 = streamk::sm80::Tile<128, 64>;
using Tile64x128 = streamk::sm80::Tile<64, 128>;

STREAMK_SM80_HALF_TILE(_t128x64, Tile128x64, 2)
STREAMK_SM80_HALF_TILE(_t64x128, Tile64x128, 2)
