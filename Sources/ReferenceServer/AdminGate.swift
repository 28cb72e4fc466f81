import Foundation
import SecureCore
import Synchronization

/// The back office's door.
///
/// The configured token is kept only as a fixed-size digest (HMAC-SHA256 keyed
/// with the token over a fixed label); a presented token arrives in secure
/// memory (`HTTPServer.Configuration.secretHeaders`), is digested the same
/// way and compared in constant time, so neither its length nor the position
/// of a first difference shows in the timing. Failed attempts (missing or
/// wrong token) draw on a budget of ``AdminRateLimit/burst`` that refills at
/// one per ``AdminRateLimit/refillInterval``; while it is empty every back-office request is answered
/// 429 without looking at the token, so a guesser learns nothing faster than
/// the refill rate. The cost: a flood of bad tokens also holds the real back
/// office off until the budget refills.
final class AdminGate: Sendable {
    /// What the door says to one request.
    enum Verdict: Equatable {
        /// The token is right.
        case allowed
        /// No token was presented (401).
        case missing
        /// A wrong token, or the back office is off (403).
        case refused
        /// Too many failures lately (429); retry after this many seconds.
        case limited(retryAfterSeconds: Int)
    }

    private static let label = Array("SecurePIN back-office admin token v1".utf8)

    private let expected: [UInt8]?
    private let limit: AdminRateLimit
    private let now: @Sendable () -> ContinuousClock.Instant
    private let budget: Mutex<(available: Double, stamp: ContinuousClock.Instant)>

    /// - Parameters:
    ///   - token: the configured token (at least ``AdminToken/minimumByteCount`` bytes), or
    ///     `nil` for a back office that refuses everything.
    ///   - limit: the failure budget.
    ///   - now: the monotonic clock (tests inject one).
    init(
        token: SecureBytes?, limit: AdminRateLimit = AdminRateLimit(),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) throws(ReferenceServerError) {
        guard limit.burst >= 1, limit.refillInterval > .zero else {
            throw .invalidConfiguration(
                reason: "the admin rate limit needs a burst of at least 1 and a positive interval")
        }
        self.limit = limit
        self.now = now
        if let token {
            guard token.count >= AdminToken.minimumByteCount else {
                throw .invalidConfiguration(
                    reason: "the admin token must be at least \(AdminToken.minimumByteCount) characters (128 bits)")
            }
            do throws(SecureCoreError) {
                expected = try HMACSHA256.authenticate(Self.label, key: token)
            } catch {
                throw .invalidConfiguration(reason: "the admin token could not be read from secure memory")
            }
        } else {
            expected = nil
        }
        budget = Mutex((Double(limit.burst), now()))
    }

    /// Checks a presented token.
    /// - Parameter presented: the header's value in secure memory, or `nil` when absent.
    /// - Returns: the verdict.
    func check(_ presented: SecureBytes?) -> Verdict {
        let instant = now()
        let limit = self.limit
        let waiting = budget.withLock { state -> Int? in
            let elapsed = state.stamp.duration(to: instant) / limit.refillInterval
            state.available = min(Double(limit.burst), state.available + max(0, elapsed))
            state.stamp = instant
            guard state.available >= 1 else {
                let wait = limit.refillInterval * (1 - state.available)
                return Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0)
            }
            // Reserve the attempt now, under the lock, so concurrent failures cannot overdraw
            // the budget; a right token gives it back below.
            state.available -= 1
            return nil
        }
        if let waiting { return .limited(retryAfterSeconds: max(1, waiting)) }
        let verdict: Verdict
        if let presented {
            let digest = try? HMACSHA256.authenticate(Self.label, key: presented)
            if let expected, let digest, ConstantTime.isEqual(expected, digest) {
                verdict = .allowed
            } else {
                verdict = .refused
            }
        } else {
            verdict = .missing
        }
        if verdict == .allowed { budget.withLock { $0.available = min(Double(limit.burst), $0.available + 1) } }
        return verdict
    }
}

/// How many failed back-office attempts are allowed: a burst, refilled at one per interval.
public struct AdminRateLimit: Sendable, Equatable {
    /// Failed attempts allowed at once (default 10).
    public var burst: Int
    /// One more failed attempt is allowed per interval (default 1 s).
    public var refillInterval: Duration

    /// Creates a limit.
    /// - Parameters:
    ///   - burst: failed attempts allowed at once, at least 1.
    ///   - refillInterval: the time that gives one attempt back, positive.
    public init(burst: Int = 10, refillInterval: Duration = .seconds(1)) {
        self.burst = burst
        self.refillInterval = refillInterval
    }
}
