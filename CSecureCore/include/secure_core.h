/*
 * secure_core.h — the whole public C surface of SecurePIN's audited core.
 *
 * Conventions (every function below follows them):
 *  - Every function returns a status: SPC_OK (0) or a negative SPC_E_* code.
 *  - Output parameters are cleared on entry and left cleared on failure.
 *  - Secret bytes only ever live in memory allocated by this library
 *    (spc_buffer, spc_password). They are wiped before being released.
 *  - All functions are thread-safe with respect to *different* objects.
 *    One object must not be used from two threads at once; the Swift layer
 *    serialises access.
 *  - spc_init() must succeed before anything else is called.
 */
#ifndef SECURE_CORE_H
#define SECURE_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SPC_MUST_CHECK __attribute__((warn_unused_result))
#define SPC_NONNULL(...) __attribute__((nonnull(__VA_ARGS__)))
#else
#define SPC_MUST_CHECK
#define SPC_NONNULL(...)
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/* Every status-returning function returns an spc_status: SPC_OK or one of
 * the negative codes below. A C enum, so a compiler and a Swift importer see
 * the type, not a bare int; the values are fixed and never reused. */
typedef enum spc_status {
    SPC_OK = 0,
    SPC_E_INIT = -1,             /* spc_init() was not called or failed            */
    SPC_E_NOMEM = -2,            /* the kernel refused memory (not memlock)         */
    SPC_E_ARGUMENT = -3,         /* a size or argument outside its contract         */
    SPC_E_RANGE = -4,            /* an index outside the password                   */
    SPC_E_CODEPOINT = -5,        /* a surrogate or a value above U+10FFFF           */
    SPC_E_TOO_LONG = -6,         /* the password would exceed SPC_PASSWORD_MAX      */
    SPC_E_UTF8 = -7,             /* bytes that are not well-formed UTF-8            */
    SPC_E_CALLBACK = -8,         /* the caller's callback returned non-zero         */
    SPC_E_KDF_ITERATIONS = -9,   /* t below 1 or above the ceiling                  */
    SPC_E_KDF_MEMORY = -10,      /* m below 8*p KiB                                 */
    SPC_E_KDF_PARALLELISM = -11, /* p outside 1 ... 2^24-1                          */
    SPC_E_KDF_SALT = -12,        /* salt shorter than the minimum                   */
    SPC_E_KDF_OUTPUT = -13,      /* output length outside 16 ... 64 bytes           */
    SPC_E_KDF_CEILING = -14,     /* m above the configured memory ceiling           */
    SPC_E_KDF_FAILED = -15,      /* the backend failed (e.g. out of memory)         */
    SPC_E_AEAD_AUTH = -16,       /* authentication failed: wrong key, nonce, data or tag */
    SPC_E_UNSUPPORTED = -17,     /* not available on this CPU or build              */
    SPC_E_FORKED = -18,          /* a buffer inherited across fork(): see "Fork"    */
    /* Codes of the protocol target (CProtocolCrypto, protocol_crypto.h); kept
     * here so that spc_status_name() and every caller know the whole list. */
    SPC_E_CRYPTO = -20, /* libcrypto or libsodium reported an internal failure */
    SPC_E_KEY = -21     /* a key that is not a valid P-256 key (off the curve,
                         * scalar not in 1 ... n-1, wrong encoding length)    */
} spc_status;

/* ------------------------------------------------------------------------ */
/* Library                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * Initialise libsodium and the secure-page pool, and register the pool's
 * fork handlers (pthread_atfork, once; see "Fork" below). Idempotent,
 * thread-safe.
 * Returns: SPC_OK, or SPC_E_INIT if libsodium cannot initialise (no entropy)
 *          or the fork handlers cannot be registered.
 * Security: never changes process limits (RLIMIT_CORE, RLIMIT_MEMLOCK).
 */
SPC_MUST_CHECK spc_status spc_init(void);

/**
 * Whether spc_init() has succeeded in this process: 1 after it has, 0
 * before (or after it failed). For the libraries built on the core (the
 * protocol target) to refuse work with SPC_E_INIT exactly as the core does.
 * Returns: 1 or 0; never a status.
 */
