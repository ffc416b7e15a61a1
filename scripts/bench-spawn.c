/* Starts a provider directly, as todayd does for one update: posix_spawn
 * with its argument, the previous snapshot on standard input, standard
 * output read to the end, then reaped. Prints p50 and p99 in microseconds.
 *   bench-spawn EXECUTABLE RUNS */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

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
    static const char input[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict/>\n</plist>\n";
    char buffer[65536];
    for (int i = 0; i < runs; i++) {
        double start = now_us();
        int in[2], out[2];
        if (pipe(in) || pipe(out)) return 1;
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, in[0], 0);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        posix_spawn_file_actions_addclose(&actions, in[1]);
        posix_spawn_file_actions_addclose(&actions, out[0]);
        char *args[] = {argv[1], "perform-update", NULL};
        pid_t pid;
        if (posix_spawn(&pid, argv[1], &actions, NULL, args, environ)) return 1;
        posix_spawn_file_actions_destroy(&actions);
        close(in[0]);
        close(out[1]);
        if (write(in[1], input, sizeof input - 1) < 0) { /* the provider may not read it */ }
        close(in[1]);
        while (read(out[0], buffer, sizeof buffer) > 0) {}
        close(out[0]);
        int status;
        waitpid(pid, &status, 0);
        times[i] = now_us() - start;
    }
    qsort(times, runs, sizeof *times, compare);
    printf("p50_us=%.1f p99_us=%.1f\n", times[runs / 2], times[runs * 99 / 100]);
    return 0;
}
