#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A calendar day (proleptic Gregorian), used as "today" by the date rules of
/// the strength meter.
public struct CalendarDay: Equatable, Hashable, Sendable {
    /// The year, for example 2026.
    public var year: Int
    /// The month, 1 to 12.
    public var month: Int
    /// The day of the month, 1 to 31.
    public var day: Int

    /// Creates a day; the fields are not validated beyond being stored.
    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }
}

/// Tells the strength meter what day it is. Tests and reproducible command
/// runs inject a fixed day; the default reads the system clock.
public protocol TodayProvider: Sendable {
    /// The current day.
    func today() -> CalendarDay
}

/// Today in the local time zone, from `time(2)` and `localtime_r(3)`.
public struct SystemToday: TodayProvider {
    /// Creates the provider.
    public init() {}

    /// The current local day.
    public func today() -> CalendarDay {
        var now = time(nil)
        var parts = tm()
        guard localtime_r(&now, &parts) != nil else { return CalendarDay(year: 1970, month: 1, day: 1) }
        return CalendarDay(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday))
    }
}

/// A fixed "today", for tests and for reproducible checks.
public struct FixedToday: TodayProvider {
    /// The day returned by ``today()``.
    public let day: CalendarDay

    /// Creates a provider that always returns `day`.
    public init(_ day: CalendarDay) { self.day = day }

    /// Returns the fixed day.
    public func today() -> CalendarDay { day }
}