int spc_initialized(void);

/**
 * Harden the whole process as ssh-agent does: setrlimit(RLIMIT_CORE) to 0,
 * soft and hard, then prctl(PR_SET_DUMPABLE, 0). Linux only; independent of
 * spc_init().
 * Effect: the kernel dumps no core of the process (to a file or to a
 * core_pattern pipe); processes of the same user can no longer ptrace it nor
 * open its /proc/PID/mem, environ or maps (those files become root's). Root
 * and CAP_SYS_PTRACE still can: this is no defence against them.
 * Lifetime: the core limit is inherited by fork() children and across
 * execve(); the hard limit cannot be raised again without CAP_SYS_RESOURCE.
 * Non-dumpability is inherited by fork() children, but any execve() resets
 * it (to 1 for an ordinary program) and so does a change of effective or
 * filesystem uid/gid (to fs.suid_dumpable, normally 0): call this after
 * dropping privileges, in the process that holds the secrets.
 * Returns: SPC_OK; SPC_E_UNSUPPORTED when the kernel refuses either call
 *          (a core limit already set stays) and, changing nothing, on
 *          systems other than Linux.
 */
SPC_MUST_CHECK spc_status spc_harden_process(void);

/** Fill `buf` with `len` bytes from the operating system's CSPRNG (for
 * public values: salts, nonces). Aborts if spc_init() has not succeeded. */
SPC_NONNULL(1) void spc_random_fill(void *buf, size_t len);

/** Human-readable name of a status code (static string, never NULL). */
const char *spc_status_name(spc_status status);

/* ------------------------------------------------------------------------ */
/* Protection report                                                         */
/* ------------------------------------------------------------------------ */

/* What an allocation actually got. Each bit is set only after the kernel
 * accepted the corresponding call; nothing is claimed on faith. */
#define SPC_PROT_LOCKED 0x01      /* pages cannot be swapped (mlock or secretmem)    */
#define SPC_PROT_DONTDUMP 0x02    /* MADV_DONTDUMP: excluded from core dumps          */
#define SPC_PROT_WIPEONFORK 0x04  /* MADV_WIPEONFORK: a forked child reads zeros      */
#define SPC_PROT_DONTFORK 0x08    /* MADV_DONTFORK: a forked child has no mapping     */
#define SPC_PROT_SECRETMEM 0x10   /* memfd_secret: the kernel itself cannot read it   */
#define SPC_PROT_GUARDPAGES 0x20  /* no-access pages before and after the slab        */
#define SPC_PROT_NOACCESS_IDLE 0x40 /* pages are PROT_NONE while no object is open   */

/** Pool statistics (for diagnostics and tests). A forked child's counts
 * leave out the slabs it inherited (see "Fork"). */
typedef struct spc_pool_stats {
    size_t slabs;          /* mappings currently held by the pool            */
    size_t slabs_locked;   /* of which locked (mlock or secretmem)           */
    size_t slabs_secretmem;/* of which backed by memfd_secret                */
    size_t slots_in_use;   /* live allocations                               */
    size_t locked_bytes;   /* bytes of locked pages held                     */
} spc_pool_stats;

/**
 * Snapshot of the pool's statistics.
 * Returns: SPC_OK; SPC_E_INIT before spc_init().
 */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_pool_stats_get(spc_pool_stats *out);

/**
 * Disable memfd_secret for allocations made from now on (slabs already made
 * keep their backing). For tests of the fallback path and for deployments
 * that must not use secret memory (it is not visible to hibernation).
 * Returns: SPC_OK; SPC_E_INIT before spc_init().
 */
SPC_MUST_CHECK spc_status spc_pool_set_secretmem(int enabled);

/* ------------------------------------------------------------------------ */
/* Secure buffers (keys, revealed passwords, any fixed-size secret)          */
/* ------------------------------------------------------------------------ */

typedef struct spc_buffer spc_buffer;

/** Largest size one spc_buffer may have (16 MiB). */
#define SPC_BUFFER_MAX 16777216 /* 16 MiB */

