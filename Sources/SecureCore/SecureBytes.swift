internal import CSecureCore
import Synchronization

/// A fixed-size secret (a key, a revealed password, a seed) held in memory
/// from the C core's secure-page pool: locked where the budget allows,
/// excluded from core dumps, hidden from forked children, guarded, and
/// no-access between uses. Wiped when destroyed or deinitialised.
///
/// The bytes are reachable only inside ``withUnsafeBytes(_:)`` and
/// ``withUnsafeMutableBytes(_:)``; there is no `Data` or `Array` getter, and
/// the type is neither `Codable` nor `Hashable`. Compare with
/// ``isEqual(to:)``, which runs in constant time.
///
/// Concurrency: `Sendable`. An internal lock serialises every use, so two
/// tasks may share one instance; the closures run while the lock is held, so
/// a closure must not call back into the same instance.
public final class SecureBytes: @unchecked Sendable {
    private let handle: Mutex<LockedHandle>

    /// The size in bytes (not secret). Unchanged by ``destroy()``.
    public let count: Int

    /// Creates `count` zero bytes in secure memory.
    /// - Parameter count: 1 byte to 16 MiB.
    /// - Throws: ``SecureCoreError/invalidSize(_:)``, ``SecureCoreError/outOfMemory``.
    public convenience init(count: Int) throws(SecureCoreError) {
        try self.init(count: count, lasting: false)
    }

    /// Creates `count` zero bytes that may outlive the request scope they are made in (a cache
    /// entry): never on a scratch slab that another thread's open scope holds readable
    /// (`SecureMemory.withRequestScope`). Outside a scope the same as ``init(count:)``.
    /// - Parameters:
    ///   - count: 1 byte to 16 MiB.
    ///   - lasting: `true` to keep the bytes out of the scratch pool.
    /// - Throws: as ``init(count:)``.
    package init(count: Int, lasting: Bool) throws(SecureCoreError) {
        try CoreRuntime.ensureReady()
        guard count > 0, count <= Int(SPC_BUFFER_MAX) else { throw .invalidSize(count) }
        var buffer: OpaquePointer?
        try check(lasting ? spc_buffer_new_lasting(count, &buffer) : spc_buffer_new(count, &buffer), length: count)
        self.count = count
        self.handle = Mutex(LockedHandle(pointer: buffer))
    }

    /// Creates `count` bytes from the operating system's CSPRNG.
    /// - Throws: as ``init(count:)``.
    public static func random(count: Int) throws(SecureCoreError) -> SecureBytes {
        let bytes = try SecureBytes(count: count)
        try bytes.withHandle { buffer throws(SecureCoreError) in try check(spc_buffer_randomize(buffer)) }
        return bytes
    }

    /// Copies bytes the caller already holds (test vectors, a key read from a
    /// file). The caller remains responsible for wiping its own copy.
    /// - Throws: as ``init(count:)``.
    public convenience init(copying source: UnsafeRawBufferPointer) throws(SecureCoreError) {
        try self.init(count: source.count)
        try withHandle { buffer throws(SecureCoreError) in
            var data: UnsafeMutablePointer<UInt8>?
            try check(spc_buffer_open(buffer, &data))
            defer { spc_buffer_close(buffer) }
            UnsafeMutableRawBufferPointer(start: data, count: source.count).copyMemory(from: source)
        }
    }

    /// Takes ownership of a buffer the C core allocated.
    init(adopting buffer: OpaquePointer) {
        self.count = spc_buffer_size(buffer)
        self.handle = Mutex(LockedHandle(pointer: buffer))
    }

    deinit {
        handle.withLock { buffer in
            spc_buffer_free(buffer.pointer)
            buffer.pointer = nil
        }
    }

    /// Wipes and releases the memory now. Calling it twice is harmless. Later,
    /// the closure accessors stop the process (a precondition) and the
    /// operations that throw throw ``SecureCoreError/destroyed``.
    public func destroy() {
        handle.withLock { buffer in
            spc_buffer_free(buffer.pointer)
            buffer.pointer = nil
        }
    }

