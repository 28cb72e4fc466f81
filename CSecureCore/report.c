/* report.c — what protection this machine can give (for `securepin doctor`),
 * and the process-wide hardening a caller may ask for.
 * Every answer comes from trying the real call, not from version numbers. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <argon2.h>
#include <sodium.h>

static uint64_t limit_value(rlim_t v) { return v == RLIM_INFINITY ? UINT64_MAX : (uint64_t)v; }

static int probe_secretmem(int *err) {
    *err = ENOSYS;
#ifdef SYS_memfd_secret
    long page = sysconf(_SC_PAGESIZE);
    int fd = (int)syscall(SYS_memfd_secret, (unsigned long)O_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        return 0;
    }
    void *p = MAP_FAILED;
    if (ftruncate(fd, page) == 0) p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    *err = p == MAP_FAILED ? errno : 0;
    close(fd);
    if (p == MAP_FAILED) return 0;
    munmap(p, (size_t)page);
    return 1;
#else
    return 0;
#endif
}

static int probe_madvise(int advice) {
    long page = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 0;
    int ok = madvise(p, (size_t)page, advice) == 0;
    munmap(p, (size_t)page);
    return ok;
}

spc_status spc_machine_report_get(spc_machine_report *out) {
    memset(out, 0, sizeof *out);
    if (!spc__ready()) return SPC_E_INIT;
    out->secretmem_available = probe_secretmem(&out->secretmem_errno);
#ifdef MADV_WIPEONFORK
    out->wipeonfork_available = probe_madvise(MADV_WIPEONFORK);
#endif
    out->dontdump_available = probe_madvise(MADV_DONTDUMP);
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
        out->memlock_soft = limit_value(rl.rlim_cur);
        out->memlock_hard = limit_value(rl.rlim_max);
    }
    if (getrlimit(RLIMIT_CORE, &rl) == 0) out->core_soft = limit_value(rl.rlim_cur);
    out->dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    out->aesni = crypto_aead_aes256gcm_is_available();
    out->can_ipc_lock = geteuid() == 0;
    out->sodium_version = sodium_version_string();
    out->argon2_version = ARGON2_VERSION_NUMBER;
    return SPC_OK;
}

spc_status spc_harden_process(void) {
#ifdef __linux__
    const struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return SPC_E_UNSUPPORTED;
    return SPC_OK;
#else
    return SPC_E_UNSUPPORTED;
#endif
}