/**
 * Allocate a zero-filled secure buffer of `size` bytes (1 ... SPC_BUFFER_MAX).
 * Small buffers share locked slabs (guard pages at both ends, a canary after
 * each slot); large ones get a slab of their own. When the locked-memory
 * budget is exhausted the buffer is still allocated, unlocked, and the
 * protection report says so.
 * Returns: SPC_OK; SPC_E_ARGUMENT for size 0 or above the maximum;
 *          SPC_E_NOMEM when mmap fails; SPC_E_INIT before spc_init().
 * Security: the buffer is no-access until spc_buffer_open().
 */
SPC_MUST_CHECK SPC_NONNULL(2) spc_status spc_buffer_new(size_t size, spc_buffer **out);

/**
 * As spc_buffer_new(), for a buffer that outlives the request scope it is made
 * in (a cache entry, a key kept for minutes): it never goes to the scratch
 * pool (see "Request scopes"), so no other thread's open scope can hold its
 * slab readable. Outside a scope it is exactly spc_buffer_new().
 * Returns: as spc_buffer_new().
 * Security: the buffer is no-access whenever it is not open, whatever scopes
 *           other threads hold.
 */
SPC_MUST_CHECK SPC_NONNULL(2) spc_status spc_buffer_new_lasting(size_t size, spc_buffer **out);

/*
 * Fork. A child made by fork() without exec has none of its parent's secrets:
 * secret memory is not mapped in it, anonymous pool pages read as zeros and
 * nothing is locked. Buffers it inherited are handles to memory it does not
 * have, and the child may only:
 *  - spc_buffer_free() them: releases the handle without reading, wiping or
 *    unmapping anything (safe, never aborts);
 *  - ask spc_buffer_size(); spc_buffer_protection() says 0 (nothing holds);
 *  - call anything that opens them: it returns SPC_E_FORKED and changes
 *    nothing (spc_buffer_close() is a no-op for them).
 * Inherited passwords likewise: spc_password_free() releases them, the
 * length is kept, the protection is 0, and every call that reads or edits
 * the content returns SPC_E_FORKED (after its argument checks).
 * New buffers in the child get new slabs, protected and reported as in any
 * process. The inherited slabs' address ranges stay reserved in the child,
 * untouched (guard pages, zero pages: no memory used, nothing locked); their
 * records are freed with their last inherited buffer. The handlers run for
 * fork(); a raw clone() or _Fork() bypasses them and is not supported.
 */

/**
 * Wipe and release a buffer. NULL is accepted and ignored. Aborts the
 * process if the slot's canary was overwritten (a heap overflow into a secret
 * must never be survived silently). A buffer inherited across fork() is
 * released without touching its memory (see "Fork").
 * Security: the slot is zeroed before the slot returns to the pool; a slab
 * whose last slot is freed is unmapped.
 */
void spc_buffer_free(spc_buffer *buf);

/** Size in bytes (not secret). */
SPC_NONNULL(1) size_t spc_buffer_size(const spc_buffer *buf);

/** Protection bits actually obtained for this buffer (SPC_PROT_*); 0 for a
 * buffer inherited across fork(). */
SPC_NONNULL(1) unsigned spc_buffer_protection(const spc_buffer *buf);

/**
 * Make the buffer readable and writable and return its address. Opens nest;
 * every open must be paired with spc_buffer_close().
 * Returns: SPC_OK; SPC_E_NOMEM if mprotect fails; SPC_E_FORKED for a buffer
 *          inherited across fork() (as does every call that opens one).
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2) spc_status spc_buffer_open(spc_buffer *buf, uint8_t **data);

/** End an open. The pages return to no-access when nothing in them is open.
 * No effect on a buffer inherited across fork(). */
SPC_NONNULL(1) void spc_buffer_close(spc_buffer *buf);

