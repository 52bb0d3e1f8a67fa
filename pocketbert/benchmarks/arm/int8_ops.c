/* The int8 instructions LiteRT's aarch64 kernels use, each checked against plain C on random data.
 *
 * Tells whether an emulator (or a device) computes them right: NEON SDOT (dot-product kernels), SVE
 * SDOT and SMMLA (SVE/i8mm), and SME's 4-way outer products SMOPA/UMOPA/SUMOPA/USMOPA into 32-bit ZA
 * tiles, which KleidiAI's *_sme_mopa int8 matmuls (chosen by XNNPACK when the CPU reports SME) use.
 * Each is tried only when the CPU reports it (HWCAPs); SME at the CPU's streaming vector length.
 * -O1 does not auto-vectorise, so the -march extensions appear only in the guarded functions.
 *
 *   aarch64-linux-gnu-gcc -O1 -march=armv8.6-a+sve+i8mm -static -o /tmp/int8_ops pocketbert/benchmarks/arm/int8_ops.c
 *   qemu-aarch64-static -cpu max /tmp/int8_ops        # exit 0: all right; 1: some instruction wrong
 */
#include <arm_neon.h>
#include <arm_sve.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#define HWCAP2_SME_BIT (1UL << 23)
#define MAX_SVL 256 /* bytes: the architecture's largest streaming vector (2048 bits) */

static int8_t a[MAX_SVL], b[MAX_SVL];
static int32_t za[MAX_SVL / 4][MAX_SVL / 4];

static void fill(void) {
    for (int i = 0; i < MAX_SVL; i++) {
        a[i] = (int8_t)(rand() & 0xff);
        b[i] = (int8_t)(rand() & 0xff);
    }
}

static int report(const char *name, long wrong, long total) {
    printf("%-34s %s (%ld of %ld values wrong)\n", name, wrong ? "WRONG" : "ok", wrong, total);
    return wrong != 0;
}

static int neon_sdot(void) {
    long wrong = 0;
    int32x4_t acc = vdupq_n_s32(0);
    int32_t got[4];
    vst1q_s32(got, vdotq_s32(acc, vld1q_s8(a), vld1q_s8(b)));
    for (int i = 0; i < 4; i++) {
        int32_t want = 0;
        for (int k = 0; k < 4; k++) want += a[4 * i + k] * b[4 * i + k];
        wrong += got[i] != want;
    }
    return report("NEON SDOT", wrong, 4);
}

static int sve_sdot(void) {
    long n = svcntw(), wrong = 0;
    int32_t got[MAX_SVL / 4];
    svst1_s32(svptrue_b32(), got, svdot_s32(svdup_s32(0), svld1_s8(svptrue_b8(), a), svld1_s8(svptrue_b8(), b)));
    for (long i = 0; i < n; i++) {
        int32_t want = 0;
        for (int k = 0; k < 4; k++) want += a[4 * i + k] * b[4 * i + k];
        wrong += got[i] != want;
    }
    return report("SVE SDOT", wrong, n);
}

static int sve_smmla(void) {
    /* per 128-bit segment: a 2x8 by (2x8)^T product into a 2x2 int32 block */
    long n = svcntw(), wrong = 0;
    int32_t got[MAX_SVL / 4];
    svst1_s32(svptrue_b32(), got, svmmla_s32(svdup_s32(0), svld1_s8(svptrue_b8(), a), svld1_s8(svptrue_b8(), b)));
    for (long i = 0; i < n; i++) {
        long seg = i / 4, row = (i % 4) / 2, col = i % 2;
        int32_t want = 0;
        for (int k = 0; k < 8; k++) want += a[16 * seg + 8 * row + k] * b[16 * seg + 8 * col + k];
        wrong += got[i] != want;
    }
    return report("SVE SMMLA (i8mm)", wrong, n);
}

/* ZA0.S = 0, then one 4-way outer product of a and b, then every horizontal slice to za[][]; all in
 * streaming mode inside one asm block (no compiler code may run between smstart and smstop) */
#define MOPA(NAME, INSN)                                                                   \
    static void NAME(void) {                                                               \
        void *out = za;                                                                    \
        asm volatile(".arch_extension sme\n\t"                                               \
                     "smstart\n\t"                                                         \
                     "zero {za}\n\t"                                                       \
                     "ptrue p0.b\n\t"                                                      \
                     "ld1b {z0.b}, p0/z, [%1]\n\t"                                         \
                     "ld1b {z1.b}, p0/z, [%2]\n\t" INSN " za0.s, p0/m, p0/m, z0.b, z1.b\n\t" \
                     "ptrue p1.s\n\t"                                                      \
                     "cntw x9\n\t"                                                         \
                     "mov w12, #0\n\t"                                                     \
                     "1:\n\t"                                                              \
                     "st1w {za0h.s[w12, 0]}, p1, [%0]\n\t"                                 \
                     "add %0, %0, #%3\n\t"                                                 \
                     "add w12, w12, #1\n\t"                                                \
                     "cmp x12, x9\n\t"                                                     \
                     "b.lt 1b\n\t"                                                         \
                     "smstop\n\t"                                                          \
                     : "+r"(out)                                                           \
                     : "r"(a), "r"(b), "i"(MAX_SVL)                                        \
                     : "x9", "x12", "p0", "p1", "z0", "z1", "memory", "cc");               \
    }
MOPA(run_smopa, "smopa")
MOPA(run_umopa, "umopa")
MOPA(run_sumopa, "sumopa")
MOPA(run_usmopa, "usmopa")

static long svl_bytes(void) {
    long svl;
    asm(".arch_extension sme\n\trdsvl %0, #1" : "=r"(svl));
    return svl;
}

/* za[i][j] must be the 4-term dot product of a's group i and b's group j, with each side read as
 * signed or unsigned bytes as the instruction says */
static int mopa(const char *name, void (*run)(void), int a_signed, int b_signed) {
    long tiles = svl_bytes() / 4, wrong = 0;
    char label[64];
    memset(za, 0, sizeof za);
    run();
    for (long i = 0; i < tiles; i++)
        for (long j = 0; j < tiles; j++) {
            int32_t want = 0;
            for (int k = 0; k < 4; k++) {
                int32_t x = a_signed ? a[4 * i + k] : (uint8_t)a[4 * i + k];
                int32_t y = b_signed ? b[4 * j + k] : (uint8_t)b[4 * j + k];
                want += x * y;
            }
            wrong += za[i][j] != want;
        }
    snprintf(label, sizeof label, "SME %s (ZA.S, SVL %ld bits)", name, 32 * tiles);
    return report(label, wrong, tiles * tiles);
}

int main(void) {
    unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    int failed = 0;
    srand(1);
    fill();
    if (hwcap & HWCAP_ASIMDDP) failed |= neon_sdot();
    if (hwcap & HWCAP_SVE) failed |= sve_sdot();
    if ((hwcap & HWCAP_SVE) && (hwcap2 & HWCAP2_SVEI8MM)) failed |= sve_smmla();
    if (hwcap2 & HWCAP2_SME_BIT) {
        failed |= mopa("SMOPA", run_smopa, 1, 1);
        failed |= mopa("UMOPA", run_umopa, 0, 0);
        failed |= mopa("SUMOPA", run_sumopa, 1, 0);
        failed |= mopa("USMOPA", run_usmopa, 0, 1);
    } else {
        printf("SME not reported: outer products not tried\n");
    }
    return failed;
}
