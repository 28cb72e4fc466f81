// The three GNU extensions the Spawn module needs, which the Swift Glibc module does not import
// (it is built without _GNU_SOURCE): pipe2, and the closefrom and chdir file actions of posix_spawn;
// and the process environment. Elsewhere than Linux: pipe + FD_CLOEXEC, no closefrom (ENOSYS).
#ifndef SPAWN_SHIM_H
#define SPAWN_SHIM_H

#include <spawn.h>

/// pipe2(fds, O_CLOEXEC): both ends close-on-exec from the start, so no child started meanwhile
/// by another thread inherits them. Returns 0, or -1 with errno set.
int spawn_shim_pipe_cloexec(int fds[2]);

/// posix_spawn_file_actions_addclosefrom_np: the child closes every descriptor from `lowest` on.
/// Returns 0 or an error number; ENOSYS where the platform has no such file action.
int spawn_shim_addclosefrom(posix_spawn_file_actions_t *actions, int lowest);

/// posix_spawn_file_actions_addchdir_np: the child changes to `path` before it executes.
/// Returns 0 or an error number.
int spawn_shim_addchdir(posix_spawn_file_actions_t *actions, const char *path);

/// The calling process's environment (`environ`), as posix_spawn takes it.
char **spawn_shim_environ(void);

#endif
