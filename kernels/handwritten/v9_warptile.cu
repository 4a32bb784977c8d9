// v9 warptile — v8 plus warp tiling, a Z-ordered lane map, conflict-free 128-bit shared
// traffic, an L2-friendly block order and a vectorised alpha/beta epilogue.
//
// Adds over v8:
//  * Warp tiles. Each warp owns a WM x WN tile of C (32 x 64 by default) split into
//    4 x 4 micro-blocks: lane (lm, ln) of the LM x LN lane grid (4 x 8) holds the
//    (TM/4) x (TN/4) micro-blocks at rows lm*4 + i*LM*4, columns ln*4 + j*LN*4. Per k a
//    warp's LDS.128 of B touches LN consecutive 16-byte words (128 bytes: one wavefront,
//    v8 needed two) and of A LM words; each word is broadcast to the lanes sharing it.
//  * Z-ordered lanes (cg::zorder_lane): every 8-lane phase is a 2 x 4 lane patch.
//  * A staged transposed with conflict-free scalar stores: a warp's 32 float4 loads are
//    16 rows x 2 k-quads (each row's 32-byte sector read whole); pitch BM + 4 puts the
//    two k-quads on opposite half-banks. B goes to shared memory as STS.128, unpadded.
//  * Grouped block order (cg::grouped_tile<GROUP_M>) so resident blocks share A/B strips in L2.
//  * Epilogue: float4 read-modify-write of C (C read only when beta != 0).
// Geometry: BM x BN x BK from the registry's config, (BM/WM) x (BN/WN) warps, TM x TN outputs
//           per thread; two shared stages, one barrier per k-tile; FRAG_DB=1 also
//           double-buffers the fragments in registers (else ptxas schedules the LDS).
//           MIN_BLOCKS caps registers (2 -> 128 for 256 threads: 16 warps per SM).
// Edges:    blocks whose tile lies inside C with K % BK == 0 run an instantiation with no
//           checks at all (unguarded float4 loads and stores: the hot loop is 512 FFMA +
//           32 LDS.128 + ~37 other instructions per k-tile for 128x128x8). All other
//           blocks run the guarded one: element-wise bounds checks, zero-filled smem.
// Entries:  v9_warptile (align=4) and v9_warptile_a1 (any alignment: scalar global
//           accesses, same tile and summation order, so the same bits).
// Bottleneck: FFMA issue: per k a thread issues TM*TN FFMA for (TM+TN)/4 LDS.128; the rest
//           is per-k-tile overhead (global loads, stores, barrier, address math).
#include <cute_gemm/tiles.cuh>

// BM BN BK (block tile), WM WN (warp tile), TM TN (thread tile), GROUP_M (L2 block order),
// MIN_BLOCKS (blocks per SM the register budget must allow) and FRAG_DB (1: explicit register
// double buffering of the fragments), and THREADS: emitted by the registry's config
// (ladder_handwritten.py, _v9 and LadderConfig), the one place they are stated.
#define APAD 4

constexpr int LM = WM / TM, LN = WN / TN;              // lane grid of a warp
constexpr int WARPS = (BM / WM) * (BN / WN);
constexpr int A_F4 = BM * BK / 4, B_F4 = BK * BN / 4;   // float4 slots per k-tile
constexpr int NA = (A_F4 + THREADS - 1) / THREADS, NB = (B_F4 + THREADS - 1) / THREADS;
constexpr int RB = BM / 16, NQ = BN / 4;                // 16-row bands of A, float4s per B row
constexpr bool pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }
// Offsets of a thread's slot p from its slot 0 (see the slot map in gemm): compile-time
// constants because WARPS and RB (THREADS and NQ) are powers of two, so one divides the other.
constexpr int a_drow(int p) { return 16 * ((p * WARPS) % RB); }
constexpr int a_dk(int p) { return 8 * ((p * WARPS) / RB); }
constexpr int b_dk(int p) { return (p * THREADS) / NQ; }
constexpr int b_dn(int p) { return 4 * ((p * THREADS) % NQ); }
// Preconditions
static_assert(BM % WM == 0 && BN % WN == 0, "warps tile the block");            // BM / WM, BN / WN
static_assert(WM % TM == 0 && WN % TN == 0 && LM * LN == 32, "lanes tile the warp");
static_assert(TM % 4 == 0 && TN % 4 == 0, "4 x 4 micro-blocks: float4 fragments");
static_assert(THREADS == WARPS * 32 && THREADS <= 1024, "the registry's block: a warp per warp tile");
static_assert(BK % 8 == 0 && BM % 16 == 0, "A slot map: 16 rows x 2 k-quads per warp");
static_assert(pow2(WARPS) && pow2(RB) && pow2(NQ), "slot offsets are compile-time");
static_assert(BN % 4 == 0 && (4 * (BM + APAD)) % 32 == 16, "k-quads 2q, 2q+1 on opposite half-banks");
static_assert(2 * 4 * BK * (BM + APAD + BN) <= 48 * 1024, "static shared memory");

