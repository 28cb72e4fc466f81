/// What the vault does after failed PIN attempts. The policy is stored in the
/// vault header and bound into every slot's authentication, so editing it
/// makes every PIN fail.
public enum ThrottlePolicy: Sendable, Hashable, Codable {
    /// Growing delays between attempts, then a permanent lock at `maxFailures`.
    /// The default schedule follows Android Gatekeeper's newer table: no delay
    /// for the first 4 failures, then 1, 5, 15, 30 and 90 minutes, then
    /// 3^(n−5) minutes, and no attempts at all after 20 failures.
    case soft(maxFailures: Int = 20)
    /// Delays from the vault's own `schedule` (for example the PIN-vault scheme's 30 s, then
    /// 5 min, then 30 min), then a permanent lock at `maxFailures` like ``soft(maxFailures:)``.
    /// Written as vault format version 6 (`docs/vault-format.md`).
    case softSchedule(LockoutSchedule, maxFailures: Int = 20)
    /// No delays; locked after `maxFailures` (only destroy and re-enrol help).
    case hard(maxFailures: Int)
    /// No delays; the vault is destroyed after `maxFailures` (for example 10).
    case wipe(maxFailures: Int)

    /// Failures after which no attempt is possible (locked, or wiped).
    public var maxFailures: Int {
        switch self {
        case .soft(let n), .softSchedule(_, let n), .hard(let n), .wipe(let n): n
        }
    }

    /// The delay, in seconds, imposed after the `failures`-th consecutive failure.
    public func delaySeconds(afterFailures failures: Int) -> UInt64 {
        switch self {
        case .hard, .wipe: return 0
        case .softSchedule(let schedule, _): return schedule.delaySeconds(afterFailures: failures)
        case .soft: break
        }
        switch failures {
        case ..<5: return 0
        case 5: return 60
        case 6: return 5 * 60
        case 7: return 15 * 60
        case 8: return 30 * 60
        case 9: return 90 * 60
        default:
            var minutes: UInt64 = 1
            for _ in 0..<min(failures - 5, 20) { minutes *= 3 }
            return minutes * 60
        }
    }

    /// The schedule of a ``softSchedule(_:maxFailures:)`` policy, nil for every other.
    public var schedule: LockoutSchedule? {
        if case .softSchedule(let schedule, _) = self { return schedule }
        return nil
    }

    /// Checks what the enum cannot: a limit of 1 … 65,535 failures, and a schedule whose first
    /// delay comes before the limit (otherwise its delays would never apply).
    ///
    /// - Throws: ``VaultError/invalidPolicy(reason:)``.
    public func validate() throws(VaultError) {
        guard (1...Int(UInt16.max)).contains(maxFailures) else {
            throw .invalidPolicy(reason: "the failure limit must be from 1 to 65535, not \(maxFailures)")
        }
        if let schedule, schedule.freeFailures >= maxFailures {
            throw .invalidPolicy(
                reason: "the first delay comes after \(schedule.freeFailures) failures, "
                    + "but the vault locks after \(maxFailures): the delays would never apply")
        }
    }

    var kind: UInt8 {
        switch self {
        case .soft: 1
        case .hard: 2
        case .wipe: 3
        case .softSchedule: 4
        }
    }

    init?(kind: UInt8, maxFailures: Int, schedule: LockoutSchedule?) {
        guard maxFailures >= 1, (kind == 4) == (schedule != nil) else { return nil }
        switch (kind, schedule) {
        case (1, _): self = .soft(maxFailures: maxFailures)
        case (2, _): self = .hard(maxFailures: maxFailures)
        case (3, _): self = .wipe(maxFailures: maxFailures)
        case (4, let schedule?): self = .softSchedule(schedule, maxFailures: maxFailures)
        default: return nil
        }
        guard (try? validate()) != nil else { return nil }
    }
}

