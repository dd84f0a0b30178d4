/* Pin N MiB of anonymous memory (mlock) so the rest of the machine is constrained. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <signal.h>
int main(int argc, char **argv) {
    size_t mib = strtoull(argv[1], 0, 10), len = mib << 20;
    char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    madvise(p, len, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < len; i += 4096) p[i] = 1;
    if (mlock(p, len)) perror("mlock");
    printf("ready\n"); fflush(stdout);
    pause();
    return 0;
}
