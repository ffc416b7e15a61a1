#define _GNU_SOURCE
#include "csystem.h"

#include <fcntl.h>
#include <unistd.h>

int today_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int today_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

pid_t today_siginfo_pid(const siginfo_t *info) { return info->si_pid; }
