import Foundation
import SecureCore
import Synchronization

/// The back office's door.
///
/// The configured token is kept only as a fixed-size digest (HMAC-SHA256 keyed
/// with the token over a fixed label); a presented token arrives in secure
/// memory (``HTTPServer/Configuration/secretHeaders``), is digested the same
/// way and compared in constant time, so neither its length nor the position
/// of a first difference shows in the timing. Failed attempts (missing or
/// wrong token) draw on a budget of ``burst`` that refills at one per
/// ``refillInterval``; while it is empty every back-office request is answered
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

    /// Failed attempts allowed in a burst.
    static let burst = 10
    /// One more failed attempt is allowed per interval.
    static let refillInterval = Duration.seconds(1)
    private static let label = Array("SecurePIN back-office admin token v1".utf8)

    private let expected: [UInt8]?
    private let budget: Mutex<(available: Double, stamp: ContinuousClock.Instant)>

    /// - Parameter token: the configured token (at least ``AdminToken/minimumByteCount``
    ///   bytes), or `nil` for a back office that refuses everything.
    init(token: SecureBytes?) throws(ReferenceServerError) {
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
        budget = Mutex((Double(Self.burst), ContinuousClock.now))
    }

    /// Checks a presented token.
    /// - Parameter presented: the header's value in secure memory, or `nil` when absent.
    /// - Returns: the verdict.
    func check(_ presented: SecureBytes?) -> Verdict {
        let now = ContinuousClock.now
        let waiting = budget.withLock { state -> Int? in
            let elapsed = state.stamp.duration(to: now) / Self.refillInterval
            state.available = min(Double(Self.burst), state.available + max(0, elapsed))
            state.stamp = now
            guard state.available >= 1 else { return Int((1 - state.available).rounded(.up)) }
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
        if verdict != .allowed { budget.withLock { $0.available = max(0, $0.available - 1) } }
        return verdict
    }
}
