#define _GNU_SOURCE
#include "spawn_shim.h"

#include <fcntl.h>
#include <unistd.h>

int spawn_shim_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int spawn_shim_addclosefrom(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

int spawn_shim_addchdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}
