internal import CSecureCore

// Where two secret objects meet (a comparison, a key and the plaintext it
// seals, an input and the pepper it is derived with), both objects' locks are
// held at once. They are taken in one global order, by object identity, so
// `a.f(b)` racing `b.f(a)` cannot deadlock; the same object given twice is
// locked once (its lock is not re-entrant).

/// A secret object whose C handle is reached under its own lock.
protocol HandleGuarded: AnyObject {
    /// Runs `body` with the live C handle, under the object's lock.
    func withHandle<R>(_ body: (OpaquePointer) throws(SecureCoreError) -> R) throws(SecureCoreError) -> R
}

extension SecureBytes: HandleGuarded {}
extension Password: HandleGuarded {}

/// Runs `body` with the handles of `a` and `b`, both locked, taking the locks
/// in the global order. When `a === b`, `body` gets the one handle twice.
func withHandles<A: HandleGuarded, B: HandleGuarded, R>(
    _ a: A, _ b: B, _ body: (OpaquePointer, OpaquePointer) throws(SecureCoreError) -> R
) throws(SecureCoreError) -> R {
    if a === b {
        return try a.withHandle { (handle) throws(SecureCoreError) -> R in try body(handle, handle) }
    }
    if ObjectIdentifier(a) < ObjectIdentifier(b) {
        return try a.withHandle { (first) throws(SecureCoreError) -> R in
            try b.withHandle { (second) throws(SecureCoreError) -> R in try body(first, second) }
        }
    }
    return try b.withHandle { (second) throws(SecureCoreError) -> R in
        try a.withHandle { (first) throws(SecureCoreError) -> R in try body(first, second) }
    }
}

/// Runs `body` with the handles of every object in `list`, in the order
/// given, all locked. Each object is locked once even if it appears twice,
/// and the locks are taken in the global order, so two threads locking the
/// same set cannot deadlock.
func withHandles<R>(
    _ list: [SecureBytes], _ body: ([OpaquePointer]) throws(SecureCoreError) -> R
) throws(SecureCoreError) -> R {
    var unique: [SecureBytes] = []
    for item in list where !unique.contains(where: { $0 === item }) { unique.append(item) }
    unique.sort { ObjectIdentifier($0) < ObjectIdentifier($1) }
    return try lockChain(unique, from: 0, locked: [:]) { (locked) throws(SecureCoreError) -> R in
        var handles: [OpaquePointer] = []
        for item in list {
            // Every object of `list` is in `unique`, so every one was locked above.
            guard let handle = locked[ObjectIdentifier(item)] else { preconditionFailure("an object was not locked") }
            handles.append(handle)
        }
        return try body(handles)
    }
}

private func lockChain<R>(
    _ unique: [SecureBytes], from index: Int, locked: [ObjectIdentifier: OpaquePointer],
    _ body: ([ObjectIdentifier: OpaquePointer]) throws(SecureCoreError) -> R
) throws(SecureCoreError) -> R {
    guard index < unique.count else { return try body(locked) }
    return try unique[index].withHandle { (handle) throws(SecureCoreError) -> R in
        var next = locked
        next[ObjectIdentifier(unique[index])] = handle
        return try lockChain(unique, from: index + 1, locked: next, body)
    }
}

/// ``withHandles(_:_:_:)`` where the second object is optional (an absent
/// plaintext, no pepper).
func withHandles<A: HandleGuarded, B: HandleGuarded, R>(
    _ a: A, _ b: B?, _ body: (OpaquePointer, OpaquePointer?) throws(SecureCoreError) -> R
) throws(SecureCoreError) -> R {
    guard let b else { return try a.withHandle { (handle) throws(SecureCoreError) -> R in try body(handle, nil) } }
    return try withHandles(a, b) { (first: OpaquePointer, second: OpaquePointer) throws(SecureCoreError) -> R in
        try body(first, second)
    }
}

/// Opens `a` and, when present, `b` for reading, with both locks taken in the
/// global order; a `b` that is absent gives `body` an empty buffer, and a `b`
/// that is `a` itself gives it the same bytes twice. The pages return to
/// no-access when `body` returns; the pointers must not escape.
func withOpenBytes<R>(
    _ a: SecureBytes, _ b: SecureBytes?,
    _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(SecureCoreError) -> R
) throws(SecureCoreError) -> R {
    try withHandles(a, b) { (first: OpaquePointer, second: OpaquePointer?) throws(SecureCoreError) -> R in
        let firstBytes = UnsafeRawBufferPointer(start: try openForReading(first), count: a.count)
        defer { spc_buffer_close(first) }
        guard let second, let b else { return try body(firstBytes, UnsafeRawBufferPointer(start: nil, count: 0)) }
        if second == first { return try body(firstBytes, firstBytes) }
        let secondBytes = UnsafeRawBufferPointer(start: try openForReading(second), count: b.count)
        defer { spc_buffer_close(second) }
        return try body(firstBytes, secondBytes)
    }
}

/// ``withOpenBytes(_:_:_:)`` for one optional buffer (no pepper: an empty buffer).
func withOpenBytes<R>(
    _ secret: SecureBytes?, _ body: (UnsafeRawBufferPointer) throws(SecureCoreError) -> R
) throws(SecureCoreError) -> R {
    guard let secret else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
    return try withOpenBytes(secret, nil) { (bytes, _) throws(SecureCoreError) -> R in try body(bytes) }
}

/// Opens a buffer whose lock the caller holds; the caller closes it (read-write access).
func openForReading(_ buffer: OpaquePointer) throws(SecureCoreError) -> UnsafeMutablePointer<UInt8> {
    var data: UnsafeMutablePointer<UInt8>?
    try check(spc_buffer_open(buffer, &data))
    guard let data else {
        spc_buffer_close(buffer)
        throw .outOfMemory
    }
    return data
}

/// Opens a buffer whose lock the caller holds, for the closure accessors; the
/// caller closes it. A buffer that cannot be opened (the pages' protection
/// could not be changed, or the buffer was inherited across `fork()`) stops
/// the process: the accessors have no error of their own to report it with,
/// and a secret is never handed out unprotected.
func openOrTrap(_ buffer: OpaquePointer) -> UnsafeMutablePointer<UInt8> {
    do throws(SecureCoreError) {
        return try openForReading(buffer)
    } catch {
        fatalError("secure buffer could not be opened: \(error)")
    }
}
