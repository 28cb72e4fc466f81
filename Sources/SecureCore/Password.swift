internal import CSecureCore
import Synchronization

/// An immutable password handed to an operation (a key derivation, an
/// authentication). Its content is scrambled in secure memory and revealed as
/// UTF-8 only inside ``withUnsafeUTF8Bytes(_:)``, in a temporary secure buffer
/// that is wiped as soon as the closure returns.
///
/// Build it with ``MutablePassword/copyToImmutable()`` or from UTF-8 bytes
/// already in secure memory (``init(utf8:count:)``). ``secureClear()`` wipes the
/// content early; ``destroy()`` wipes and releases it.
///
/// Concurrency: `Sendable`. The content cannot change except through
/// ``secureClear()``/``destroy()``, and an internal lock serialises the C
/// calls, so one instance may be handed to another task (for example a KDF
/// running off the caller's executor).
public final class Password: @unchecked Sendable {
    private let handle: Mutex<LockedHandle>

    init(handle: OpaquePointer) {
        self.handle = Mutex(LockedHandle(pointer: handle))
    }

    /// Copies a mutable password (same as ``MutablePassword/copyToImmutable()``).
    /// - Throws: ``SecureCoreError/destroyed``, ``SecureCoreError/outOfMemory``.
    public convenience init(_ mutable: MutablePassword) throws(SecureCoreError) {
        self.init(handle: try PasswordHandle.copy(try mutable.live()))
    }

    /// Decodes UTF-8 bytes held in secure memory (for example a password read
    /// from a descriptor into ``SecureBytes``). `bytes` is left untouched.
    /// - Parameters:
    ///   - bytes: the buffer holding the UTF-8 text.
    ///   - count: how many leading bytes to use (default: all).
    /// - Throws: ``SecureCoreError/malformedUTF8``, ``SecureCoreError/tooLong(maximum:)``,
    ///   ``SecureCoreError/destroyed``, ``SecureCoreError/invalidSize(_:)``.
    public convenience init(utf8 bytes: SecureBytes, count: Int? = nil) throws(SecureCoreError) {
        let used = count ?? bytes.count
        guard used >= 0, used <= bytes.count else { throw .invalidSize(used) }
        let created = try bytes.withHandle { (buffer) throws(SecureCoreError) -> OpaquePointer in
            var password: OpaquePointer?
            try check(spc_password_from_utf8(buffer, used, &password))
            guard let password else { throw .outOfMemory }
            return password
        }
        self.init(handle: created)
    }

    deinit {
        handle.withLock { pw in
            spc_password_free(pw.pointer)
            pw.pointer = nil
        }
    }

    /// Number of characters (code points); 0 once cleared or destroyed.
    public var length: Int { handle.withLock { pw in pw.pointer.map { Int(spc_password_length($0)) } ?? 0 } }

    /// Whether ``destroy()`` has been called.
    public var isDestroyed: Bool { handle.withLock { $0.pointer == nil } }

    /// What the operating system granted this password's memory.
    public var protection: MemoryProtection {
        handle.withLock { pw in pw.pointer.map { MemoryProtection(rawValue: UInt32(spc_password_protection($0))) } ?? []
        }
    }

    /// Runs `body` with the password as UTF-8 bytes in a temporary secure
    /// buffer, then wipes the buffer. An empty password gives an empty buffer.
    /// Do not copy the bytes out of the closure.
    ///
    /// Precondition: the password is not destroyed. Using a destroyed password
    /// is a programming error and stops the process, as does a failure to
    /// allocate or open the temporary secure buffer (the C core's rule: a
    /// secret is never carried on unprotected).
    /// - Returns: what `body` returns.
    /// - Throws: only what `body` throws.
    public func withUnsafeUTF8Bytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        // Reveal under the lock, run the closure outside it: the closure may
        // use this password again without deadlocking.
        let (revealed, count) = handle.withLock { (locked) -> (LockedHandle, Int) in
            guard let pw = locked.pointer else { preconditionFailure("Password used after destroy()") }
            var buffer: OpaquePointer?
            var length = 0
            let status = spc_password_reveal(pw, &buffer, &length)
            guard status == SPC_OK else {
                fatalError("password could not be revealed: \(String(cString: spc_status_name(status)))")
            }
            return (LockedHandle(pointer: buffer), length)
        }
        guard let buffer = revealed.pointer else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        defer { spc_buffer_free(buffer) }
        let data = openOrTrap(buffer)
        defer { spc_buffer_close(buffer) }
        return try body(UnsafeRawBufferPointer(start: data, count: count))
    }

    /// Compares with another password in constant time (lengths are public).
    /// - Returns: `true` when both hold the same characters.
    /// - Throws: ``SecureCoreError/destroyed`` if either was destroyed.
    public func isEqual(to other: Password) throws(SecureCoreError) -> Bool {
        if other === self { return try withHandle { _ throws(SecureCoreError) in true } }
        // Both locks in the global order: `a.isEqual(b)` racing `b.isEqual(a)` cannot deadlock.
        return try withHandles(self, other) { (mine, theirs) throws(SecureCoreError) in
            try PasswordHandle.equal(mine, theirs)
        }
    }

    /// Wipes the content now; the object stays valid and empty. Use it when
    /// an operation is done with the password but the object lives on.
    public func secureClear() {
        handle.withLock { pw in
            guard let live = pw.pointer else { return }
            if spc_password_clear(live) != SPC_OK {
                // Pages could not be opened to wipe them: release, which
                // wipes or aborts, rather than leave the content in place.
                spc_password_free(live)
                pw.pointer = nil
            }
        }
    }

    /// Wipes and releases the memory now. Calling it twice is harmless. Later,
    /// ``withUnsafeUTF8Bytes(_:)`` stops the process (a precondition) and the
    /// operations that throw throw ``SecureCoreError/destroyed``.
    public func destroy() {
        handle.withLock { pw in
            spc_password_free(pw.pointer)
            pw.pointer = nil
        }
    }

    /// Runs `body` with the live C handle, under the lock.
    func withHandle<R>(_ body: (OpaquePointer) throws(SecureCoreError) -> R) throws(SecureCoreError) -> R {
        let result: Result<R, SecureCoreError> = handle.withLock { locked in
            guard let pw = locked.pointer else { return .failure(.destroyed) }
            do throws(SecureCoreError) { return .success(try body(pw)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

// MARK: - Redacted descriptions

extension Password: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `Password(6 characters, redacted)`: the length, never the content.
    public var description: String {
        isDestroyed ? "Password(destroyed)" : "Password(\(length) characters, redacted)"
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror that shows the length only.
    public var customMirror: Mirror { Mirror(self, children: ["length": length], displayStyle: .class) }
}
