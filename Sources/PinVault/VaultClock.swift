#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The time sources the throttle uses. Delays are measured on a boot-time
/// clock tied to a boot identifier, and on the wall clock: only the smaller
/// of the two elapsed times counts. An unprivileged user can offset the
/// boot-time clock for processes in a time namespace (`unshare --time`) but
/// cannot change the wall clock, and setting the wall clock does not move the
/// boot-time clock; when the two disagree, or either is behind its stamp, the
/// current delay restarts from now. After a reboot it also starts again.
public protocol VaultClock: Sendable {
    /// An identifier of the current boot (16 bytes).
    func bootID() -> [UInt8]
    /// Nanoseconds since boot, including suspend (CLOCK_BOOTTIME).
    func nanosecondsSinceBoot() -> UInt64
    /// Wall-clock seconds since 1970 (CLOCK_REALTIME): compared with the
    /// boot-time clock, and shown as `next_attempt_at`.
    func wallSeconds() -> UInt64
}

/// The machine's clocks: `/proc/sys/kernel/random/boot_id` and CLOCK_BOOTTIME.
public struct SystemVaultClock: VaultClock {
    /// Creates the system clock.
    public init() {}

    /// The kernel's boot identifier, parsed from its UUID text.
    public func bootID() -> [UInt8] {
        let fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY)
        guard fd >= 0 else { return [UInt8](repeating: 0, count: 16) }
        defer { close(fd) }
        var text = [UInt8](repeating: 0, count: 64)
        let n = read(fd, &text, text.count)
        var out: [UInt8] = []
        var pending: UInt8?
        for c in text.prefix(max(0, n)) {
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x61...0x66: v = c - 0x61 + 10
            default: continue
            }
            if let hi = pending {
                out.append(hi << 4 | v)
                pending = nil
            } else {
                pending = v
            }
        }
        return out.count == 16 ? out : [UInt8](repeating: 0, count: 16)
    }

    /// CLOCK_BOOTTIME in nanoseconds (CLOCK_MONOTONIC where it does not exist).
    public func nanosecondsSinceBoot() -> UInt64 {
        var ts = timespec()
        #if os(Linux)
            clock_gettime(CLOCK_BOOTTIME, &ts)
        #else
            clock_gettime(CLOCK_MONOTONIC, &ts)
        #endif
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Seconds since 1970.
    public func wallSeconds() -> UInt64 { UInt64(max(0, time(nil))) }
}
