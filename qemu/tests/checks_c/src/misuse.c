/*
 * Kernels that each trip one of the device's memory checks (qemu/tests/checks.rs), and
 * one that does not. Every kernel takes one float32 tensor x and returns an output
 * like it; on 8 cores, each core copies its share of x first, so the output is whole,
 * and core 0 alone makes the mistake (but in `race`, where every core does).
 */
#include <math.h>
#include <neuroncustomop.h>
#include <stdlib.h>
#include <string.h>

/* Copies this core's share of `in` into `out` and returns the output's data; *x is
 * the input's data and *count its element count. */
static float *copy_into(const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *in, const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out,
                        const float **x, uint32_t *count) {
    uint32_t n = customop_tensor_numel(in), core = get_cpu_id(), cores = get_cpu_count();
    const float *src = customop_tensor_data(in);
    float *dst = customop_tensor_data(out);
    for (uint32_t i = n * core / cores; i < n * (core + 1) / cores; i++) {
        dst[i] = src[i];
    }
    customop_return_tensor(out);
    *x = src;
    *count = n;
    return dst;
}

/* Copies this core's share of x into the output and returns the output's data (NULL
 * when an argument is missing); *count is the element count. */
static float *copy_share(const float **x, uint32_t *count) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *in = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (in == NULL || out == NULL) {
        return NULL;
    }
    return copy_into(in, out, x, count);
}

/* Writes nothing it should not. */
static void copy(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    customop_cleanup();
}

/* 64 floats (256 bytes) past the end of the output. */
static void past_end_256(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    for (uint32_t i = 0; i < (get_cpu_id() == 0 ? 64 : 0); i++) {
        out[n + i] = 1.0f;
    }
    customop_cleanup();
}

/* 1 MiB past the end of the output. */
static void past_end_1m(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    for (uint32_t i = 0; i < (get_cpu_id() == 0 ? (1u << 20) / 4 : 0); i++) {
        out[n + i] = 2.0f;
    }
    customop_cleanup();
}

/* Element 17 of the (read-only) input. */
static void into_input(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        ((float *)x)[17] = 0.0f;
    }
    customop_cleanup();
}

/* Core 0 writes its counter's twin in core 3's image (each core's image is linked
 * 2 MiB above the last): a pointer computed for the wrong core. */
static volatile uint32_t counter;

static void cross_core(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    counter++;
    if (get_cpu_id() == 0) {
        *(volatile uint32_t *)((uintptr_t)&counter + 3 * 0x200000) = 0xDEAD;
    }
    customop_cleanup();
}

/* Every core writes element 0 as well as its share. */
static void race(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    out[0] = x[0];
    customop_cleanup();
}

/* Reads the fourth float past the end of the input (and writes it over element 0). */
static void reads_past(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        out[0] = x[n + 3];
    }
    customop_cleanup();
}

/* Sends count floats from src to dst by DMA (neuron_memcpy's default backend); kept a
 * function of its own so the findings' backtraces have a frame to name. */
__attribute__((noinline)) static void send(float *dst, const float *src, uint32_t count) {
    neuron_memcpy(dst, src, count * sizeof(float));
}

/* A DMA transfer of 64 floats (256 bytes) that lands past the end of the output. */
static void dma_past_end(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        send(out + n, x, 64);
    }
    customop_cleanup();
}

/* A DMA transfer into core 0's share of the output that reads 16 bytes past the input. */
static void dma_reads_past(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        send(out, x + n - n / get_cpu_count() + 4, n / get_cpu_count());
    }
    customop_cleanup();
}

/* Stores count floats past p, one at a time: a frame under the kernel's. */
__attribute__((noinline)) static void scribble(float *p, uint32_t count) {
    for (uint32_t i = 0; i < count; i++) {
        ((volatile float *)p)[i] = 4.0f;
    }
}

/* 16 floats past the end of the output, from a helper. */
static void past_end_nested(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        scribble(out + n, 16);
    }
    customop_cleanup();
}

/* A row softmax of a [rows, cols] tensor, the rows split over the cores: a well-behaved
 * kernel for the checks' cost (qemu/examples/checks_bench.rs). */
