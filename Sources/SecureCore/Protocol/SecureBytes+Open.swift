// Opening a secure buffer in Swift (only `folded()` still needs it: the
// protocol primitives take the handles and open them on the C side), and the
// public-bytes plumbing of the protocol wrappers.
internal import CSecureCore

extension SecureBytes {
    /// Runs `body` with the address of the open buffer (typed errors).
    /// The pointer must not escape `body`.
    func withOpenPointer<R>(
        _ body: (UnsafeMutablePointer<UInt8>) throws(SecureCoreError) -> R
    ) throws(SecureCoreError) -> R {
        try withHandle { (buffer) throws(SecureCoreError) -> R in
            let data = try openForReading(buffer)
            defer { spc_buffer_close(buffer) }
            return try body(data)
        }
    }

    /// Requires an exact size (every protocol key has one).
    func require(count expected: Int) throws(SecureCoreError) {
        guard count == expected else { throw .sizeMismatch(expected: expected, actual: count) }
    }
}

/// Runs `body` with the address and count of a public byte array (never nil,
/// even for an empty array, so C's non-null contracts hold).
func withPublicBytes<R>(
    _ bytes: [UInt8], _ body: (UnsafePointer<UInt8>, Int) throws(SecureCoreError) -> R
) throws(SecureCoreError) -> R {
    let result: Result<R, SecureCoreError> = bytes.withUnsafeBufferPointer { buffer in
        do throws(SecureCoreError) {
            if let base = buffer.baseAddress { return .success(try body(base, buffer.count)) }
            var zero: UInt8 = 0
            return .success(try body(&zero, 0))
        } catch { return .failure(error) }
    }
    return try result.get()
}

/// Creates a public byte array of `count` bytes (at least 1) and lets `body`
/// fill it through a pointer.
func makePublicBytes(
    count: Int, _ body: (UnsafeMutablePointer<UInt8>) throws(SecureCoreError) -> Void
) throws(SecureCoreError) -> [UInt8] {
    guard count > 0 else { throw .invalidSize(count) }
    var output = [UInt8](repeating: 0, count: count)
    let result: Result<Void, SecureCoreError> = output.withUnsafeMutableBufferPointer { buffer in
        guard let base = buffer.baseAddress else { return .failure(.invalidSize(count)) }
        do throws(SecureCoreError) {
            try body(base)
            return .success(())
        } catch { return .failure(error) }
    }
    try result.get()
    return output
}
