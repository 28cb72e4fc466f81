import Foundation

/// The time source of the service and the server: the current wall-clock
/// time (block expiry, credential lifetime) and a sleep (status polling).
/// Tests inject a clock they move by hand.
public protocol ActivationClock: Sendable {
    /// The current time.
    func now() -> Date
    /// Suspends for `duration`.
    /// - Throws: `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The system clock and `Task.sleep`.
public struct SystemActivationClock: ActivationClock {
    /// Creates the system clock.
    public init() {}
    /// `Date()`.
    public func now() -> Date { Date() }
    /// `Task.sleep(for:)`.
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}
