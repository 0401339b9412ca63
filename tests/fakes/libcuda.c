/* A fake CUDA driver for the smoke test's error handling. Every entry point the smoke test
   resolves is here; they succeed with plausible values unless FAKE_CUDA_FAIL=<symbol>:<code>
   names one, which then returns that CUresult. Built by tests/it/smoke.rs with
   `cc -shared -fPIC -Wl,-soname,libcuda.so.1`. */
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

static int fail(const char *name) {
    const char *spec = getenv("FAKE_CUDA_FAIL");
    if (!spec) return 0;
    const char *colon = strchr(spec, ':');
    if (!colon || (size_t)(colon - spec) != strlen(name) || strncmp(spec, name, colon - spec) != 0) return 0;
    return atoi(colon + 1);
}
#define F(name) do { int rc_ = fail(#name); if (rc_) return rc_; } while (0)

static uint64_t next_ptr = 0x10000;
static char *names[] = {"CUDA_SUCCESS"};

int cuInit(unsigned f) { (void)f; F(cuInit); return 0; }
int cuDriverGetVersion(int *v) { F(cuDriverGetVersion); *v = 12040; return 0; }
int cuDeviceGetCount(int *n) { F(cuDeviceGetCount); *n = 1; return 0; }
int cuDeviceGet(int *d, int o) { F(cuDeviceGet); *d = o; return 0; }
int cuDeviceGetName(char *b, int len, int d) { (void)d; F(cuDeviceGetName); strncpy(b, "Fake GPU", len); return 0; }
int cuDeviceTotalMem_v2(size_t *b, int d) { (void)d; F(cuDeviceTotalMem_v2); *b = (size_t)1 << 30; return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) { (void)d; F(cuDeviceGetAttribute); *v = a == 75 ? 8 : a == 76 ? 6 : 4; return 0; }
int cuDeviceCanAccessPeer(int *v, int a, int b) { (void)a; (void)b; *v = 0; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; F(cuDevicePrimaryCtxRetain); *c = (void *)0x1; return 0; }
int cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
int cuCtxSetCurrent(void *c) { (void)c; return 0; }
int cuCtxSynchronize(void) { F(cuCtxSynchronize); return 0; }
int cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *o, void **v) {
    (void)img; (void)n; (void)o;
    int rc = fail("cuModuleLoadDataEx");
    if (rc) { strcpy((char *)v[0], "ptxas fatal   : Unsupported .version 6.0; current version is '5.0'"); return rc; }
    *m = (void *)0x2; return 0;
}
int cuModuleGetFunction(void **f, void *m, const char *n) { (void)m; (void)n; *f = (void *)0x3; return 0; }
int cuModuleUnload(void *m) { (void)m; return 0; }
int cuMemAlloc_v2(uint64_t *p, size_t b) { F(cuMemAlloc_v2); *p = next_ptr; next_ptr += (b + 255) & ~(size_t)255; return 0; }
int cuMemFree_v2(uint64_t p) { (void)p; return 0; }
int cuMemAllocHost_v2(void **p, size_t b) { *p = malloc(b); return 0; }
int cuMemFreeHost(void *p) { free(p); return 0; }
int cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t b) { (void)d; (void)s; (void)b; return 0; }
int cuMemcpyDtoH_v2(void *d, uint64_t s, size_t b) { (void)s; memset(d, 0, b); return 0; }
int cuMemcpyDtoD_v2(uint64_t d, uint64_t s, size_t b) { (void)d; (void)s; (void)b; return 0; }
int cuMemsetD32_v2(uint64_t d, unsigned v, size_t n) { (void)d; (void)v; (void)n; return 0; }
int cuLaunchKernel(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g, unsigned s, void *st, void **p, void **x) {
    (void)f; (void)a; (void)b; (void)c; (void)d; (void)e; (void)g; (void)s; (void)st; (void)p; (void)x;
    F(cuLaunchKernel); return 0;
}
int cuEventCreate(void **e, unsigned f) { (void)f; *e = (void *)0x4; return 0; }
int cuEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }
int cuEventSynchronize(void *e) { (void)e; return 0; }
int cuEventElapsedTime(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 1.0f; return 0; }
int cuEventDestroy_v2(void *e) { (void)e; return 0; }
int cuGetErrorName(int rc, const char **s) {
    switch (rc) {
    case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case 222: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; break;
    case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
    default: *s = names[0];
    }
    return 0;
}
int cuGetErrorString(int rc, const char **s) {
    switch (rc) {
    case 2: *s = "out of memory"; break;
    case 100: *s = "no CUDA-capable device is detected"; break;
    case 222: *s = "the provided PTX was compiled with an unsupported toolchain."; break;
    case 719: *s = "unspecified launch failure"; break;
    default: *s = "no error";
    }
    return 0;
}
