import SecureCore

/// Test data as a password: the literal is test data, not a user's PIN.
func password(_ text: String) throws -> Password {
    let mutable = try MutablePassword()
    defer { mutable.destroy() }
    for scalar in text.unicodeScalars { try mutable.addCharacter(scalar) }
    return try mutable.copyToImmutable()
}
