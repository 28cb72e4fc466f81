#define _GNU_SOURCE
#include "spawn_shim.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#if defined(__APPLE__)
#include <crt_externs.h>
#endif

#if defined(__linux__)
int spawn_shim_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int spawn_shim_addclosefrom(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}
#else
/* No pipe2: close-on-exec set right after pipe(), so a child started by another thread in
 * between could inherit the ends (the Linux build has no such window). */
int spawn_shim_pipe_cloexec(int fds[2]) {
    if (pipe(fds) != 0) return -1;
    if (fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
        int saved = errno;
        close(fds[0]);
        close(fds[1]);
        errno = saved;
        return -1;
    }
    return 0;
}

/* No closefrom file action: the child keeps only the descriptors without close-on-exec. */
int spawn_shim_addclosefrom(posix_spawn_file_actions_t *actions, int lowest) {
    (void)actions;
    (void)lowest;
    return ENOSYS;
}
#endif

int spawn_shim_addchdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

char **spawn_shim_environ(void) {
#if defined(__APPLE__)
    return *_NSGetEnviron(); /* `environ` is not exported to shared libraries there */
#else
    extern char **environ;
    return environ;
#endif
}
