/* One provider run as todayd makes it, for the C references: posix_spawn
 * with its argument, the previous snapshot (an empty dictionary) on
 * standard input, standard output read to the end, then reaped.
 * bench-spawn times it; bench-update-ref runs it for each call, keeping
 * the output when it parses it. */
#ifndef BENCH_PROVIDER_H
#define BENCH_PROVIDER_H

#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* 0 once the provider ran and was reaped, -1 when it could not start.
 * With `output`, what it wrote is kept there (malloc'd, *length bytes). */
static int bench_run_provider_output(const char *executable, char **output, size_t *length) {
    static const char input[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict/>\n</plist>\n";
    char buffer[65536];
    int in[2], out[2];
    if (pipe(in)) return -1;
    if (pipe(out)) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    char *args[] = {(char *)executable, "perform-update", NULL};
    pid_t pid;
    int failed = posix_spawn(&pid, executable, &actions, NULL, args, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (!failed && write(in[1], input, sizeof input - 1) < 0) { /* the provider may not read it */ }
    close(in[1]);
    size_t size = 0, capacity = 0;
    char *kept = NULL;
    ssize_t got;
    while ((got = read(out[0], buffer, sizeof buffer)) > 0) {
        if (!output) continue;
        if (size + (size_t)got > capacity) {
            capacity = (size + (size_t)got) * 2;
            char *grown = realloc(kept, capacity);
            if (!grown) break;
            kept = grown;
        }
        memcpy(kept + size, buffer, (size_t)got);
        size += (size_t)got;
    }
    close(out[0]);
    if (output) {
        *output = kept;
        *length = size;
    }
    if (failed) return -1;
    int status;
    waitpid(pid, &status, 0);
    return 0;
}

static int bench_run_provider(const char *executable) { return bench_run_provider_output(executable, NULL, NULL); }

#endif
