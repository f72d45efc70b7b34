// sm80_f16.cu: C = alpha*A@B + beta*C, A and B FP16 or BF16, FP32 accumulate and FP32 C,
// executing any Schedule table (see fixup.cuh for the table and the fixup policies).
//
// Tile 128x128x32 (one MAC iteration), 128 threads = 4 warps as 2 (m) x 2 (n), 64x64 per warp,
// mma.sync.m16n8k16 (4x8 per warp per k16), ldmatrix (.trans for B), 3-stage cp.async pipeline of
// two MAC iterations (k 64) per stage (sm80_config.cuh; -DSTREAMK_SM80_STAGE_ITERS=1 builds the
// 4-stage k-32 pipeline, -DSTREAMK_SM80_WARPS_N=4 an 8-warp 64x32 variant).
// Shared memory: 3 x (128x72 + 64x128) x 2 B = 104,448 B dynamic (A rows padded by 16 B, B rows
// XOR-swizzled in 16-byte chunks, so ldmatrix reads and cp.async writes are conflict-free; the
// narrow-copy kernels keep B rows padded: 3 x (128x72 + 64x136) x 2 B = 107,520 B; 2 CTAs per
// SM). Arch: sm_80 and later (runs on sm_90a).
// Operands: A m x k row-major (lda), B k x n row-major (ldb), 16-byte aligned rows; elements
// past k in A's rows and past n in B's rows up to the next 8 must be zero (the host reads rows
// that are 8- or 4-byte aligned with sm80_f16_w8.cu / _w4.cu and packs the others into
// zero-padded copies). Out-of-range rows and k are zero-filled by
// cp.async (src-size 0); C stores are predicated per element with any strides.
// Entry points: streamk_sm80_f16, streamk_sm80_bf16, streamk_reduce_f32, streamk_prescale_f32.
#include "sm80_half.cuh"

using streamk::GemmParams;

// The main entry points (16-byte copies) and their dynamic shared memory (cuModuleGetGlobal).
STREAMK_SM80_HALF_ENTRIES(, 16, streamk::sm80::Tile128, streamk::sm80::THREADS_128)

// The separate-reduce pass (fixup.cuh reduce_slice): grid (split tiles, slices), no shared memory.
extern "C" __constant__ int streamk_reduce_f32_smem = 0;
extern "C" __global__ void __launch_bounds__(streamk::sm80::THREADS_128) streamk_reduce_f32(const GemmParams p) {
  streamk::reduce_slice<streamk::Sm80Half<false>>(p);
}

extern "C" __global__ void __launch_bounds__(streamk::sm80::THREADS_128) streamk_prescale_f32(const GemmParams p) {
  streamk::prescale_items<streamk::Sm80Half<false>>(p);
}