static void softmax_rows(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *in = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (in != NULL && out != NULL) {
        uint32_t cols = customop_tensor_dim(in, 1), rows = customop_tensor_numel(in) / cols;
        uint32_t core = get_cpu_id(), cores = get_cpu_count();
        const float *x = customop_tensor_data(in);
        float *y = customop_tensor_data(out);
        for (uint32_t r = rows * core / cores; r < rows * (core + 1) / cores; r++) {
            const float *row = x + r * cols;
            float largest = row[0], sum = 0.0f;
            for (uint32_t c = 1; c < cols; c++) {
                largest = fmaxf(largest, row[c]);
            }
            for (uint32_t c = 0; c < cols; c++) {
                y[r * cols + c] = expf(row[c] - largest);
                sum += y[r * cols + c];
            }
            for (uint32_t c = 0; c < cols; c++) {
                y[r * cols + c] /= sum;
            }
        }
        customop_return_tensor(out);
    }
    customop_cleanup();
}

/* The heap kernels: core 0 makes the mistake with a 64-byte block of its own heap
 * (16 floats), through a volatile pointer so the compiler keeps every access. */

/* Takes, writes, reads and frees a block: nothing wrong. */
static void heap_ok(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    volatile float *p = malloc(64);
    for (int i = 0; i < 16; i++) {
        p[i] = (float)i;
    }
    if (get_cpu_id() == 0) {
        out[0] = p[0] + x[0];
    }
    free((void *)p);
    customop_cleanup();
}

/* Correct copies the C library's memcpy and memmove make with word loads that hold
 * bytes just outside their source (runtime/arch/xtensa/mem.S): 514 bytes from a block
 * to a destination 2 bytes into a word (its last load holds 2 bytes past the block),
 * and 63 bytes from a block's second byte, its first never written. No finding; a
 * wrong byte makes the output wrong. */
static void copies_odd(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    unsigned char *a = malloc(514), *b = malloc(520), *c = malloc(64);
    for (int i = 0; i < 514; i++) {
        a[i] = (unsigned char)(i * 7);
    }
    for (int i = 1; i < 64; i++) {
        c[i] = (unsigned char)i;
    }
    memcpy(b + 2, a, 514);
    int wrong = 0;
    for (int i = 0; i < 514; i++) {
        wrong |= b[2 + i] != (unsigned char)(i * 7);
    }
    memmove(b, c + 1, 63);
    for (int i = 0; i < 63; i++) {
        wrong |= b[i] != (unsigned char)(i + 1);
    }
    if (wrong) {
        out[0] = -1.0f;
    }
    free(a);
    free(b);
    free(c);
    customop_cleanup();
}

/* Stores into a block after freeing it. */
static void use_after_free(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    volatile float *p = malloc(64); /* uaf */
    p[0] = 1.0f;
    free((void *)p); /* uaf */
    if (get_cpu_id() == 0) {
        p[1] = 2.0f; /* after free */
    }
    customop_cleanup();
}

/* Stores the fourth float past the end of a block. */
static void heap_overrun(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    volatile float *p = malloc(64);
    p[0] = 1.0f;
    if (get_cpu_id() == 0) {
        p[16 + 3] = 2.0f; /* past the block */
    }
    free((void *)p);
    customop_cleanup();
}

/* Frees one block twice. */
static void double_free(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    volatile float *p = malloc(64);
    p[0] = 1.0f;
    free((void *)p);
    if (get_cpu_id() == 0) {
        free((void *)p); /* twice */
    }
    customop_cleanup();
}

/* Frees its input, which no heap gave out. */
static void foreign_free(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        free((void *)x); /* not a block */
    }
    customop_cleanup();
}

/* Takes a block and never frees it (a warning). */
static void leaks(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        volatile float *p = malloc(64); /* kept */
        p[0] = 1.0f;
    }
    customop_cleanup();
}

/* Reads a float of a block it never wrote (a warning). */
static void reads_unwritten(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    volatile float *p = malloc(64);
    p[0] = x[0];
    if (get_cpu_id() == 0) {
        out[0] = p[2] * 0.0f + x[0]; /* never written */
    }
    free((void *)p);
    customop_cleanup();
}

/* Reads an element of its output before any core wrote it (a warning), then copies. */
static void reads_output_first(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *in = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (in != NULL && out != NULL) {
        if (get_cpu_id() == 0) {
            volatile const float *early = customop_tensor_data(out);
            (void)early[1]; /* output read before written */
        }
        const float *x;
        uint32_t n;
        copy_into(in, out, &x, &n);
    }
    customop_cleanup();
}

