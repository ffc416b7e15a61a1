/* One provider run as todayd makes it, for the C references: posix_spawn
 * with its argument, the previous snapshot (an empty dictionary) on
 * standard input, standard output read to the end, then reaped.
 * bench-spawn times it; bench-update-ref runs it for each call. */
#ifndef BENCH_PROVIDER_H
#define BENCH_PROVIDER_H

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* 0 once the provider ran and was reaped, -1 when it could not start. */
static int bench_run_provider(const char *executable) {
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
    while (read(out[0], buffer, sizeof buffer) > 0) {}
    close(out[0]);
    if (failed) return -1;
    int status;
    waitpid(pid, &status, 0);
    return 0;
}

#endif
