internal import CSecureCore

/// Process-wide facts and switches of the secure-page pool.
public enum SecureMemory {
    /// Counters of the pool that backs every secret allocation.
    public struct Statistics: Sendable, Equatable {
        /// Mappings (slabs) the pool holds.
        public var slabs: Int
        /// Slabs whose pages are locked (mlock or secret memory).
        public var lockedSlabs: Int
        /// Slabs backed by `memfd_secret`.
        public var secretMemorySlabs: Int
        /// Live allocations.
        public var allocations: Int
        /// Bytes of locked pages held.
        public var lockedBytes: Int
    }

    /// A snapshot of the pool's counters.
    /// - Throws: ``SecureCoreError/initializationFailed``.
    public static func statistics() throws(SecureCoreError) -> Statistics {
        try CoreRuntime.ensureReady()
        var s = spc_pool_stats()
        try check(spc_pool_stats_get(&s))
        return Statistics(
            slabs: s.slabs, lockedSlabs: s.slabs_locked, secretMemorySlabs: s.slabs_secretmem,
            allocations: s.slots_in_use, lockedBytes: s.locked_bytes)
    }

    /// Runs `body` as one request scope of the calling thread: a server's way to answer a request
    /// without two `mprotect` calls (and a TLB shootdown) for every short-lived secret it touches.
    ///
    /// Inside the scope, ``SecureBytes`` made on this thread come from a separate scratch pool
    /// (never a page that holds a secret made outside a scope), and a scratch page whose last
    /// use ends stays readable until the scope ends (up to 8 pages per thread; more close as
    /// usual), when every such page returns to no-access and empty ones are unmapped. Locking,
    /// guard pages, canaries, wiping and fork protection are unchanged; secrets made outside a
    /// scope, and ``Password`` objects, behave exactly as without one; a secret that outlives
    /// the scope is no-access when idle from then on. Scopes nest (the outermost end releases).
    ///
    /// The closure is synchronous, so the scope begins and ends on one thread. Keep it short:
    /// the trade is a window of readable pages as long as the scope (see `docs/security.md`).
    /// - Parameter body: the work of one request.
    /// - Returns: what `body` returns.
    /// - Throws: only what `body` throws.
    public static func withRequestScope<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        // Without a working core, no scope: `body`'s own secrets then fail as they would anyway.
        let begun = CoreRuntime.isReady && spc_scope_begin() == SPC_OK
        defer { if begun { spc_scope_end() } }
        return try body()
    }

    /// Zeroes memory the caller owns in a way the optimiser cannot remove (`sodium_memzero`
    /// through the C core): for a plain Swift local that briefly held a secret byte. A
    /// `defer { byte = 0 }` is a dead store the optimiser may delete; this is not.
    /// - Parameter bytes: the memory to zero.
    public static func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        spc_wipe(base, bytes.count)
    }

    /// Zeroes a value in place (see ``wipe(_:)-(UnsafeMutableRawBufferPointer)``); afterwards
    /// it holds all-zero bits.
    /// - Parameter value: a plain value (an integer, a fixed-size tuple of them).
    public static func wipe<T: BitwiseCopyable>(_ value: inout T) {
        withUnsafeMutableBytes(of: &value) { wipe($0) }
    }

    /// Hardens the whole process as ssh-agent does: no core dump (the core limit goes to 0,
    /// soft and hard) and not dumpable, so processes of the same user can no longer ptrace it
    /// or read its `/proc/PID/mem`. Call it once, early, in any process that will hold secrets
    /// (`securepin` does, for every command); Argon2id's work memory from libsodium is ordinary
    /// memory, and this is what keeps it out of core dumps and same-user memory reads.
    ///
    /// Lasts for the process's life and is inherited by `fork()` children; any `execve` and
    /// any change of user or group id make the process dumpable again, so call it after
    /// dropping privileges. Root and `CAP_SYS_PTRACE` are not stopped. Does not lock memory
    /// against swap: that is ``MemoryProtection/locked`` per buffer, or encrypted swap.
    /// - Throws: ``SecureCoreError/unsupported`` when the kernel refuses (a core limit already
    ///   lowered stays lowered), and on systems other than Linux.
    public static func hardenProcess() throws(SecureCoreError) {
        try check(spc_harden_process())
    }

    /// Turns `memfd_secret` backing on or off for slabs created from now on.
    /// Secret memory is on by default where the kernel offers it; turn it off
    /// for a process that must hibernate, or to test the fallback path.
    /// - Throws: ``SecureCoreError/initializationFailed``.
    public static func setSecretMemoryEnabled(_ enabled: Bool) throws(SecureCoreError) {
        try CoreRuntime.ensureReady()
        try check(spc_pool_set_secretmem(enabled ? 1 : 0))
    }

    /// What this machine can protect, probed with real system calls.
    /// - Throws: ``SecureCoreError/initializationFailed``.
    public static func machineReport() throws(SecureCoreError) -> MachineReport {
        try CoreRuntime.ensureReady()
        var r = spc_machine_report()
        try check(spc_machine_report_get(&r))
        func limit(_ v: UInt64) -> UInt64? { v == UInt64.max ? nil : v }
        return MachineReport(
            secretMemoryAvailable: r.secretmem_available != 0,
            secretMemoryErrno: Int(r.secretmem_errno),
            wipeOnForkAvailable: r.wipeonfork_available != 0,
            dontDumpAvailable: r.dontdump_available != 0,
            memlockSoftLimit: limit(r.memlock_soft),
            memlockHardLimit: limit(r.memlock_hard),
            coreSoftLimit: limit(r.core_soft),
            dumpable: r.dumpable == 1,
            memlockLimitEnforced: r.can_ipc_lock == 0,
            aesHardware: r.aesni != 0,
            sodiumVersion: String(cString: r.sodium_version),
            argon2Version: UInt32(r.argon2_version))
    }
}

/// The result of ``SecureMemory/machineReport()``. Nothing in it is secret.
public struct MachineReport: Sendable, Equatable, Codable {
    /// `memfd_secret(2)` works in this process right now.
    public var secretMemoryAvailable: Bool
    /// The `errno` when it does not (0 when it does).
    public var secretMemoryErrno: Int
    /// `MADV_WIPEONFORK` is accepted.
    public var wipeOnForkAvailable: Bool
    /// `MADV_DONTDUMP` is accepted.
    public var dontDumpAvailable: Bool
    /// `RLIMIT_MEMLOCK` soft limit in bytes; `nil` when unlimited.
    public var memlockSoftLimit: UInt64?
    /// `RLIMIT_MEMLOCK` hard limit in bytes; `nil` when unlimited.
    public var memlockHardLimit: UInt64?
    /// `RLIMIT_CORE` soft limit in bytes; `nil` when unlimited (0 = no core files).
    public var coreSoftLimit: UInt64?
    /// The process may be dumped (`PR_GET_DUMPABLE`).
    public var dumpable: Bool
    /// `false` for root, whose locked memory the kernel does not limit.
    public var memlockLimitEnforced: Bool
    /// AES-GCM runs in hardware (AES-NI and PCLMUL), as libsodium detects it.
    public var aesHardware: Bool
    /// libsodium's version string.
    public var sodiumVersion: String
    /// The Argon2 version libargon2 implements (0x13 = 1.3, RFC 9106).
    public var argon2Version: UInt32
}
