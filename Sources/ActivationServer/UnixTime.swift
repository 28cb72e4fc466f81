import Foundation

/// Times as whole seconds since 1970, converted without traps.
///
/// Every stored or configured time that becomes a number on the wire goes
/// through ``seconds(_:)``: a value a back office or an old database can hold
/// must never crash an endpoint (security review M2: `Int64(date)` of a block
/// end near `Int64.max` trapped on every status request, again after restart).
public enum UnixTime {
    /// The latest block end accepted: 9999-12-31T23:59:59Z.
    public static let latestSeconds: Int64 = 253_402_300_799
    /// The longest failure block a server may be configured with: 100 years.
    public static let longestBlockDuration: TimeInterval = 100 * 365.25 * 86_400

    /// `date` as whole seconds since 1970, rounded down and clamped to
    /// `0 ... latestSeconds`; a NaN date gives 0.
    /// - Parameter date: the time.
    /// - Returns: the seconds.
    public static func seconds(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970
        guard value.isFinite else { return value > 0 ? latestSeconds : 0 }
        if value <= 0 { return 0 }
        if value >= Double(latestSeconds) { return latestSeconds }
        return Int64(value.rounded(.down))
    }

    /// Checks a block end a back office asks for: after `now`, not after ``latestSeconds``.
    /// - Parameters:
    ///   - end: the requested end.
    ///   - now: the current time.
    /// - Throws: ``ActivationServerError/malformedRequest(reason:)`` outside that range.
    public static func validateBlockEnd(_ end: Date, now: Date) throws(ActivationServerError) {
        let value = end.timeIntervalSince1970
        guard value.isFinite, end > now, value <= Double(latestSeconds) else {
            throw .malformedRequest(reason: "blockedUntil must be a time after now and before the year 10000")
        }
    }

    /// Checks a configured failure-block duration: `nil`, or finite and in `1 s ... 100 years`.
    /// - Parameter duration: the duration.
    /// - Throws: ``ActivationServerError/invalidConfiguration(reason:)``.
    public static func validateBlockDuration(_ duration: TimeInterval?) throws(ActivationServerError) {
        guard let duration else { return }
        guard duration.isFinite, duration >= 1, duration <= longestBlockDuration else {
            throw .invalidConfiguration(reason: "the failure block must last 1 second ... 100 years")
        }
    }
}
