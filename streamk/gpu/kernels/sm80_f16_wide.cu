// sm80_f16_wide.cu: the sm80_f16.cu kernels on a 128x256x32 tile for large GEMMs: 8 warps of
// 64x64 (2 x 4), the same k-64 stages, 3 deep: 3 x (128x72 + 64x256) x 2 B = 153,600 B of shared
// memory, one CTA per SM. An SM runs the same 8 warps of 64x64 as with two 128x128 CTAs, but per
// 64-deep stage copies 48 KB of A and B instead of 64 KB: a quarter fewer global->shared bytes and
// copy instructions per mma. Large GEMMs run the H100 into its power cap, where that pays: 8192^3
// 446-456 TFLOP/s against 385-399 on 128x128 tiles, each alone after a pause (benchmarks/LOG.md v15;
// auto takes it for GEMMs of a wave or more of these tiles, streamk.gpu.api.choose_tile).
// 16-, 8- and 4-byte copies (2-byte-aligned rows are packed). Entry points:
// streamk_sm80_{f16,bf16}_t128x256[_w8|_w4], streamk_reduce_f32_t128x256, streamk_prescale_f32_t128x256.
#include "sm80_half.cuh"

using Tile128x256 = streamk::sm80::Tile<128, 256>;

STREAMK_SM80_HALF_TILE(_t128x256, Tile128x256, 1)
