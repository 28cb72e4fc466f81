import SecureCore

/// Test data as a password: the literal is test data, not a user's PIN.
public func password(_ text: String) throws -> Password {
    let mutable = try MutablePassword()
    defer { mutable.destroy() }
    for scalar in text.unicodeScalars { try mutable.addCharacter(scalar) }
    return try mutable.copyToImmutable()
}

/// Whether a password holds exactly `text`.
public func holds(_ candidate: Password, _ text: String) throws -> Bool {
    let expected = try password(text)
    defer { expected.destroy() }
    return try candidate.isEqual(to: expected)
}

/// The i-th marker character for `seed`: letters only, computed, never stored, so a memory
/// dump that finds the marker found it in the process under test, not in the test's own data.
/// The helper process and the tests that search its memory share this one derivation.
public func markerScalar(seed: UInt64, index: Int) -> UInt32 {
    var x = seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15
    x = (x ^ (x >> 31)) &* 0xBF58_476D_1CE4_E5B9
    x ^= x >> 29
    let letter = UInt32(x % 52)
    return letter < 26 ? 0x41 + letter : 0x61 + letter - 26
}

/// A PIN as a password (test data).
public func pin(_ digits: String) throws -> Password { try password(digits) }

/// Test data as a secret in secure memory.
public func secret(_ text: String) throws -> SecureBytes {
    try Array(text.utf8).withUnsafeBytes { try SecureBytes(copying: $0) }
}

/// A secret's bytes as text, for comparing with test data.
public func text(_ secret: SecureBytes) -> String {
    secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}
