// One operand tile of a Hopper GEMM in shared memory (sm_90): the GMMA smem layout it is
// kept in, and the TMA boxes that fill one pipeline stage of it.
//
// An operand tile is (EXT, BLK_K, STAGES): EXT rows of A (BLK_M) or columns of B (BLK_N),
// BLK_K along k, one slice per stage. wgmma reads it through a shared-memory descriptor, so
// it must sit in one of GMMA's canonical layouts; we use the 128-byte swizzled ones, the
// layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B (16-byte chunk c of 128-byte row r lands
// at chunk c ^ (r % 8)): conflict-free for both writer and reader.
//
//  * k-major (the k index contiguous in memory, e.g. a row-major A): atom
//    GMMA::Layout_K_SW128_Atom<T> = 8 rows x 128 bytes, a row per m (or n), k along the row.
//    BLK_K * sizeof(T) == 128: one atom row is one k-tile row, and the atoms stack along EXT.
//    One TMA box (BLK_K, EXT) of the (K, EXT) tensor fills a stage.
//  * mn-major (16-bit only; e.g. a column-major A): atom GMMA::Layout_MN_SW128_Atom<T> =
//    64 m x 8 k, a 128-byte row per k. Atoms stack along k first (Step<_2,_1,_3>), so each
//    64-wide m (or n) slab of the stage is BLK_K rows of 128 bytes: one TMA box (64, BLK_K)
//    of the (EXT, K) tensor per slab, EXT / 64 boxes a stage. (Stacking along m first would
//    need a 3-D tensor map.)
//
// What the host encodes (records.TmaBoxes, in elements, contiguous extent first) must be
// kBox0 x kBox1: cute_gemm/registry/ladder_cute.py computes the same numbers.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute_gemm/sm90_tma.cuh>

namespace cg::sm90 {

// The element type wgmma multiplies: a tf32 GEMM reads float operands (the TMA unit rounds
// them, see launch.py encode_tensor_map) and GMMA names them tfloat32_t (same 32 bits).
template <class T> struct MmaElement { using type = T; };
template <> struct MmaElement<float> { using type = cute::tfloat32_t; };
template <class T> using mma_t = typename MmaElement<T>::type;

// Parts: the CTAs of a cluster that share this operand tile (the same rows of A or columns
// of B): each loads 1/Parts of every stage and multicasts it to all of them. 1: no sharing.
// RowBytes: the swizzle width, 128 (above) or 64 (Sw<2,4,3>: 64-byte rows, half the k-tile
// of a k-major operand, 32-element slabs of an mn-major one, TMA SWIZZLE_64B).
template <class T, cute::GMMA::Major Major, int Ext, int BlkK, int Stages, int Parts = 1,
          int RowBytes = 128>
struct OperandTile {
  using Elem = mma_t<T>;
  static constexpr bool kKMajor = Major == cute::GMMA::Major::K;
  static_assert(RowBytes == 128 || RowBytes == 64, "128- or 64-byte swizzle");
  static constexpr int kRowElems = RowBytes / int(sizeof(Elem));   // elements in a swizzle row
  static_assert(!kKMajor || BlkK == kRowElems, "k-major: a k-tile is one swizzle row");
  static_assert(kKMajor || sizeof(Elem) == 2, "mn-major operands: 16-bit types only (GMMA)");
  static_assert(kKMajor || Ext % kRowElems == 0, "mn-major: whole 64-element slabs");
  static_assert(BlkK % 8 == 0 && Ext % 8 == 0, "whole swizzle atoms");
  static_assert(Ext <= 256 && BlkK <= 256, "a TMA box extent is at most 256");

  using Atom = cute::conditional_t<RowBytes == 128,
      cute::conditional_t<kKMajor, cute::GMMA::Layout_K_SW128_Atom<Elem>,
                                   cute::GMMA::Layout_MN_SW128_Atom<Elem>>,
      cute::conditional_t<kKMajor, cute::GMMA::Layout_K_SW64_Atom<Elem>,
                                   cute::GMMA::Layout_MN_SW64_Atom<Elem>>>;
  using Order = cute::conditional_t<kKMajor, cute::Step<cute::_1, cute::_2, cute::_3>,
                                            cute::Step<cute::_2, cute::_1, cute::_3>>;
  using Layout = decltype(cute::tile_to_shape(
      Atom{}, cute::make_shape(cute::Int<Ext>{}, cute::Int<BlkK>{}, cute::Int<Stages>{}),
      Order{}));                                                     // (Ext,BlkK,Stages)

  static constexpr int kStageElems = Ext * BlkK;
  static constexpr uint32_t kStageBytes = kStageElems * sizeof(Elem);
  static_assert(kStageBytes % (8 * RowBytes) == 0, "stages keep the swizzle atoms' alignment");
  // the box one TMA load brings in (contiguous extent, other extent), and loads per stage
  // (of one CTA: a k-major operand shared by Parts CTAs comes in Parts boxes of Ext/Parts rows)
  static constexpr int kBox0 = kKMajor ? BlkK : kRowElems;
  static constexpr int kBox1 = kKMajor ? Ext / Parts : BlkK;
  static constexpr int kBoxes = kKMajor ? 1 : Ext / kRowElems / Parts;
  static_assert(kKMajor ? (Ext / Parts) % 8 == 0 : (Ext / kRowElems) % Parts == 0,
                "whole swizzle atoms (k-major) or slabs (mn-major) per part");

  // Part `part` of k-tile `k_tile` of the slab starting at row/column `mn0` into `stage` of
  // every CTA in `cta_mask`, completing on their barriers at `bar`'s offset (Parts > 1).
  // `l`: a batch's problem (cg::sm90::Problem, a 4-D map), or NoProblem (a 2-D map).
  template <class P = NoProblem>
  __device__ static void load_part(const cute::TmaDescriptor* map, uint64_t* bar, Elem* stage,
                                   int mn0, int k_tile, int part, uint16_t cta_mask, P l = {}) {
    if constexpr (kKMajor) {
      constexpr int rows = Ext / Parts;   // k-major rows are contiguous 128-byte lines
      tma_load_2d_multicast(map, bar, stage + part * rows * BlkK, cta_mask, k_tile * BlkK,
                            mn0 + part * rows, l);
    } else {
      CUTE_UNROLL
      for (int i = 0; i < kBoxes; ++i) {
        const int s = part * kBoxes + i;
        tma_load_2d_multicast(map, bar, stage + s * kRowElems * BlkK, cta_mask,
                              mn0 + s * kRowElems, k_tile * BlkK, l);
      }
    }
  }

  // Issue the loads of k-tile `k_tile` of the slab starting at row/column `mn0` into
  // `stage` (the stage's first element), completing on `bar`. One thread calls this.
  template <class P = NoProblem>
  __device__ static void load(const cute::TmaDescriptor* map, uint64_t* bar, Elem* stage,
                              int mn0, int k_tile, P l = {}) {
    if constexpr (kKMajor) {
      tma_load_2d(map, bar, stage, k_tile * BlkK, mn0, l);
    } else {
      CUTE_UNROLL
      for (int s = 0; s < kBoxes; ++s)
        tma_load_2d(map, bar, stage + s * kRowElems * BlkK, mn0 + s * kRowElems, k_tile * BlkK,
                    l);
    }
  }
};

}  // namespace cg::sm90
