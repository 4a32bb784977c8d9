// An m-major tf32 operand of a Hopper GEMM, staged by TMA and read into the register fragments
// of RS wgmma (sm_90a).
//
// TF32 wgmma reads only k-major operands through smem descriptors, but its A operand may come
// from registers, which the consumers fill with their own loads from any smem layout. So an
// m-major A (column-major; or, computing C^T = B^T A^T, a row-major B) is taken as it is: TMA
// brings each 32 (m) x 32 (k) block of the stage in as 32 lines of 128 bytes, one line per k,
// with CU_TENSOR_MAP_SWIZZLE_128B (16-byte chunk c of line r at chunk c ^ (r % 8)), and each
// consumer thread loads its fragment with 64-bit LDS.
//
// The fragment (CuTe ALayout_64x8, per 64 x 8 wgmma atom): lane l of warp w holds rows
// 16w + l/4 and 16w + l/4 + 8 at k = l%4 and l%4 + 4. Two rows at one k can come in one 64-bit
// load only if they are neighbours in memory, so the accumulator rows are not the operand's
// rows in order: fragment row f holds operand row RowMap(f), and the epilogue stores them there
// (sm90_epilogue_rows.cuh). RowMap sends f = q + 8h + 16w + 64g (q = l/4, h the half, w the
// warp, g the warpgroup) to 2q0 + 16q1 + 4q2 + h + 8w0 + 32w1 + 64g (qi, wi the bits of q, w):
//  * rows f and f + 8 (h = 0, 1) are neighbours: one LDS.64 gives a thread both;
//  * each half warp reads 4 k-lines x chunks {c, c ^ 4} (q1 picks), and the swizzle moves
//    line r's chunks by r % 8 = 0..3 (or 4..7): 8 distinct chunks, all 32 banks once, so a
//    warp's LDS.64 takes the minimum two wavefronts (an unpermuted fragment: 2-way conflicts).
// A k-tile costs each thread 8 LDS.64 (4 wgmma atoms of k = 8): the bytes an SS wgmma would
// read from smem itself.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute_gemm/sm90_tma.cuh>

namespace cg::sm90 {

// Ext: the rows of the operand tile (64 per consumer warpgroup); BlkK: the k of a stage (k-lines
// of 128 bytes, 32 rows each: the swizzle needs none of the k-major operand's row width);
// Stages: the ring's depth.
template <int Ext, int BlkK, int Stages>
struct RegisterOperand {
  using Elem = cute::tfloat32_t;
  static constexpr int kLine = 32;                         // rows in a 128-byte line (a box)
  static_assert(BlkK % 8 == 0, "whole wgmma atoms of k = 8 (and swizzle atoms of 8 lines)");
  static_assert(Ext % 64 == 0, "64 rows per consumer warpgroup");
  static constexpr int kBoxes = Ext / kLine;               // TMA boxes (kLine, BlkK) per stage
  static constexpr int kBoxElems = kLine * BlkK;
  static constexpr int kStageElems = Ext * BlkK;
  static constexpr uint32_t kStageBytes = kStageElems * sizeof(float);
  static constexpr int kBox0 = kLine, kBox1 = BlkK;        // ladder_cute.tma_boxes, contiguous first

  // The stage as CuTe sees it, (Ext,BlkK,Stages): GMMA's m-major 128-byte swizzle atom (32 rows
  // x 8 k), stacked along k first (a box is 32 rows x all of BlkK), then along the rows.
  using Atom = cute::GMMA::Layout_MN_SW128_Atom<Elem>;
  using Layout = decltype(cute::tile_to_shape(
      Atom{},
      cute::make_shape(cute::Int<Ext>{}, cute::Int<BlkK>{}, cute::Int<Stages>{}),
      cute::Step<cute::_2, cute::_1, cute::_3>{}));

  // fragment row f -> operand row (above): shape (q, h, w, g) with q and w split into bits
  using RowMap = cute::Layout<
      cute::Shape<cute::Shape<cute::_2, cute::_2, cute::_2>, cute::_2,
                  cute::Shape<cute::_2, cute::_2>, cute::Int<Ext / 64>>,
      cute::Stride<cute::Stride<cute::_2, cute::_16, cute::_4>, cute::_1,
                   cute::Stride<cute::_8, cute::_32>, cute::_64>>;
  static_assert(cute::size(RowMap{}) == Ext, "a permutation of the tile's rows");

  // Issue the TMA loads of k-tile `k_tile` of rows mn0 .. mn0 + Ext - 1 into `stage`, completing
  // on `bar`: one box per 32 rows. One thread calls this.
  // (`l`: a batch's problem in a 4-D map, as OperandTile::load)
  template <class P = NoProblem>
  __device__ static void load(const cute::TmaDescriptor* map, uint64_t* bar, Elem* stage,
                              int mn0, int k_tile, P l = {}) {
    CUTE_UNROLL
    for (int s = 0; s < kBoxes; ++s)
      tma_load_2d(map, bar, stage + s * kBoxElems, mn0 + s * kLine, k_tile * BlkK, l);
  }

  // One consumer thread's view of every stage: the byte offsets of its loads for the k-lines
  // l%4 + 8a (j = 0) and l%4 + 4 + 8a (j = 1) of atom a (both move by 1024a bytes with a).
  struct Reader {
    uint32_t off[2];
    __device__ explicit Reader(int thread) {              // 0 .. 128 * consumers - 1
      const int lane = thread % 32, w = (thread / 32) % 4, g = thread / 128;
      const int q = lane / 4, kq = lane % 4;
      const int box = 2 * g + (w >> 1);                     // rows 64g + 32w1 .. + 31
      const int chunk = 2 * (w & 1) + 4 * ((q >> 1) & 1) + (q >> 2);   // RowMap's row / 4
      CUTE_UNROLL
      for (int j = 0; j < 2; ++j) {
        const int line = kq + 4 * j;                        // the k-line within 8 (its swizzle)
        off[j] = 4 * (box * kBoxElems + line * kLine + 4 * (chunk ^ line) + 2 * (q & 1));
      }
    }
    // The fragment (MMA,MMA_M,MMA_K) = (4,1,BlkK/8) of one stage: values (f, k), (f + 8, k),
    // (f, k + 4), (f + 8, k + 4) of each atom, as two 64-bit loads. Volatile with a memory
    // clobber: they stay after the wait on the stage's barrier.
    template <class Frag>
    __device__ __forceinline__ void load(const Elem* stage, Frag& frag) const {
      using namespace cute;
      static_assert(decltype(size(frag))::value == 4 * (BlkK / 8), "4 values per k = 8 atom");
      const uint32_t base = smem_addr(stage);
      CUTE_UNROLL
      for (int a = 0; a < BlkK / 8; ++a) {
        CUTE_UNROLL
        for (int j = 0; j < 2; ++j) {
          uint32_t lo, hi;
          asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];"
                       : "=r"(lo), "=r"(hi) : "r"(base + off[j] + 1024 * a) : "memory");
          frag(2 * j, 0, a) = Elem::bitcast(lo);
          frag(2 * j + 1, 0, a) = Elem::bitcast(hi);
        }
      }
    }
  };
};

}  // namespace cg::sm90
