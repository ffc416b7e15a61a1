#ifndef TODAY_CSYSTEM_H
#define TODAY_CSYSTEM_H

#include <signal.h>
#include <spawn.h>
#include <sys/types.h>

/// A pipe whose two ends are close-on-exec. 0 or -1 with errno.
int today_pipe_cloexec(int fds[2]);

/// posix_spawn_file_actions_addchdir_np, which glibc declares only under _GNU_SOURCE.
int today_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path);

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): the child closes
/// every descriptor from `lowest` up before it executes.
int today_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int lowest);

/// The process id a waitid() filled in; 0 when none changed state.
pid_t today_siginfo_pid(const siginfo_t *info);

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

#endif
