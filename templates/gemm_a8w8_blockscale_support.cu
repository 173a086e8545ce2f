// gemm_a8w8_blockscale_support.cu: inputs and reference of the a8w8 blockscale GEMM, on the GPU.
//
// Inputs are random fp32 data quantized to e4m3 the way an inference stack does it: activations A
// per row and 128-wide K group, weights B per 128 x 128 block, each group's scale = amax / 448.
// Activations get a per-row magnitude between 1/4 and 4 (rows of a real batch differ); weights
// have a standard deviation near 0.02 with a per-block spread of 2x. Nothing is ever zero.
#include "at_support.cuh"

// One warp per (row, K group): 32 lanes x 4 values.
extern "C" __global__ void at_gen_activations(unsigned char *q, float *scale, int rows, int K, at_u64 seed) {
  const int groups = K / 128;
  const long warp = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= (long)rows * groups) return;
  const int row = (int)(warp / groups), grp = (int)(warp % groups);
  const float row_mag = exp2f(4.0f * at_uniform(seed ^ 0xA11CEull, (at_u64)row) - 2.0f);
  float v[4], amax = 0.f;
  for (int i = 0; i < 4; i++) {
    const long k = (long)grp * 128 + lane * 4 + i;
    v[i] = at_normal(seed, (at_u64)row * (at_u64)K + (at_u64)k) * row_mag;
    amax = fmaxf(amax, fabsf(v[i]));
  }
  amax = at_warp_max(amax);
  const float s = amax > 0.f ? amax / 448.0f : 1.0f, inv = 1.0f / s;
  *(at_u32 *)(q + (long)row * K + (long)grp * 128 + lane * 4) = at_pack_e4m3x4(v[0] * inv, v[1] * inv, v[2] * inv, v[3] * inv);
  if (lane == 0) scale[(long)row * groups + grp] = s;
}

// One 256-thread block per 128 x 128 weight block; rows past N do not exist (no values, no effect
// on the scale).
extern "C" __global__ void __launch_bounds__(256) at_gen_weights(unsigned char *q, float *scale, int N, int K, at_u64 seed) {
  const int groups = K / 128;
  const int nb = blockIdx.x / groups, kb = blockIdx.x % groups;
  const float mag = 0.02f * exp2f(2.0f * at_uniform(seed ^ 0xB10Cull, (at_u64)blockIdx.x) - 1.0f);
  __shared__ float warp_max[8];
  __shared__ float block_scale;
  // Thread t covers row (t / 2) of the block and 64 consecutive k.
  const int r = threadIdx.x >> 1, k0 = (threadIdx.x & 1) * 64;
  const int n = nb * 128 + r;
  float amax = 0.f;
  if (n < N)
    for (int i = 0; i < 64; i++) {
      const long k = (long)kb * 128 + k0 + i;
      amax = fmaxf(amax, fabsf(at_normal(seed, (at_u64)n * (at_u64)K + (at_u64)k) * mag));
    }
  amax = at_warp_max(amax);
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = 0.f;
    for (int w = 0; w < 8; w++) m = fmaxf(m, warp_max[w]);
    block_scale = m > 0.f ? m / 448.0f : 1.0f;
    scale[(long)nb * groups + kb] = block_scale;
  }
  __syncthreads();
  if (n >= N) return;
  const float inv = 1.0f / block_scale;
  for (int i = 0; i < 64; i += 4) {
    float v[4];
    for (int j = 0; j < 4; j++) {
      const long k = (long)kb * 128 + k0 + i + j;
      v[j] = at_normal(seed, (at_u64)n * (at_u64)K + (at_u64)k) * mag * inv;
    }
    *(at_u32 *)(q + (long)n * K + (long)kb * 128 + k0 + i) = at_pack_e4m3x4(v[0], v[1], v[2], v[3]);
  }
}

// out[r][k] = e4m3(q[r][k]) * scale[r / row_block][k / 128]: A with row_block 1, B with 128.
extern "C" __global__ void at_dequantize(const unsigned char *q, const float *scale, float *out, int rows, int K,
                                         int row_block) {
  const long total = (long)rows * K, stride = (long)gridDim.x * blockDim.x;
  const int groups = K / 128;
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const long r = i / K, k = i % K;
    out[i] = at_e4m3_to_float(q[i]) * scale[(r / row_block) * groups + k / 128];
  }
}

// out[c][r] = in[r][c]  (the activation scales, token-major for cuBLASLt)
extern "C" __global__ void at_transpose_f32(const float *in, float *out, int rows, int cols) {
  const long total = (long)rows * cols, stride = (long)gridDim.x * blockDim.x;
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const long r = i / cols, c = i % cols;
    out[c * rows + r] = in[i];
  }
}

// Rows of `cols` floats copied into rows of `padded` floats, the rest zero (the weight scales,
// with the row stride cuBLASLt wants).
extern "C" __global__ void at_pad_rows_f32(const float *in, float *out, int rows, int cols, int padded) {
  const long total = (long)rows * padded, stride = (long)gridDim.x * blockDim.x;
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const long r = i / padded, c = i % padded;
    out[i] = c < cols ? in[r * cols + c] : 0.f;
  }
}
