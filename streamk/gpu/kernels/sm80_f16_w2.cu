// sm80_f16_w2.cu: the sm80_f16.cu kernels (same tile, warps, stages, shared memory, table and
// fixup) for operands whose rows are only 2-byte aligned (row-major FP16/BF16 with an odd k or n,
// the common case in a random corpus): 16-byte cp.async copies from the 16-byte block holding each
// row segment's start, then every row is moved back by the 0-7 elements it landed late, in shared
// memory (pipeline.cuh TileLoader::shift). Reads them in place instead of a packing pass, for
// narrow="always" (operands.py copy_widths: packing is faster on the corpus). Own module, so only the GEMMs that need it
// compile it. Entry points: streamk_sm80_f16_w2, streamk_sm80_bf16_w2.
#include "sm80_half.cuh"

STREAMK_SM80_HALF_ENTRIES(_w2, 2, streamk::sm80::Tile128, streamk::sm80::THREADS_128)
