import SecureCore

/// The failure counter, kept in its own small file beside the vault so the
/// vault file itself is rewritten only when its content changes. It is
/// written (and fsynced) *before* every key derivation and reset only after
/// a success. Its last 32 bytes are an HMAC under a key derived from the key
/// file's record key and, when the vault has one, the pepper: editing the
/// counter needs those keys, not just a recomputed checksum.
struct FailureRecord: Equatable {
    static let magic: [UInt8] = Array("SPCFAIL2".utf8)
    static let size = 8 + 16 + 4 + 1 + 16 + 8 + 8 + 32

    var vaultID: [UInt8]
    /// Consecutive failures since the last success.
    var failures: UInt32
    /// The boot in which `bootStamp` was taken.
    var bootID: [UInt8]
    /// CLOCK_BOOTTIME (ns) of the last failure, or of the first moment this
    /// boot saw the record: the current delay runs from here.
    var bootStamp: UInt64
    /// Wall-clock seconds (CLOCK_REALTIME) taken with `bootStamp`. A time
    /// namespace can move CLOCK_BOOTTIME but not this clock, so the two
    /// are compared (``reconcileClocks(_:)``) and the smaller elapsed time counts.
    var wallStamp: UInt64

    /// How far the two clocks may disagree about the time elapsed since the
    /// stamps (NTP slew, the one-second resolution of the wall clock) before
    /// the stamps are distrusted: the larger of this and 1 % of the elapsed time.
    static let clockToleranceSeconds: UInt64 = 120

    static func fresh(vaultID: [UInt8], clock: any VaultClock) -> FailureRecord {
        FailureRecord(
            vaultID: vaultID, failures: 0, bootID: clock.bootID(), bootStamp: clock.nanosecondsSinceBoot(),
            wallStamp: clock.wallSeconds())
    }

    func encode(key: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        var w = ByteWriter()
        w.bytes(FailureRecord.magic)
        w.bytes(vaultID)
        w.u32(failures)
        w.u8(0)
        w.bytes(bootID)
        w.u64(bootStamp)
        w.u64(wallStamp)
        return w.out + (try HMACSHA256.authenticate(w.out, key: key))
    }

    static func decode(_ bytes: [UInt8], vaultID: [UInt8], key: SecureBytes) throws(VaultError) -> FailureRecord {
        guard bytes.count == size else { throw .damaged(reason: "failure record has the wrong size") }
        guard Array(bytes.prefix(magic.count)) == magic else { throw .damaged(reason: "failure record magic") }
        guard Array(bytes[magic.count..<magic.count + 16]) == vaultID else {
            throw .damaged(reason: "failure record belongs to another vault")
        }
        let mac: [UInt8]
        do { mac = try HMACSHA256.authenticate(Array(bytes.prefix(size - 32)), key: key) } catch {
            throw .secureCore(error)
        }
        guard ConstantTime.isEqual(mac, Array(bytes.suffix(32))) else {
            throw .damaged(reason: "the failure record does not authenticate (edited, or opened with another pepper)")
        }
        var r = ByteReader(bytes)
        r.skip(magic.count + 16)
        let failures = r.u32()!
        guard r.u8() == 0 else { throw .damaged(reason: "failure record reserved byte") }
        return FailureRecord(
            vaultID: vaultID, failures: failures, bootID: r.bytes(16)!, bootStamp: r.u64()!, wallStamp: r.u64()!)
    }

    /// Re-stamps the record from now when its stamps cannot be trusted, and
    /// says whether it did. That is after a reboot (another boot id: the
    /// current delay starts again), and, while failures are recorded, on a
    /// clock anomaly: either clock behind its stamp (`now < stamp` is not
    /// "no time elapsed", which would freeze the countdown for good), or the
    /// two clocks disagreeing about the time elapsed (a time namespace moved
    /// CLOCK_BOOTTIME, or the wall clock was set). An anomaly restarts the
    /// current delay from now: it can delay an attempt, never advance one.
    mutating func reconcileClocks(_ clock: any VaultClock) -> Bool {
        let boot = clock.bootID()
        let nowBoot = clock.nanosecondsSinceBoot()
        let nowWall = clock.wallSeconds()
        var trusted = bootID == boot
        if trusted && failures > 0 {
            if nowBoot < bootStamp || nowWall < wallStamp {
                trusted = false
            } else {
                let bootElapsed = (nowBoot - bootStamp) / 1_000_000_000
                let wallElapsed = nowWall - wallStamp
                let disagreement = bootElapsed > wallElapsed ? bootElapsed - wallElapsed : wallElapsed - bootElapsed
                trusted = disagreement <= max(FailureRecord.clockToleranceSeconds, min(bootElapsed, wallElapsed) / 100)
            }
        }
        guard !trusted else { return false }
        bootID = boot
        bootStamp = nowBoot
        wallStamp = nowWall
        return true
    }

    /// Seconds until the next attempt is allowed (0 = now), after
    /// ``reconcileClocks(_:)``: the smaller of the two clocks' elapsed times
    /// counts, and a clock behind its stamp counts as no time at all.
    func remainingDelay(policy: ThrottlePolicy, clock: any VaultClock) -> UInt64 {
        let delay = policy.delaySeconds(afterFailures: Int(failures))
        guard delay > 0 else { return 0 }
        let nowBoot = clock.nanosecondsSinceBoot()
        let nowWall = clock.wallSeconds()
        guard nowBoot >= bootStamp, nowWall >= wallStamp else { return delay }
        let elapsed = min((nowBoot - bootStamp) / 1_000_000_000, nowWall - wallStamp)
        return elapsed >= delay ? 0 : delay - elapsed
    }
}
