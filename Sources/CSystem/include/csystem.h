#ifndef TODAY_CSYSTEM_H
#define TODAY_CSYSTEM_H

#include <signal.h>
#include <sys/types.h>

/// A pipe whose two ends are close-on-exec. 0 or -1 with errno.
int today_pipe_cloexec(int fds[2]);

/// The process id a waitid() filled in; 0 when none changed state.
pid_t today_siginfo_pid(const siginfo_t *info);

/// Sets the nice value of the calling thread alone (Linux keeps one per
/// thread). 0 or -1 with errno.
int today_set_thread_nice(int nice);

/// Names the calling thread (up to 15 bytes), as `top -H` and
/// /proc/<pid>/task/<tid>/comm show it.
void today_set_thread_name(const char *name);

/// A file descriptor that becomes readable when the process ends
/// (pidfd_open, Linux 5.3); -1 with errno where the kernel lacks it.
int today_pidfd_open(pid_t pid);

/// Starts `path` with `argv` and `envp` detached from the caller: in a new
/// session, as a grandchild that init adopts, with default signal
/// dispositions, an empty signal mask and no descriptors but standard
/// input (/dev/null), output and error. Returns 0 once the program has
/// been executed, or the errno of what failed (fork, setsid, execve).
int today_spawn_detached(const char *path, char *const argv[], char *const envp[], const char *directory);

/// Makes malloc serve every block of `bytes` or more with its own mapping,
/// returned to the system when freed (a fixed M_MMAP_THRESHOLD, which also
/// stops glibc from raising its thresholds after large frees).
void today_malloc_map_large_blocks(int bytes);

/// Starts a provider: `path` with `argv` and `envp`, `fds` as its
/// standard input, output and error, in `directory`, in a process group of
/// its own, at nice value `nice`, with default signal dispositions, an
/// empty signal mask and no other descriptor. Returns 0 with `pid` set
/// once it has been executed, or the errno of what failed.
int today_spawn_provider(pid_t *pid, const char *path, char *const argv[], char *const envp[], const int fds[3],
                         const char *directory, int nice);

/// Swaps the entries `a` and `b` of the open folder `folder` in one step
/// (renameat2 with RENAME_EXCHANGE): whoever looks sees the one or the
/// other, never neither. 0 or the errno.
int today_rename_exchange(int folder, const char *a, const char *b);

#endif
