import PinStrength
import SecureCore

/// Test data as a password: the literal is test data, not a user's PIN.
func password(_ text: String) throws -> Password {
    let mutable = try MutablePassword()
    defer { mutable.destroy() }
    for scalar in text.unicodeScalars { try mutable.addCharacter(scalar) }
    return try mutable.copyToImmutable()
}

/// Whether a password holds exactly `text`.
func holds(_ candidate: Password, _ text: String) throws -> Bool {
    let expected = try password(text)
    defer { expected.destroy() }
    return try candidate.isEqual(to: expected)
}

/// Today for the date rule of the check path: the year window is 1926–2036.
let today = FixedToday(CalendarDay(year: 2026, month: 11, day: 30))
