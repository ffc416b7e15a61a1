#define _GNU_SOURCE
#include "csystem.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

int today_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int today_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int today_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

/* Closes every descriptor from `lowest` up except `keep`. */
static void close_all_from(int lowest, int keep) {
    if (keep >= lowest) {
        if (keep > lowest) close_range((unsigned)lowest, (unsigned)keep - 1, 0);
        close_range((unsigned)keep + 1, ~0U, 0);
    } else {
        close_range((unsigned)lowest, ~0U, 0);
    }
}

pid_t today_siginfo_pid(const siginfo_t *info) { return info->si_pid; }

void today_malloc_map_large_blocks(int bytes) { mallopt(M_MMAP_THRESHOLD, bytes); }

int today_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

int today_spawn_detached(const char *path, char *const argv[], char *const envp[], const char *directory) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return errno;
    pid_t child = fork();
    if (child < 0) {
        int error = errno;
        close(report[0]);
        close(report[1]);
        return error;
    }
    if (child == 0) {
        /* Only async-signal-safe calls from here on. */
        close(report[0]);
        if (setsid() < 0) {
            int error = errno;
            (void)!write(report[1], &error, sizeof error);
            _exit(1);
        }
        pid_t grandchild = fork();
        if (grandchild < 0) {
            int error = errno;
            (void)!write(report[1], &error, sizeof error);
            _exit(1);
        }
        if (grandchild > 0) _exit(0);
        struct sigaction deflt;
        deflt.sa_handler = SIG_DFL;
        deflt.sa_flags = 0;
        sigemptyset(&deflt.sa_mask);
        for (int number = 1; number < NSIG; number++) sigaction(number, &deflt, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Nothing of todayd's (its bus socket, other programs' pipes) reaches the app. */
        close_all_from(3, report[1]);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            if (null > 0) close(null);
        }
        if (directory != NULL && chdir(directory) != 0) { /* stay where we are */ }
        execve(path, argv, envp);
        int error = errno;
        (void)!write(report[1], &error, sizeof error);
        _exit(127);
    }
    close(report[1]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    int error = 0;
    ssize_t got;
    do {
        got = read(report[0], &error, sizeof error);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    return got == (ssize_t)sizeof error ? error : 0;
}
