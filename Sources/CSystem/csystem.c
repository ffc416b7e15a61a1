#define _GNU_SOURCE
#include "csystem.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

int today_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

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

int today_set_thread_nice(int nice) { return setpriority(PRIO_PROCESS, (id_t)gettid(), nice); }

void today_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

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

struct today_child {
    const char *path;
    char *const *argv;
    char *const *envp;
    const int *fds;
    const char *directory;
    int nice;
    int error;
};

/* Runs in the child, in the parent's memory while the parent thread is
 * suspended (CLONE_VM | CLONE_VFORK), until execve: system call wrappers
 * only, no allocation, no lock. Whatever fails is left in `error` for the
 * parent to return. */
static int today_child_main(void *argument) {
    struct today_child *child = argument;
    /* Every disposition back to the default, the two signals glibc keeps
     * for itself (32, 33) included: its sigaction() refuses them, and its
     * posix_spawn leaves them ignored in the child. A zeroed kernel
     * sigaction is SIG_DFL, no flags, an empty mask on every architecture. */
    unsigned long standard[4] = {0, 0, 0, 0};
    for (int number = 1; number <= 64; number++) {
        if (number != SIGKILL && number != SIGSTOP) syscall(SYS_rt_sigaction, number, standard, NULL, 8);
    }
    if (setpgid(0, 0) < 0) goto failed;
    /* The starting thread's own nice value is not passed on (as root,
     * libdispatch runs its threads at -2 and -4); lowering a priority is
     * always allowed, so a failure here is only a higher one kept. */
    (void)setpriority(PRIO_PROCESS, 0, child->nice);
    for (int target = 0; target < 3; target++) {
        if (child->fds[target] == target) {
            if (fcntl(target, F_SETFD, 0) < 0) goto failed;
        } else if (dup2(child->fds[target], target) < 0) {
            goto failed;
        }
    }
    if (child->directory && chdir(child->directory) < 0) goto failed;
    close_range(3, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(child->path, child->argv, child->envp);
failed:
    child->error = errno;
    _exit(127);
}

int today_spawn_provider(pid_t *pid, const char *path, char *const argv[], char *const envp[], const int fds[3],
                         const char *directory, int nice) {
    /* The child's stack: this frame is not used while the child runs, so
     * no mapping is made and unmapped for each provider (posix_spawn's
     * per-call mmap and munmap, and the TLB shootdown that munmap costs
     * in a process with threads on other processors). */
    char stack[32768] __attribute__((aligned(16)));
    struct today_child child = {path, argv, envp, fds, directory, nice, 0};
    /* No handler of ours may run in the child before it resets them all;
     * SIGCHLD stays deliverable (it is never handled in todayd), so that a
     * child that ends before clone returns is not left pending. */
    sigset_t all, saved;
    sigfillset(&all);
    sigdelset(&all, SIGCHLD);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    int saved_errno = errno;
    pid_t started = clone(today_child_main, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
    int clone_errno = errno;
    errno = saved_errno;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (started < 0) return clone_errno;
    if (child.error) {
        int status;
        while (waitpid(started, &status, 0) < 0 && errno == EINTR) {}
        return child.error;
    }
    *pid = started;
    return 0;
}

int today_rename_exchange(int folder, const char *a, const char *b) {
    return renameat2(folder, a, folder, b, RENAME_EXCHANGE) == 0 ? 0 : errno;
}