/*
 * Request scopes. A server answers a request with a few dozen short-lived
 * secrets (a shared secret, derived keys, opened records); opening and closing
 * each toggles its slab between no-access and read-write, two mprotect calls
 * and a TLB shootdown per use. Inside a scope the calling thread trades that
 * for a bounded window:
 *  - a buffer spc_buffer_new() makes goes to a separate scratch pool, never
 *    into a slab that holds a secret made outside a scope;
 *  - when the last open of a scratch slab closes, the slab stays readable and
 *    writable (the scope holds it, up to 8 slabs per thread; beyond that the
 *    slab closes as usual) until the outermost spc_scope_end(), which returns
 *    every held slab to no-access and unmaps the ones left empty.
 * Everything else is unchanged: locked, guard pages, canaries, wipe on free,
 * DONTDUMP, fork handling; a buffer outliving the scope is no-access when
 * idle from then on, and the protection report keeps SPC_PROT_NOACCESS_IDLE
 * (idle now means "not open and no scope holds it"). Buffers made outside a
 * scope, and passwords, behave exactly as without one.
 * Scopes nest (only the outermost end releases) and belong to one thread:
 * begin and end on the same thread, without giving the thread up in between.
 */

/**
 * Begin a request scope on the calling thread (see above).
 * Returns: SPC_OK; SPC_E_INIT before spc_init() (no scope begun then).
 * Security: until the matching end, scratch slabs this thread closes stay
 * readable and writable; pair every successful begin with spc_scope_end().
 */
SPC_MUST_CHECK spc_status spc_scope_begin(void);

/** End a scope. The outermost end returns the slabs the thread held to
 * no-access (empty ones are unmapped). Without an open scope: no effect. */
void spc_scope_end(void);

/**
 * Fill the buffer with bytes from the operating system's CSPRNG.
 * Returns: SPC_OK; SPC_E_NOMEM if the buffer cannot be opened.
 */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_buffer_randomize(spc_buffer *buf);

/**
 * Compare two buffers: *equal is set to 1 if the sizes and contents are
 * equal, 0 if not. It is 0 whenever the status is not SPC_OK, so an error
 * can never read as "equal".
 * Returns: SPC_OK (whatever the verdict); SPC_E_NOMEM or SPC_E_FORKED if
 *          either buffer cannot be opened.
 * Security: constant time in the contents (sodium_memcmp); sizes are public.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3) spc_status spc_buffer_equal(spc_buffer *a, spc_buffer *b, int *equal);

/**
 * Compare two byte strings of the same public length `len` (authentication
 * codes, tags, counter hashes) with no early exit: *equal is set to 1 if they
 * are equal (always for len 0), 0 if not, and 0 whenever the status is not
 * SPC_OK. NULL is accepted when `len` is 0.
 * Returns: SPC_OK (whatever the verdict); SPC_E_ARGUMENT for NULL with a
 *          length.
 * Security: constant time in the contents (sodium_memcmp); `len` is public.
 */
SPC_MUST_CHECK SPC_NONNULL(4) spc_status spc_bytes_equal(const uint8_t *a, const uint8_t *b, size_t len, int *equal);

/**
 * Zero `len` bytes at `p` (sodium_memzero) in a way no optimiser removes:
 * for the caller's own stack or heap copies of a secret (a byte just read, a
 * decoder's partial code point). NULL is accepted when `len` is 0.
 * Security: the store always happens, whatever the caller does next; it
 * cannot reach copies the compiler kept in registers or spilled elsewhere.
 */
void spc_wipe(void *p, size_t len);

/* ------------------------------------------------------------------------ */
/* Passwords                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct spc_password spc_password;

/** Longest password, in Unicode code points. */
#define SPC_PASSWORD_MAX 1024

/**
 * Create an empty password. Its code points are stored XORed with a random
 * pad that lives in a separate allocation (a separate slab pool).
 * Returns: SPC_OK; SPC_E_NOMEM; SPC_E_INIT.
 */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_password_new(spc_password **out);

/** Wipe and release. NULL is accepted and ignored. */
void spc_password_free(spc_password *pw);

/** Length in code points (not secret: the UI shows one dot per character). */
SPC_NONNULL(1) size_t spc_password_length(const spc_password *pw);

/** Protection bits common to the password's data and pad allocations. */
SPC_NONNULL(1) unsigned spc_password_protection(const spc_password *pw);

