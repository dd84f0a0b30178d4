/* thpscale-like bursts: every interval, madvise(MADV_HUGEPAGE) a region of `mb` MiB,
 * fault it in, hold briefly, unmap. Runs until killed. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>
int main(int argc, char **argv) {
    size_t len = strtoull(argv[1], 0, 10) << 20;
    long ms = atol(argv[2]);
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    for (;;) {
        char *raw = mmap(0, len + (2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) { perror("mmap"); return 1; }
        char *p = (char *)(((unsigned long)raw + (2 << 20) - 1) & ~((2UL << 20) - 1));
        madvise(p, len, MADV_HUGEPAGE);
        for (size_t i = 0; i < len; i += 4096) p[i] = 1;
        nanosleep(&ts, 0);
        munmap(raw, len + (2 << 20));
    }
}