/// A soft lockout schedule: how many failures pass without a delay, then the delays after
/// each further failure, the last one repeating. `5:30s,5m,30m` (the PIN-vault scheme's) lets
/// five failures pass, then waits 30 seconds after the fifth, 5 minutes after the sixth and
/// 30 minutes after the seventh and every later one.
///
/// A schedule is checked when it is made and when it is decoded, so every value in the
/// program is one a vault can record.
public struct LockoutSchedule: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Most delays a schedule holds.
    public static let maximumDelayCount = 16
    /// Longest single delay: 30 days, in seconds.
    public static let maximumDelaySeconds: UInt32 = 30 * 24 * 3600
    /// Most failures before the first delay.
    public static let maximumFreeFailures = 1000

    /// Failures that pass without a delay; the first delay follows the failure with this number.
    public let freeFailures: Int
    /// The delays, in seconds, after failure `freeFailures`, `freeFailures + 1`, …; the last repeats.
    public let delays: [UInt32]

    /// A schedule from its parts.
    ///
    /// - Parameters:
    ///   - freeFailures: failures before the first delay, 1 … ``maximumFreeFailures``.
    ///   - delays: 1 … ``maximumDelayCount`` delays in seconds, each 1 … ``maximumDelaySeconds``.
    /// - Throws: ``VaultError/invalidPolicy(reason:)`` for anything out of range.
    public init(freeFailures: Int, delays: [UInt32]) throws(VaultError) {
        guard (1...Self.maximumFreeFailures).contains(freeFailures) else {
            throw .invalidPolicy(
                reason: "the failures before the first delay must be from 1 to \(Self.maximumFreeFailures)")
        }
        guard (1...Self.maximumDelayCount).contains(delays.count) else {
            throw .invalidPolicy(reason: "a schedule has 1 to \(Self.maximumDelayCount) delays")
        }
        guard delays.allSatisfy({ (1...Self.maximumDelaySeconds).contains($0) }) else {
            throw .invalidPolicy(reason: "each delay must be from 1 second to 30 days")
        }
        self.freeFailures = freeFailures
        self.delays = delays
    }

    /// Parses `F:D1,D2,…` where `F` is the failures before the first delay and each delay is
    /// a whole number with a unit: `s`, `m`, `h` or `d` (`5:30s,5m,30m`).
    ///
    /// - Parameter text: the schedule, as `securepin vault init --policy soft:…` takes it.
    /// - Throws: ``VaultError/invalidPolicy(reason:)`` naming what is wrong.
    public init(parsing text: String) throws(VaultError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let free = Int(parts[0]), parts[0].allSatisfy(\.isASCII) else {
            throw .invalidPolicy(reason: "a schedule is FAILURES:DELAY,DELAY,… such as 5:30s,5m,30m")
        }
        var delays: [UInt32] = []
        for item in parts[1].split(separator: ",", omittingEmptySubsequences: false) {
            guard delays.count < Self.maximumDelayCount else {
                throw .invalidPolicy(reason: "a schedule has 1 to \(Self.maximumDelayCount) delays")
            }
            delays.append(try Self.parseDelay(item))
        }
        try self.init(freeFailures: free, delays: delays)
    }

    /// `5:30s,5m,30m`: the spelling ``init(parsing:)`` reads, with the largest whole unit of each delay.
    public var description: String {
        "\(freeFailures):" + delays.map(Self.formatDelay).joined(separator: ",")
    }

    /// The delay, in seconds, after the `failures`-th consecutive failure.
    public func delaySeconds(afterFailures failures: Int) -> UInt64 {
        guard failures >= freeFailures else { return 0 }
        return UInt64(delays[min(failures - freeFailures, delays.count - 1)])
    }

    /// Decodes a schedule and checks it as ``init(freeFailures:delays:)`` does.
    ///
    /// - Parameter decoder: the decoder.
    /// - Throws: `DecodingError.dataCorrupted` for a schedule out of range.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let free = try container.decode(Int.self, forKey: .freeFailures)
        let delays = try container.decode([UInt32].self, forKey: .delays)
        do { try self.init(freeFailures: free, delays: delays) } catch {
            throw DecodingError.dataCorruptedError(
                forKey: .delays, in: container, debugDescription: "not a valid lockout schedule")
        }
    }

    static func parseDelay(_ item: Substring) throws(VaultError) -> UInt32 {
        let units: [Character: UInt64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        guard let unit = item.last, let scale = units[unit], item.dropLast().allSatisfy({ $0.isASCII && $0.isNumber }),
            let value = UInt64(item.dropLast())
        else {
            throw .invalidPolicy(
                reason: "a delay is a whole number with s, m, h or d, such as 30s or 5m, not '\(item)'")
        }
        let (seconds, overflow) = value.multipliedReportingOverflow(by: scale)
        guard !overflow, (1...UInt64(maximumDelaySeconds)).contains(seconds) else {
            throw .invalidPolicy(reason: "each delay must be from 1 second to 30 days, not '\(item)'")
        }
        return UInt32(seconds)
    }

    /// `30s`, `5m`, `2h`, `1d`: a delay in the largest whole unit, as ``init(parsing:)`` reads it.
    ///
    /// - Parameter seconds: the delay.
    /// - Returns: its spelling.
    public static func formatDelay(_ seconds: UInt32) -> String {
        for (unit, scale) in [("d", UInt32(86400)), ("h", 3600), ("m", 60)] where seconds % scale == 0 {
            return "\(seconds / scale)\(unit)"
        }
        return "\(seconds)s"
    }
}