/**
 * Insert code point `cp` before position `index` (0 ... length).
 * Every edit draws a fresh pad for every position and re-scrambles the
 * content without forming a plaintext copy in memory; positions past the
 * end hold zeros in both data and pad.
 * Returns: SPC_OK; SPC_E_RANGE (index > length); SPC_E_CODEPOINT
 *          (surrogate or > 0x10FFFF); SPC_E_TOO_LONG; SPC_E_NOMEM.
 *          On any error the password is unchanged.
 * Security: validity of `cp` is computed without branches; the single
 *           branch is on the resulting accept/reject bit.
 */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_password_insert(spc_password *pw, size_t index, uint32_t cp);

/** Append `cp`: spc_password_insert(pw, length, cp). Same statuses. */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_password_add(spc_password *pw, uint32_t cp);

/**
 * Remove the code point at `index` (0 ... length-1), re-scrambling as for
 * insert and zeroing the vacated tail position.
 * Returns: SPC_OK; SPC_E_RANGE; SPC_E_NOMEM. On error nothing changes.
 */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_password_remove(spc_password *pw, size_t index);

/** Remove the last code point. Returns SPC_E_RANGE when empty. */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_password_remove_last(spc_password *pw);

/**
 * Wipe the content (data and pad zeroed) and set the length to 0.
 * Returns: SPC_OK; SPC_E_NOMEM if the pages cannot be opened.
 */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_password_clear(spc_password *pw);

/**
 * Make an independent copy with a fresh pad.
 * Returns: SPC_OK; SPC_E_NOMEM.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2) spc_status spc_password_copy(spc_password *pw, spc_password **out);

/**
 * Compare two passwords: *equal is set to 1 if they hold the same code
 * points, 0 if not, and 0 whenever the status is not SPC_OK.
 * Returns: SPC_OK (whatever the verdict); SPC_E_NOMEM or SPC_E_FORKED if the
 *          pages cannot be opened.
 * Security: constant time in the content; the loop runs over the shorter
 *           length (lengths are public, see spc_password_length).
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3) spc_status spc_password_equal(spc_password *a, spc_password *b, int *equal);

/**
 * Reveal the password as UTF-8 into a new secure buffer of exactly the
 * encoded size. The caller owns *out and must spc_buffer_free() it as soon as
 * possible. An empty password yields *out == NULL and *len == 0.
 * Returns: SPC_OK; SPC_E_NOMEM.
 * Security: encoding and byte placement use masks only (no branch or memory
 *           index depends on a code point); cost is quadratic in the length,
 *           bounded by SPC_PASSWORD_MAX. The total byte length is revealed.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3) spc_status spc_password_reveal(spc_password *pw, spc_buffer **out, size_t *len);

/** Callback for spc_password_with_utf8: return 0 on success. */
typedef int (*spc_reveal_fn)(const uint8_t *utf8, size_t len, void *ctx);

/**
 * Reveal as UTF-8, call `fn` with the bytes, wipe them, and return.
 * Returns: SPC_OK; SPC_E_CALLBACK if `fn` returned non-zero; SPC_E_NOMEM.
 * Security: the revealed bytes exist only for the duration of `fn`.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2) spc_status spc_password_with_utf8(spc_password *pw, spc_reveal_fn fn, void *ctx);

/**
 * Build a password from UTF-8 bytes held in a secure buffer.
 * Returns: SPC_OK; SPC_E_UTF8 for malformed input (overlong forms,
 *          surrogates, values above U+10FFFF, truncated sequences);
 *          SPC_E_TOO_LONG; SPC_E_NOMEM.
 * Security: the decoder branches on the byte-length class of each character
 *           (1 to 4 bytes) and, when the input is ill-formed, on where it
 *           stops being well-formed (it returns SPC_E_UTF8 there); a
 *           well-formed character's value steers no branch or index.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 3) spc_status spc_password_from_utf8(spc_buffer *utf8, size_t len, spc_password **out);

/* ------------------------------------------------------------------------ */
/* Key derivation (kdf.c)                                                    */
/* ------------------------------------------------------------------------ */

