/* Starts a provider directly, as todayd does for one update: posix_spawn
 * with its argument, the previous snapshot on standard input, standard
 * output read to the end, then reaped (bench-provider.h). Prints p50 and
 * p99 in microseconds.
 *   bench-spawn EXECUTABLE RUNS */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench-provider.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: bench-spawn EXECUTABLE RUNS\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int runs = atoi(argv[2]);
    double *times = calloc(runs, sizeof *times);
    for (int i = 0; i < runs; i++) {
        double start = now_us();
        if (bench_run_provider(argv[1])) return 1;
        times[i] = now_us() - start;
    }
    qsort(times, runs, sizeof *times, compare);
    printf("p50_us=%.1f p99_us=%.1f\n", times[runs / 2], times[runs * 99 / 100]);
    return 0;
}