/* Takes 6 MiB of its core's HBM heap (8 MiB), then stops (abort) holding them: the
 * loader gives the block back (qemu/tests/checks.rs). */
static void hoards_and_aborts(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    volatile char *p = malloc(6u << 20);
    if (p != NULL) {
        p[0] = 1;
        abort();
    }
    customop_cleanup();
}

/* Copies x only if it can take 6 MiB of its core's HBM heap (and gives them back). */
static void needs_6_mib(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *in = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    volatile char *p = malloc(6u << 20);
    if (in != NULL && out != NULL && p != NULL) {
        p[0] = 1;
        const float *src = customop_tensor_data(in);
        float *dst = customop_tensor_data(out);
        for (uint32_t i = 0; i < customop_tensor_numel(in); i++) {
            dst[i] = src[i];
        }
        customop_return_tensor(out);
    }
    free((void *)p);
    customop_cleanup();
}

/* Copies 300 floats of x by DMA into a 256-float TCM block. */
static void tcm_copy_past(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        float *buf = tcm_malloc(256 * sizeof(float));
        neuron_memcpy(buf, x, 300 * sizeof(float)); /* past the TCM block */
        tcm_free(buf);
    }
    customop_cleanup();
}

/* Writes 16 floats past a 64-float block, where the next live block would start. */
static void into_next_block(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        volatile float *first = malloc(64 * sizeof(float));
        float *next = calloc(64, sizeof(float));
        for (uint32_t i = 0; i < 16; i++) {
            first[64 + i] = 5.0f; /* past the first block */
        }
        free(next);
        free((void *)first);
    }
    customop_cleanup();
}

/* Core 0 stores into core 1's stack: its own local's address, 2 MiB on (the next
 * core's loader image, where that core's local is). */
static void into_other_stack(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    volatile uint32_t local = 0;
    if (get_cpu_id() == 0) {
        *(volatile uint32_t *)((uintptr_t)&local + 0x200000) = 0xDEAD; /* core 1's stack */
    }
    (void)local;
    customop_cleanup();
}

/* Core 0 stores into core 1's stack at an address core 1 publishes: a local of its
 * own, whose address it writes into its share of the output (then a mark after it);
 * core 0 waits for the mark, stores there, and core 1 waits for that store while the
 * local is live, then writes its share's first words again. On 2 cores or more; each
 * wait gives up after 2^30 looks. */
#define PUBLISHED 0x5354414bu /* "STAK" */
static void into_published_stack(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    uint32_t cores = get_cpu_count();
    if (out != NULL && cores >= 2) {
        volatile uintptr_t *mailbox = (volatile uintptr_t *)&out[n / cores];
        volatile uint32_t local = 0;
        if (get_cpu_id() == 1) {
            mailbox[0] = (uintptr_t)&local;
            mailbox[1] = PUBLISHED;
            for (uint32_t looks = 0; local == 0 && looks < (1u << 30); looks++) {
            }
            out[n / cores] = x[n / cores];
            out[n / cores + 1] = x[n / cores + 1];
            out[n / cores + 2] = x[n / cores + 2];
            out[n / cores + 3] = x[n / cores + 3];
        } else if (get_cpu_id() == 0) {
            for (uint32_t looks = 0; mailbox[1] != PUBLISHED && looks < (1u << 30); looks++) {
            }
            if (mailbox[1] == PUBLISHED) {
                *(volatile uint32_t *)mailbox[0] = 0xDEAD; /* into core 1's stack */
            }
        }
    }
    customop_cleanup();
}

/* Core 0 stores into core 3's dataram: its own TCM block's address, 3 dataram
 * scratches (64 KiB each) on. */
static void into_other_dataram(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    char *mine = tcm_malloc(64);
    if (get_cpu_id() == 0 && mine != NULL) {
        *(volatile uint32_t *)(mine + 3 * 0x10000) = 0xDEAD; /* core 3's dataram */
    }
    tcm_free(mine);
    customop_cleanup();
}

/* Core 0 copies 16 bytes of x into core 3's dataram with C's memcpy, called by name: its
 * own TCM block's address, 3 dataram scratches on. */