/** Argon2id cost parameters (RFC 9106, version 1.3). */
typedef struct spc_argon2_params {
    uint32_t t_cost;      /* iterations, >= 1                              */
    uint32_t m_cost_kib;  /* memory in KiB, >= 8 * parallelism              */
    uint32_t parallelism; /* lanes (and threads), 1 ... 2^24-1              */
} spc_argon2_params;

/** Ceilings checked before any work (denial-of-service guard). */
typedef struct spc_kdf_limits {
    uint64_t max_m_cost_kib;
    uint32_t max_t_cost;
} spc_kdf_limits;

#define SPC_ARGON2_AUTO 0      /* libsodium when it can, libargon2 otherwise   */
#define SPC_ARGON2_LIBSODIUM 1 /* SIMD; p = 1, 16-byte salt, no secret, no AD  */
#define SPC_ARGON2_REFERENCE 2 /* libargon2: any p (threads), secret, AD       */

#define SPC_KDF_SALT_MIN 16
#define SPC_KDF_OUTPUT_MIN 16
#define SPC_KDF_OUTPUT_MAX 64

/** The input of one Argon2id derivation. Pointers may be NULL when lengths are 0. */
typedef struct spc_argon2_input {
    const uint8_t *password; size_t password_len;
    const uint8_t *salt;     size_t salt_len;
    const uint8_t *secret;   size_t secret_len; /* pepper: libargon2 only */
    const uint8_t *ad;       size_t ad_len;     /* associated data: libargon2 only */
} spc_argon2_input;

/**
 * Default ceilings: memory min(4 GiB, half of physical RAM), 64 iterations.
 * Returns: SPC_OK.
 */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_kdf_limits_default(spc_kdf_limits *out);

/**
 * Check Argon2id parameters against RFC 9106 and the ceilings, without work.
 * Returns: SPC_OK; SPC_E_KDF_ITERATIONS, SPC_E_KDF_MEMORY,
 *          SPC_E_KDF_PARALLELISM, SPC_E_KDF_SALT, SPC_E_KDF_OUTPUT,
 *          SPC_E_KDF_CEILING (checked in that order).
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2) spc_status spc_kdf_argon2id_check(const spc_argon2_params *params, const spc_kdf_limits *limits,
                                                            size_t salt_len, size_t out_len);

/**
 * Argon2id into `out` (its whole size is the output length, 16 ... 64 bytes).
 * `backend` is SPC_ARGON2_AUTO or forces one; *backend_used (may be NULL)
 * reports which ran. Parameters are checked before anything is allocated.
 * Returns: SPC_OK; the statuses of spc_kdf_argon2id_check; SPC_E_UNSUPPORTED
 *          when libsodium is forced for input it cannot take; SPC_E_KDF_FAILED.
 * Security: the output is written only into secure memory and wiped on
 *           failure. libargon2's work memory comes from our allocator
 *           (MADV_DONTDUMP, wiped before unmap); libsodium's is unmapped by
 *           libsodium (returned to the kernel, which zeroes it before reuse).
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3, 5) spc_status spc_kdf_argon2id(const spc_argon2_input *in, const spc_argon2_params *params,
                                                            const spc_kdf_limits *limits, int backend, spc_buffer *out,
                                                            int *backend_used);

/**
 * PBKDF2-HMAC-SHA256 (RFC 8018) into `out` (its whole size, 16 ... 64 bytes),
 * for compatibility with schemes that require it. Prefer Argon2id.
 * Returns: SPC_OK; SPC_E_KDF_ITERATIONS (0); SPC_E_KDF_SALT (empty);
 *          SPC_E_KDF_OUTPUT; SPC_E_NOMEM.
 * Security: HMAC states are wiped; no branch depends on the password.
 */
SPC_MUST_CHECK SPC_NONNULL(6) spc_status spc_kdf_pbkdf2_sha256(const uint8_t *password, size_t password_len, const uint8_t *salt,
                                                        size_t salt_len, uint32_t iterations, spc_buffer *out);

/* ------------------------------------------------------------------------ */
/* Authenticated encryption (aead.c)                                         */
/* ------------------------------------------------------------------------ */

