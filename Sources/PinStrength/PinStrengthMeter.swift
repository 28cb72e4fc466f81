import SecureCore

/// Measures a numeric PIN's weaknesses on the secure buffer itself: the PIN
/// is revealed only inside `Password.withUnsafeUTF8Bytes`, every rule reads
/// the digits in place, and nothing is copied into a string or an array.
///
/// ```swift
/// let meter = PinStrengthMeter()
/// let report = try meter.evaluate(pinCopy)          // a Password
/// switch PinWarningPolicy().verdict(for: report) { … }
/// ```
///
/// Rules and blocklists are documented in `docs/pin-strength.md`.
public struct PinStrengthMeter: Sendable {
    /// How many years before today a four-digit year still reads as a date.
    public let yearsBack: Int
    /// How many years after today a four-digit year still reads as a date.
    public let yearsAhead: Int
    private let today: any TodayProvider

    /// Creates a meter.
    /// - Parameters:
    ///   - today: what day it is (default: the system clock).
    ///   - yearsBack: years before today that count as dates (default 100,
    ///     a lifetime of birth years).
    ///   - yearsAhead: years after today that count as dates (default 10).
    public init(today: any TodayProvider = SystemToday(), yearsBack: Int = 100, yearsAhead: Int = 10) {
        self.today = today
        self.yearsBack = max(0, yearsBack)
        self.yearsAhead = max(0, yearsAhead)
    }

    /// The four-digit years that read as dates today.
    public var yearWindow: ClosedRange<Int> {
        let year = today.today().year
        return (year - yearsBack)...(year + yearsAhead)
    }

    /// Evaluates an immutable PIN.
    /// - Parameter pin: the PIN; it is only read.
    /// - Returns: the length and the weaknesses.
    /// - Throws: ``PinStrengthError/characterNotAllowed`` if the PIN holds
    ///   anything but ASCII digits, ``PinStrengthError/empty`` for an empty PIN.
    public func evaluate(_ pin: Password) throws(PinStrengthError) -> PinStrengthReport {
        let day = today.today()
        let years = yearWindow
        return try pin.withUnsafeUTF8Bytes { (buffer) throws(PinStrengthError) in
            try Self.evaluate(buffer: buffer, today: day, years: years)
        }
    }

    /// Evaluates a PIN still being edited, through a short-lived immutable
    /// copy that is destroyed before returning.
    /// - Parameter pin: the PIN; it is only read.
    /// - Returns: the length and the weaknesses.
    /// - Throws: as ``evaluate(_:)-(Password)``, and
    ///   ``PinStrengthError/secureMemory(_:)`` if the copy cannot be made.
    public func evaluate(_ pin: MutablePassword) throws(PinStrengthError) -> PinStrengthReport {
        let copy: Password
        do { copy = try pin.copyToImmutable() } catch { throw PinStrengthError(error) }
        defer { copy.destroy() }
        return try evaluate(copy)
    }

    static func evaluate(
        buffer: UnsafeRawBufferPointer, today: CalendarDay,
        years: ClosedRange<Int>
    ) throws(PinStrengthError) -> PinStrengthReport {
        guard buffer.count > 0 else { throw .empty }
        guard buffer.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { throw .characterNotAllowed }
        let digits = Digits(ascii: buffer)
        var flags: PinWeaknesses = []
        if DigitRules.isNotUnique(digits) { flags.insert(.notUnique) }
        if DigitRules.isRepeating(digits) { flags.insert(.repeating) }
        if DigitRules.isPattern(digits) { flags.insert(.pattern) }
        if DigitRules.isPossiblyDate(digits, today: today, years: years) { flags.insert(.possiblyDate) }
        if digits.count == 4 || digits.count == 6 {
            var value = digits.number(from: 0, length: digits.count)
            if PinBlocklist.contains(value, length: digits.count) { flags.insert(.frequentlyUsed) }
            value = 0
            _ = value
        }
        return PinStrengthReport(length: buffer.count, weaknesses: flags)
    }
}