static void memcpy_into_other_dataram(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    char *mine = tcm_malloc(64);
    if (get_cpu_id() == 0 && mine != NULL) {
        memcpy(mine + 3 * 0x10000, x, 16); /* memcpy into core 3's dataram */
    }
    tcm_free(mine);
    customop_cleanup();
}

/* Core 0 copies 16 bytes of x into core 3's dataram with neuron_memcpy, the runtime's
 * copy: its own TCM block's address, 3 dataram scratches on. */
static void neuron_memcpy_into_dataram(void) {
    const float *x;
    uint32_t n;
    copy_share(&x, &n);
    char *mine = tcm_malloc(64);
    if (get_cpu_id() == 0 && mine != NULL) {
        neuron_memcpy(mine + 3 * 0x10000, x, 16); /* neuron_memcpy into core 3's dataram */
    }
    tcm_free(mine);
    customop_cleanup();
}

/* Core 0 copies a block it never wrote into the first 16 elements of the output, by DMA
 * (a warning, naming the elements). */
static void unwritten_to_output(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        float *p = malloc(16 * sizeof(float));
        neuron_memcpy(out, p, 16 * sizeof(float)); /* unwritten, by DMA */
        free(p);
    }
    customop_cleanup();
}

/* The same with the CPU's memcpy. */
static void unwritten_memcpy(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        float *p = malloc(16 * sizeof(float));
        memcpy(out, p, 16 * sizeof(float)); /* unwritten, by memcpy */
        free(p);
    }
    customop_cleanup();
}

/* Core 0 reads element n of x (one past its end) 64 times. */
static void reads_one_past(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    if (get_cpu_id() == 0) {
        float sum = 0.0f;
        for (int i = 0; i < 64; i++) {
            sum += ((volatile const float *)x)[n]; /* one past */
        }
        out[0] = sum * 0.0f + x[0];
    }
    customop_cleanup();
}

/* The runtime's memset over the output's last 8 elements and 56 past its end: one run
 * of 64 stores off one register (mem.S's unrolled loop), which the checks take with one
 * callback (qemu/plugin/src/groups.rs), part inside the output, part past it. */
static void memset_past_end(void) {
    const float *x;
    uint32_t n;
    float *out = copy_share(&x, &n);
    volatile uint32_t bytes = 256; /* a call of memset, not stores the compiler writes */
    if (get_cpu_id() == 0) {
        memset(out + n - 8, 0, bytes); /* 56 elements past */
    }
    customop_cleanup();
}

static const struct {
    const char *name;
    neuron_kernel_fn kernel;
} kernels[] = {
    {"copy", copy}, {"past_end_256", past_end_256}, {"past_end_1m", past_end_1m}, {"into_input", into_input},
    {"cross_core", cross_core}, {"race", race}, {"reads_past", reads_past}, {"softmax_rows", softmax_rows},
    {"hoards_and_aborts", hoards_and_aborts}, {"needs_6_mib", needs_6_mib},
    {"dma_past_end", dma_past_end}, {"dma_reads_past", dma_reads_past}, {"past_end_nested", past_end_nested},
    {"heap_ok", heap_ok}, {"copies_odd", copies_odd}, {"use_after_free", use_after_free}, {"heap_overrun", heap_overrun},
    {"double_free", double_free}, {"foreign_free", foreign_free}, {"leaks", leaks},
    {"reads_unwritten", reads_unwritten}, {"reads_output_first", reads_output_first},
    {"tcm_copy_past", tcm_copy_past}, {"into_next_block", into_next_block}, {"into_other_stack", into_other_stack},
    {"into_published_stack", into_published_stack}, {"into_other_dataram", into_other_dataram},
    {"memcpy_into_other_dataram", memcpy_into_other_dataram},
    {"neuron_memcpy_into_dataram", neuron_memcpy_into_dataram}, {"unwritten_to_output", unwritten_to_output},
    {"unwritten_memcpy", unwritten_memcpy}, {"reads_one_past", reads_one_past},
    {"memset_past_end", memset_past_end},
};

#define KERNEL_COUNT ((int)(sizeof kernels / sizeof kernels[0]))

int get_func_cnt(void) {
    return KERNEL_COUNT;
}

void *get_func_ptr(int index) {
    return index >= 0 && index < KERNEL_COUNT ? (void *)kernels[index].kernel : NULL;
}

const char *get_func_name(int index) {
    return index >= 0 && index < KERNEL_COUNT ? kernels[index].name : NULL;
}