// EDGE: the block tile crosses M or N, so rows of A past M and columns of B past N are
// masked in every k-tile and C is stored element-wise. Interior blocks (the hot path)
// check nothing but the last k-tile when K % BK != 0. The kernel picks one of the two
// instantiations per block; they never coexist in registers.
template <bool VEC, bool EDGE, class Epi>
__device__ __forceinline__ void gemm(CG_GEMM_PARAMS, int m0, int n0,
                                     float (&sAT)[2][BK][BM + APAD], float (&sB)[2][BK][BN],
                                     Epi epi) {
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  int lm, ln;
  cg::zorder_lane<LM, LN>(lane, lm, ln);
  const int wm0 = (warp / (BN / WN)) * WM + lm * 4;   // this thread's first row / column
  const int wn0 = (warp % (BN / WN)) * WN + ln * 4;   // inside the block tile

  // Global -> shared slots, slot f = tid + p * THREADS. A: f = 32c + lane -> row
  // (c % RB)*16 + lane%16, k 4*(2*(c / RB) + lane/16): a warp reads 16 rows x 8 floats
  // (whole 32-byte sectors) and its transposed stores hit 32 distinct banks. B: f -> k
  // f / NQ, n 4*(f % NQ): a warp reads 512 contiguous bytes. Threads past A_F4 / B_F4 idle.
  const int ar = (warp % RB) * 16 + lane % 16, ak = 4 * (2 * (warp / RB) + lane / 16);
  const int bk = tid / NQ, bn = 4 * (tid % NQ);
  const float* gA = A + (m0 + ar) * sAm + ak;          // advanced by BK per k-tile
  const float* gB = B + bk * sBk + n0 + bn;            // advanced by BK rows per k-tile
  const int ktiles = cg::ceil_div(K, BK);
  auto a_on = [&](int p) { return A_F4 % THREADS == 0 || tid + p * THREADS < A_F4; };
  auto b_on = [&](int p) { return B_F4 % THREADS == 0 || tid + p * THREADS < B_F4; };

  float4 va[NA], vb[NB];                               // the k-tile in flight
  auto fetch = [&](int k0) {
    const bool kfull = !EDGE || k0 + BK <= K;          // interior blocks: K % BK == 0
#pragma unroll
    for (int p = 0; p < NA; ++p) {
      if (!a_on(p)) continue;
      const float* g = gA + a_drow(p) * sAm + a_dk(p);
      if (!EDGE && kfull) va[p] = cg::load4<VEC, false>(g, true, 4);
      else va[p] = cg::load4<VEC, true>(g, !EDGE || m0 + ar + a_drow(p) < M,
                                        kfull ? 4 : K - (k0 + ak + a_dk(p)));
    }
#pragma unroll
    for (int p = 0; p < NB; ++p) {
      if (!b_on(p)) continue;
      const float* g = gB + b_dk(p) * sBk + b_dn(p);
      if (!EDGE && kfull) vb[p] = cg::load4<VEC, false>(g, true, 4);
      else vb[p] = cg::load4<VEC, true>(g, kfull || k0 + bk + b_dk(p) < K,
                                        EDGE ? N - (n0 + bn + b_dn(p)) : 4);
    }
    gA += BK;
    gB += BK * sBk;
  };
  auto stash = [&](int s) {
#pragma unroll
    for (int p = 0; p < NA; ++p) {
      if (!a_on(p)) continue;
      float* d = &sAT[s][ak + a_dk(p)][ar + a_drow(p)];  // scalar stores: the transpose
      d[0 * (BM + APAD)] = va[p].x;
      d[1 * (BM + APAD)] = va[p].y;
      d[2 * (BM + APAD)] = va[p].z;
      d[3 * (BM + APAD)] = va[p].w;
    }
#pragma unroll
    for (int p = 0; p < NB; ++p)
      if (b_on(p)) *reinterpret_cast<float4*>(&sB[s][bk + b_dk(p)][bn + b_dn(p)]) = vb[p];
  };
  float a[2][TM], b[2][TN];                            // fragments: k and k+1
  auto frag = [&](int s, int k, int r) {
#pragma unroll
    for (int i = 0; i < TM / 4; ++i)
      *reinterpret_cast<float4*>(&a[r][4 * i]) =
          *reinterpret_cast<const float4*>(&sAT[s][k][wm0 + i * LM * 4]);
#pragma unroll
    for (int j = 0; j < TN / 4; ++j)
      *reinterpret_cast<float4*>(&b[r][4 * j]) =
          *reinterpret_cast<const float4*>(&sB[s][k][wn0 + j * LN * 4]);
  };

  float acc[TM][TN] = {};
  fetch(0);
  stash(0);
  __syncthreads();
  if (FRAG_DB) frag(0, 0, 0);
  int s = 0;
  for (int kt = 0; kt < ktiles; ++kt) {
    const bool more = kt + 1 < ktiles;                 // block-uniform
    // The next k-tile's global loads go out now and land during the FMAs below. The
    // scalar (_a1) path issues them after the first k-step instead: at 128 registers its
    // 8 separate loads would otherwise spill (ptxas 13.0, sm_90); one step still leaves
    // 7 x TM x TN FMAs to cover the latency.
    if (VEC && more) fetch((kt + 1) * BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (!FRAG_DB) {
        frag(s, k, k & 1);                             // ptxas hoists what registers allow
      } else if (k + 1 < BK) {
        frag(s, k + 1, (k + 1) & 1);                   // k+1 in flight during the FMAs of k
      } else if (more) {
        stash(s ^ 1);                                  // s^1 was last read before the previous barrier
        __syncthreads();
        frag(s ^ 1, 0, (k + 1) & 1);                   // BK is even: lands in a[0], b[0]
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[k & 1][i] * b[k & 1][j];
      if (!VEC && k == 0 && more) fetch((kt + 1) * BK);
    }
    if (!FRAG_DB && more) {
      stash(s ^ 1);                                    // as above: one barrier per k-tile
      __syncthreads();
    }
    s ^= 1;
  }

  // Epilogue: a warp's float4 stores for one (i, row, j) cover LM rows x LN*16 bytes.
#pragma unroll
  for (int i = 0; i < TM / 4; ++i)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int m = m0 + wm0 + i * LM * 4 + r;
      float* c = C + m * sCm + n0 + wn0;
#pragma unroll
      for (int j = 0; j < TN / 4; ++j) {
        const float* x = &acc[4 * i + r][4 * j];
        const float4 v = make_float4(x[0], x[1], x[2], x[3]);
        cg::store4_axpby<VEC, EDGE>(alpha, v, beta, c + j * LN * 4, m < M,
                                    N - (n0 + wn0 + j * LN * 4), epi, m, n0 + wn0 + j * LN * 4);
      }
    }
}