    /// Whether ``destroy()`` has been called.
    public var isDestroyed: Bool { handle.withLock { $0.pointer == nil } }

    /// What the operating system granted this buffer (empty once destroyed).
    public var protection: MemoryProtection {
        handle.withLock { buffer in
            buffer.pointer.map { MemoryProtection(rawValue: UInt32(spc_buffer_protection($0))) } ?? []
        }
    }

    /// Runs `body` with read access to the bytes; the pages return to
    /// no-access when it returns. Do not let the pointer escape.
    ///
    /// Precondition: the object is not destroyed. Using a destroyed object is
    /// a programming error and stops the process, as does a failure of the
    /// operating system to make the pages readable (as in the C core: a secret
    /// that cannot be protected or reached is never carried on silently).
    /// - Returns: what `body` returns.
    /// - Throws: only what `body` throws.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withUnsafeMutableBytes { (bytes) throws(E) -> R in try body(UnsafeRawBufferPointer(bytes)) }
    }

    /// Runs `body` with read-write access to the bytes.
    ///
    /// Precondition: as ``withUnsafeBytes(_:)``.
    /// - Returns: what `body` returns.
    /// - Throws: only what `body` throws.
    public func withUnsafeMutableBytes<R, E: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let result: Result<R, E> = handle.withLock { locked in
            guard let buffer = locked.pointer else { preconditionFailure("SecureBytes used after destroy()") }
            let data = openOrTrap(buffer)
            defer { spc_buffer_close(buffer) }
            do throws(E) {
                return .success(try body(UnsafeMutableRawBufferPointer(start: data, count: count)))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// A copy in new secure memory; the two are independent (destroying one
    /// leaves the other).
    /// - Returns: the copy.
    /// - Throws: ``SecureCoreError/outOfMemory``; ``SecureCoreError/destroyed`` if this
    ///   object was destroyed.
    public func copy() throws(SecureCoreError) -> SecureBytes {
        try copy(lasting: false)
    }

    /// A copy that may outlive the request scope it is made in (see ``init(count:lasting:)``).
    /// - Parameter lasting: `true` to keep the copy out of the scratch pool.
    /// - Returns: the copy.
    /// - Throws: as ``copy()``.
    package func copy(lasting: Bool) throws(SecureCoreError) -> SecureBytes {
        let out = try SecureBytes(count: count, lasting: lasting)
        try withHandles(self, out) { (source, target) throws(SecureCoreError) in
            let from = try openForReading(source)
            defer { spc_buffer_close(source) }
            let to = try openForReading(target)
            defer { spc_buffer_close(target) }
            to.update(from: from, count: count)
        }
        return out
    }

    /// Compares contents in constant time.
    /// - Returns: `true` when both have the same size and the same bytes.
    /// - Throws: ``SecureCoreError/destroyed`` if either was destroyed.
    public func isEqual(to other: SecureBytes) throws(SecureCoreError) -> Bool {
        if other === self { return try withHandle { _ throws(SecureCoreError) in true } }
        // Both locks in the global order: `a.isEqual(b)` racing `b.isEqual(a)` cannot deadlock.
        return try withHandles(self, other) { (mine, theirs) throws(SecureCoreError) -> Bool in
            var equal: Int32 = 0
            try check(spc_buffer_equal(mine, theirs, &equal))
            return equal == 1
        }
    }

    /// Runs `body` with the live C handle, under the lock.
    func withHandle<R>(_ body: (OpaquePointer) throws(SecureCoreError) -> R) throws(SecureCoreError) -> R {
        let result: Result<R, SecureCoreError> = handle.withLock { locked in
            guard let buffer = locked.pointer else { return .failure(.destroyed) }
            do throws(SecureCoreError) { return .success(try body(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

// MARK: - Redacted descriptions

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `SecureBytes(32 bytes, redacted)`: the size, never the content.
    public var description: String { "SecureBytes(\(count) bytes, redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror that shows the size only.
    public var customMirror: Mirror { Mirror(self, children: ["count": count], displayStyle: .class) }
}
