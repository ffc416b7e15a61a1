#define _GNU_SOURCE
#include "csystem.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

int today_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int today_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

pid_t today_siginfo_pid(const siginfo_t *info) { return info->si_pid; }

int today_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}