template <bool VEC, class Epi>
__device__ __forceinline__ void dispatch(CG_GEMM_PARAMS, Epi epi) {
  // Declared here, not in gemm<>: each instantiation would get its own copy.
  __shared__ __align__(16) float sAT[2][BK][BM + APAD];   // [stage][k][m]
  __shared__ __align__(16) float sB[2][BK][BN];           // [stage][k][n]
  int tile_m, tile_n;
  cg::grouped_tile<GROUP_M>(tile_m, tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  // Interior: the block tile lies inside C and no k-tile is partial. Everything else
  // (M/N edges, K % BK != 0) takes the guarded instantiation.
  if (m0 + BM <= M && n0 + BN <= N && K % BK == 0)     // block-uniform
    gemm<VEC, false>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, m0, n0, sAT, sB, epi);
  else
    gemm<VEC, true>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, m0, n0, sAT, sB, epi);
}

CG_ENTRY(v9_warptile, __launch_bounds__(THREADS, MIN_BLOCKS),
         (CG_GEMM_PARAMS, CG_BATCH_PARAMS, CG_EPI_PARAMS), {
  CG_BATCH_STEP();
  dispatch<true>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, CG_EPILOGUE{&epi});
})
CG_ENTRY(v9_warptile_a1, __launch_bounds__(THREADS, MIN_BLOCKS),
         (CG_GEMM_PARAMS, CG_BATCH_PARAMS, CG_EPI_PARAMS), {
  CG_BATCH_STEP();
  dispatch<false>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, CG_EPILOGUE{&epi});
})
