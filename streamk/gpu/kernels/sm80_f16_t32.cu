// sm80_f16_t32.cu: the sm80_f16.cu kernels on 32x64x32 and 32x32x32 tiles (4 warps of 16x32 or
// 16x16, the same k-64 stages, 3 deep: 38,400 B or 29,184 B of shared memory; 32-wide B rows are
// padded, not swizzled), for the smallest GEMMs:
// there a lone CTA's time is its start (~0.6 us), a latency-bound mainloop and an epilogue whose
// stores leave one SM at ~20 GB/s (a 64x64 FP32 tile ~0.9 us, H100 trace, LOG.md v14), so half the
// tile per CTA and twice the CTAs on otherwise idle SMs. 16-, 8- and 4-byte copies (2-byte-aligned
// rows are packed). Entry points: streamk_sm80_{f16,bf16}_t32x64[_w8|_w4], the same for t32x32,
// streamk_reduce_f32_t32x64, streamk_prescale_f32_t32x64, streamk_reduce_f32_t32x32,
// streamk_prescale_f32_t32x32.
#include "sm80_half.cuh"

using Tile32x64 = streamk::sm80::Tile<32, 64>;
using Tile32x32 = streamk::sm80::Tile<32, 32>;

STREAMK_SM80_HALF_TILE(_t32x64, Tile32x64, 4)
STREAMK_SM80_HALF_TILE(_t32x32, Tile32x32, 4)