#define SPC_AEAD_XCHACHA20POLY1305 1 /* 32-byte key, 24-byte nonce (random is safe) */
#define SPC_AEAD_AES256GCM 2         /* 32-byte key, 12-byte nonce; AES-NI only     */
#define SPC_AEAD_KEY_BYTES 32
#define SPC_AEAD_TAG_BYTES 16

/** Nonce size of `alg` in bytes, or 0 for an unknown algorithm. */
size_t spc_aead_nonce_bytes(int alg);

/** 1 when `alg` can run on this CPU (AES-256-GCM needs AES-NI and PCLMUL). */
int spc_aead_available(int alg);

/**
 * Encrypt the whole of `plaintext` (NULL: the empty message) and
 * authenticate it with `ad`. `ciphertext` must have room for the plaintext
 * size + SPC_AEAD_TAG_BYTES.
 * Returns: SPC_OK; SPC_E_ARGUMENT (key not 32 bytes, nonce size wrong,
 *          unknown alg); SPC_E_UNSUPPORTED; SPC_E_NOMEM.
 * Security: never reuse a (key, nonce) pair; use random nonces with
 *           XChaCha20-Poly1305, whose 192-bit nonce makes that safe.
 */
SPC_MUST_CHECK SPC_NONNULL(2, 3, 8) spc_status spc_aead_seal(int alg, spc_buffer *key, const uint8_t *nonce, size_t nonce_len,
                                                         spc_buffer *plaintext, const uint8_t *ad, size_t ad_len,
                                                         uint8_t *ciphertext);

/**
 * Verify and decrypt into a new secure buffer *out (NULL for an empty message).
 * Returns: SPC_OK; SPC_E_AEAD_AUTH (nothing about why); SPC_E_ARGUMENT
 *          (sizes); SPC_E_UNSUPPORTED; SPC_E_NOMEM.
 * Security: no plaintext is released unless the tag verifies; the tag check
 *           is libsodium's constant-time verification.
 */
SPC_MUST_CHECK SPC_NONNULL(2, 3, 5, 9) spc_status spc_aead_open(int alg, spc_buffer *key, const uint8_t *nonce, size_t nonce_len,
                                                         const uint8_t *ciphertext, size_t ciphertext_len, const uint8_t *ad,
                                                         size_t ad_len, spc_buffer **out);

/* ------------------------------------------------------------------------ */
/* Hashing public data (hash.c)                                              */
/* ------------------------------------------------------------------------ */

#define SPC_DIGEST_BYTES 32

/**
 * BLAKE2b-256 of public bytes (integrity checksums of files, identifiers).
 * Not for secrets: use the KDF or AEAD functions for those.
 * Returns: SPC_OK; SPC_E_INIT before spc_init().
 */
SPC_MUST_CHECK SPC_NONNULL(3) spc_status spc_digest(const uint8_t *data, size_t len, uint8_t out[SPC_DIGEST_BYTES]);

/* ------------------------------------------------------------------------ */
/* Oblivious PRF (oprf.c): RFC 9497, modeOPRF (0x00), ristretto255-SHA512    */
/* ------------------------------------------------------------------------ */

#define SPC_OPRF_ELEMENT_BYTES 32 /* a serialized ristretto255 element       */
#define SPC_OPRF_SCALAR_BYTES 32  /* a serialized scalar (blind, server key) */
#define SPC_OPRF_OUTPUT_BYTES 64  /* Finalize's output (SHA-512)             */

/**
 * DeriveKeyPair (RFC 9497 3.2.1): the server's private key `sk` (a 32-byte
 * buffer) from a 32-byte secret `seed` and public `info` (at most 65535 bytes).
 * Returns: SPC_OK; SPC_E_ARGUMENT (sizes; or all 256 counters gave zero:
 *          never in practice); SPC_E_INIT; buffer-open statuses.
 * Security: seed and key stay in secure memory; the only branch is on the
 *           public verdict "the scalar is zero".
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 4) spc_status spc_oprf_derive_key(spc_buffer *seed, const uint8_t *info, size_t info_len,
                                                               spc_buffer *sk);

/** A uniformly random nonzero scalar (a blind) into the 32-byte buffer `scalar`.
 * Returns: SPC_OK; SPC_E_ARGUMENT (size); SPC_E_INIT; buffer-open statuses. */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_oprf_random_scalar(spc_buffer *scalar);

