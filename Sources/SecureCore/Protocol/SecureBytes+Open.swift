// Opening secure buffers for the protocol primitives: the one place in the
// Protocol folder where a secret's address is obtained.
internal import CSecureCore

extension SecureBytes {
    /// Runs `body` with the address of the open buffer (typed errors).
    /// The pointer must not escape `body`.
    func withOpenPointer<R>(
        _ body: (UnsafeMutablePointer<UInt8>) throws(SecureCoreError) -> R
    ) throws(SecureCoreError) -> R {
        try withHandle { (buffer) throws(SecureCoreError) -> R in
            var data: UnsafeMutablePointer<UInt8>?
            try check(spc_buffer_open(buffer, &data))
            defer { spc_buffer_close(buffer) }
            guard let data else { throw .outOfMemory }
            return try body(data)
        }
    }

    /// Requires an exact size (every protocol key has one).
    func require(count expected: Int) throws(SecureCoreError) {
        guard count == expected else { throw .sizeMismatch(expected: expected, actual: count) }
    }
}

/// Opens several buffers at once and hands `body` their addresses in the
/// order given. Each object is opened once even if it appears twice (its lock
/// is not re-entrant), and objects are opened in a fixed global order (by
/// identity), so two threads opening the same set cannot deadlock.
func withOpenPointers<R>(
    _ list: [SecureBytes],
    _ body: ([UnsafeMutablePointer<UInt8>]) throws(SecureCoreError) -> R
) throws(SecureCoreError) -> R {
    var unique: [SecureBytes] = []
    for item in list where !unique.contains(where: { $0 === item }) { unique.append(item) }
    unique.sort { ObjectIdentifier($0) < ObjectIdentifier($1) }
    return try openChain(unique, from: 0, opened: [:]) { (opened) throws(SecureCoreError) -> R in
        var pointers: [UnsafeMutablePointer<UInt8>] = []
        for item in list {
            guard let pointer = opened[ObjectIdentifier(item)] else { throw .internalFailure(status: 0) }
            pointers.append(pointer)
        }
        return try body(pointers)
    }
}

private func openChain<R>(
    _ unique: [SecureBytes], from index: Int, opened: [ObjectIdentifier: UnsafeMutablePointer<UInt8>],
    _ body: ([ObjectIdentifier: UnsafeMutablePointer<UInt8>]) throws(SecureCoreError) -> R
) throws(SecureCoreError) -> R {
    guard index < unique.count else { return try body(opened) }
    return try unique[index].withOpenPointer { (pointer) throws(SecureCoreError) -> R in
        var next = opened
        next[ObjectIdentifier(unique[index])] = pointer
        return try openChain(unique, from: index + 1, opened: next, body)
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
