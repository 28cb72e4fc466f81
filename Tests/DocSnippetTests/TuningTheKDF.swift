import SecureCore
import Testing

// snippet.begin tuning-the-kdf
/// Finds Argon2id parameters that take about `milliseconds` here, never below the floor.
func tunedParameters(milliseconds: Double) throws(SecureCoreError) -> Argon2id.Parameters {
    let result = try KDFCalibrator(targetMilliseconds: milliseconds, maxMemoryKiB: 256 * 1024).calibrate()
    // result.backend and result.measuredMilliseconds say how it was measured.
    let floor = Argon2id.Parameters.owaspMinimum
    return Argon2id.Parameters(
        memoryKiB: max(result.parameters.memoryKiB, floor.memoryKiB),
        iterations: max(result.parameters.iterations, floor.iterations),
        parallelism: result.parameters.parallelism)
}
// snippet.end

// snippet.begin deriving-a-key
/// Derives a 32-byte key from a PIN; the salt is public and stored beside the parameters.
func deriveKey(from pin: Password, parameters: Argon2id.Parameters) throws(SecureCoreError) -> SecureBytes {
    let salt = try SecureRandom.bytes(count: 16)
    return try Argon2id.deriveKey(from: pin, salt: salt, parameters: parameters)
}
// snippet.end

@Test("article: tuning the KDF") func tuningTheKDF() throws {
    let parameters = try tunedParameters(milliseconds: 20)
    #expect(parameters.memoryKiB >= Argon2id.Parameters.owaspMinimum.memoryKiB)
    let pin = try snippetPIN("2468")
    defer { pin.destroy() }
    #expect(try deriveKey(from: pin, parameters: .owaspMinimum).count == 32)
}

/// A PIN for the tests (the articles show how a real one is collected).
func snippetPIN(_ digits: String) throws -> Password {
    let pin = try MutablePassword()
    defer { pin.destroy() }
    for scalar in digits.unicodeScalars { try pin.addCharacter(scalar) }
    return try pin.copyToImmutable()
}