/**
 * Blind (RFC 9497 3.3.1) with a given blind: blinded = blind * HashToGroup(input).
 * `input` is the client's secret input (1 ... 65535 bytes); `blind` a 32-byte
 * nonzero scalar (spc_oprf_random_scalar; fixed only for test vectors).
 * Returns: SPC_OK; SPC_E_ARGUMENT (sizes, or the input hashes to the
 *          identity: InvalidInputError); SPC_E_INIT; buffer-open statuses.
 *          `blinded` is cleared on failure.
 * Security: the blinded element is uniformly distributed whatever the input:
 *           it is safe to send.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3) spc_status spc_oprf_blind(spc_buffer *input, spc_buffer *blind,
                                                            uint8_t blinded[SPC_OPRF_ELEMENT_BYTES]);

/**
 * BlindEvaluate (RFC 9497 3.3.1), on the server: evaluated = sk * blinded.
 * Returns: SPC_OK; SPC_E_ARGUMENT (`blinded` is not a canonical encoding of
 *          a non-identity element: DeserializeError; `sk` not 32 bytes);
 *          SPC_E_INIT; buffer-open statuses. `evaluated` cleared on failure.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3) spc_status spc_oprf_blind_evaluate(spc_buffer *sk,
                                                                     const uint8_t blinded[SPC_OPRF_ELEMENT_BYTES],
                                                                     uint8_t evaluated[SPC_OPRF_ELEMENT_BYTES]);

/**
 * Finalize (RFC 9497 3.3.1): output = SHA-512(len(input) || input || 32 ||
 * blind^-1 * evaluated || "Finalize") into the 64-byte buffer `output`.
 * Returns: SPC_OK; SPC_E_ARGUMENT (sizes; `evaluated` not a valid
 *          non-identity element); SPC_E_INIT; buffer-open statuses. On
 *          failure `output` is left zero.
 * Security: input, blind, the unblinded element and the output never leave
 *           secure memory or wiped stack temporaries.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3, 4) spc_status spc_oprf_finalize(spc_buffer *input, spc_buffer *blind,
                                                                  const uint8_t evaluated[SPC_OPRF_ELEMENT_BYTES],
                                                                  spc_buffer *output);

/* ------------------------------------------------------------------------ */
/* Machine report (for `securepin doctor`)                                  */
/* ------------------------------------------------------------------------ */

typedef struct spc_machine_report {
    int secretmem_available;   /* memfd_secret(2) works right now           */
    int secretmem_errno;       /* errno when it does not (0 otherwise)      */
    int wipeonfork_available;  /* MADV_WIPEONFORK accepted                  */
    int dontdump_available;    /* MADV_DONTDUMP accepted                    */
    uint64_t memlock_soft;     /* RLIMIT_MEMLOCK soft limit, bytes; UINT64_MAX = unlimited */
    uint64_t memlock_hard;
    uint64_t core_soft;        /* RLIMIT_CORE soft limit                    */
    int dumpable;              /* prctl(PR_GET_DUMPABLE)                    */
    int aesni;                 /* AES-256-GCM hardware support (libsodium)  */
    int can_ipc_lock;          /* effective uid 0 / CAP_IPC_LOCK: limit not enforced */
    const char *sodium_version;/* libsodium's version string                */
    unsigned argon2_version;   /* Argon2 version implemented by libargon2 (0x13) */
} spc_machine_report;

/**
 * Probe the machine (each probe maps and unmaps one page).
 * Returns: SPC_OK; SPC_E_INIT before spc_init().
 */
SPC_MUST_CHECK SPC_NONNULL(1) spc_status spc_machine_report_get(spc_machine_report *out);

#ifdef __cplusplus
}
#endif

#endif /* SECURE_CORE_H */
