/// What the vault does after failed PIN attempts. The policy is stored in the
/// vault header and bound into every slot's authentication, so editing it
/// makes every PIN fail.
public enum ThrottlePolicy: Sendable, Hashable, Codable {
    /// Growing delays between attempts, then a permanent lock at `maxFailures`.
    /// The default schedule follows Android Gatekeeper's newer table: no delay
    /// for the first 4 failures, then 1, 5, 15, 30 and 90 minutes, then
    /// 3^(n−5) minutes, and no attempts at all after 20 failures.
    case soft(maxFailures: Int = 20)
    /// No delays; locked after `maxFailures` (only destroy and re-enrol help).
    case hard(maxFailures: Int)
    /// No delays; the vault is destroyed after `maxFailures` (for example 10).
    case wipe(maxFailures: Int)

    /// Failures after which no attempt is possible (locked, or wiped).
    public var maxFailures: Int {
        switch self {
        case .soft(let n), .hard(let n), .wipe(let n): n
        }
    }

    /// The delay, in seconds, imposed after the `failures`-th consecutive failure.
    public func delaySeconds(afterFailures failures: Int) -> UInt64 {
        guard case .soft = self else { return 0 }
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

    var kind: UInt8 {
        switch self {
        case .soft: 1
        case .hard: 2
        case .wipe: 3
        }
    }

    init?(kind: UInt8, maxFailures: Int) {
        guard maxFailures >= 1 else { return nil }
        switch kind {
        case 1: self = .soft(maxFailures: maxFailures)
        case 2: self = .hard(maxFailures: maxFailures)
        case 3: self = .wipe(maxFailures: maxFailures)
        default: return nil
        }
    }
}
