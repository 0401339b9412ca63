// Kernels of `gpu-doctor smoke`, compiled to PTX by scripts/gen-ptx.sh and shipped as text in
// the binary, so one build runs on every GPU the driver supports (the driver JIT-compiles PTX).
// Plain CUDA C with no intrinsics newer than sm_50, so the PTX can declare an old ISA version.

extern "C" {

// C[M,N] = A[M,K] * B[K,N], row-major fp32. Requires M % 128 == 0, N % 128 == 0, K % 8 == 0
// (the caller picks sizes). 256 threads compute a 128x128 tile, 8x8 outputs each, split in
// four 4x4 blocks 64 apart so shared-memory float4 reads are conflict-free; the next K-slice
// is fetched into registers while the current one is multiplied (double-buffered shared memory).
__global__ void __launch_bounds__(256) sgemm_128x128(int M, int N, int K, const float* __restrict__ A,
                                                     const float* __restrict__ B, float* __restrict__ C) {
    __shared__ __align__(16) float As[2][8][128];
    __shared__ __align__(16) float Bs[2][8][128];
    const int tid = threadIdx.x;
    const int tx = tid & 15;
    const int ty = tid >> 4;
    const float* Ab = A + (size_t)blockIdx.y * 128 * K;
    const float* Bb = B + (size_t)blockIdx.x * 128;
    const int a_row = tid >> 1, a_col = (tid & 1) << 2;
    const int b_row = tid >> 5, b_col = (tid & 31) << 2;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;

    float4 ra = *reinterpret_cast<const float4*>(Ab + (size_t)a_row * K + a_col);
    float4 rb = *reinterpret_cast<const float4*>(Bb + (size_t)b_row * N + b_col);
    As[0][a_col + 0][a_row] = ra.x;
    As[0][a_col + 1][a_row] = ra.y;
    As[0][a_col + 2][a_row] = ra.z;
    As[0][a_col + 3][a_row] = ra.w;
    *reinterpret_cast<float4*>(&Bs[0][b_row][b_col]) = rb;
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += 8) {
        const bool more = k0 + 8 < K;
        if (more) {
            ra = *reinterpret_cast<const float4*>(Ab + (size_t)a_row * K + k0 + 8 + a_col);
            rb = *reinterpret_cast<const float4*>(Bb + (size_t)(k0 + 8 + b_row) * N + b_col);
        }
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float a[8], b[8];
            float4 t;
            t = *reinterpret_cast<const float4*>(&As[buf][k][ty * 4]);
            a[0] = t.x; a[1] = t.y; a[2] = t.z; a[3] = t.w;
            t = *reinterpret_cast<const float4*>(&As[buf][k][ty * 4 + 64]);
            a[4] = t.x; a[5] = t.y; a[6] = t.z; a[7] = t.w;
            t = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * 4]);
            b[0] = t.x; b[1] = t.y; b[2] = t.z; b[3] = t.w;
            t = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * 4 + 64]);
            b[4] = t.x; b[5] = t.y; b[6] = t.z; b[7] = t.w;
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) {
            const int nb = buf ^ 1;
            As[nb][a_col + 0][a_row] = ra.x;
            As[nb][a_col + 1][a_row] = ra.y;
            As[nb][a_col + 2][a_row] = ra.z;
            As[nb][a_col + 3][a_row] = ra.w;
            *reinterpret_cast<float4*>(&Bs[nb][b_row][b_col]) = rb;
            __syncthreads();
            buf = nb;
        }
    }

    float* Cb = C + (size_t)blockIdx.y * 128 * N + (size_t)blockIdx.x * 128;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int row = (i < 4) ? (ty * 4 + i) : (64 + ty * 4 + i - 4);
        float4 lo = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        float4 hi = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
        *reinterpret_cast<float4*>(Cb + (size_t)row * N + tx * 4) = lo;
        *reinterpret_cast<float4*>(Cb + (size_t)row * N + 64 + tx * 4) = hi;
    }
}

// A pattern that differs for every word and every pass, so stuck bits, address-line faults and
// stale data all show: a 32-bit integer hash of the word index mixed with a seed.
__device__ __forceinline__ unsigned int pattern(unsigned long long i, unsigned int seed) {
    unsigned int x = (unsigned int)i ^ (unsigned int)(i >> 32) * 0x9E3779B9u ^ seed;
    x ^= x >> 16; x *= 0x7FEB352Du;
    x ^= x >> 15; x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x;
}

// Fills `n` words with the pattern (grid-stride loop).
__global__ void fill_pattern(unsigned int* p, unsigned long long n, unsigned int seed) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = pattern(i, seed);
}

// Counts words that do not hold the pattern; `errors` must start at zero.
__global__ void check_pattern(const unsigned int* p, unsigned long long n, unsigned int seed,
                              unsigned long long* errors) {
    unsigned int bad = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        bad += (p[i] != pattern(i, seed));
    if (bad) atomicAdd(errors, (unsigned long long)bad);
}

}  // extern "C"
