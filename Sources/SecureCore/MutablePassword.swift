internal import CSecureCore

/// A password or PIN being typed, held as Unicode code points scrambled with
/// a random pad in secure memory. Every edit draws a new pad and re-scrambles
/// the content; the plaintext never exists as a Swift `String`, `Array` or
/// `Data`, and never in memory as a whole.
///
/// Create one when the PIN screen appears and ``destroy()`` it when the
/// screen disappears; hand the SDK an immutable copy
/// (``copyToImmutable()``), so the screen can ``clear()`` its own after a
/// failed attempt without affecting a running operation.
///
/// ```swift
/// let pin = try MutablePassword()
/// try pin.addCharacter(0x31)           // "1"
/// try pin.addCharacter("2" as Unicode.Scalar)
/// let immutable = try pin.copyToImmutable()
/// pin.destroy()
/// ```
///
/// Concurrency: not `Sendable`. A mutable password belongs to the one screen
/// (one isolation domain) that edits it; to cross a boundary, pass a
/// ``Password`` from ``copyToImmutable()``.
public final class MutablePassword {
    private var handle: OpaquePointer?

    /// Creates an empty password.
    /// - Throws: ``SecureCoreError/outOfMemory``, ``SecureCoreError/initializationFailed``.
    public init() throws(SecureCoreError) {
        try CoreRuntime.ensureReady()
        var created: OpaquePointer?
        try check(spc_password_new(&created))
        handle = created
    }

    deinit { spc_password_free(handle) }

    /// Number of characters (code points); 0 once destroyed. Not secret: a
    /// PIN screen shows one dot per character.
    public var length: Int { handle.map { Int(spc_password_length($0)) } ?? 0 }

    /// Whether ``destroy()`` has been called.
    public var isDestroyed: Bool { handle == nil }

    /// What the operating system granted this password's memory (empty once
    /// destroyed).
    public var protection: MemoryProtection {
        handle.map { MemoryProtection(rawValue: UInt32(spc_password_protection($0))) } ?? []
    }

    /// Appends a character given as a Unicode code point.
    /// - Parameter codePoint: a Unicode scalar value (not a surrogate, at most U+10FFFF).
    /// - Throws: ``SecureCoreError/invalidCodePoint``, ``SecureCoreError/tooLong(maximum:)``,
    ///   ``SecureCoreError/destroyed``; the password is unchanged on error.
    public func addCharacter(_ codePoint: UInt32) throws(SecureCoreError) {
        let pw = try live()
        try check(spc_password_add(pw, codePoint))
    }

    /// Appends a character given as a Unicode scalar.
    /// - Throws: as ``addCharacter(_:)-(UInt32)``.
    public func addCharacter(_ scalar: Unicode.Scalar) throws(SecureCoreError) {
        try addCharacter(scalar.value)
    }

    /// Inserts a character before position `index` (`0 ... length`).
    /// - Throws: ``SecureCoreError/indexOutOfRange(index:length:)`` and the
    ///   errors of ``addCharacter(_:)-(UInt32)``; unchanged on error.
    public func insertCharacter(_ codePoint: UInt32, at index: Int) throws(SecureCoreError) {
        let pw = try live()
        guard index >= 0 else { throw .indexOutOfRange(index: index, length: length) }
        try check(spc_password_insert(pw, index, codePoint), index: index, length: length)
    }

    /// Inserts a Unicode scalar before position `index`.
    /// - Throws: as ``insertCharacter(_:at:)-(UInt32,_)``.
    public func insertCharacter(_ scalar: Unicode.Scalar, at index: Int) throws(SecureCoreError) {
        try insertCharacter(scalar.value, at: index)
    }

    /// Removes the character at `index` (`0 ..< length`).
    /// - Throws: ``SecureCoreError/indexOutOfRange(index:length:)``, ``SecureCoreError/destroyed``.
    public func removeCharacter(at index: Int) throws(SecureCoreError) {
        let pw = try live()
        guard index >= 0 else { throw .indexOutOfRange(index: index, length: length) }
        try check(spc_password_remove(pw, index), index: index, length: length)
    }

    /// Removes the last character.
    /// - Throws: ``SecureCoreError/indexOutOfRange(index:length:)`` when empty,
    ///   ``SecureCoreError/destroyed``.
    public func removeLastCharacter() throws(SecureCoreError) {
        let pw = try live()
        try check(spc_password_remove_last(pw), index: -1, length: 0)
    }

    /// Wipes the content; the object stays usable and empty.
    /// - Throws: ``SecureCoreError/destroyed``, ``SecureCoreError/outOfMemory``.
    public func clear() throws(SecureCoreError) {
        try check(spc_password_clear(try live()))
    }

    /// Compares with another password in constant time (lengths are public).
    /// - Returns: `true` when both hold the same characters.
    /// - Throws: ``SecureCoreError/destroyed`` if either was destroyed.
    public func isEqual(to other: MutablePassword) throws(SecureCoreError) -> Bool {
        try PasswordHandle.equal(try live(), try other.live())
    }

    /// Compares with an immutable password in constant time.
    /// - Returns: `true` when both hold the same characters.
    /// - Throws: ``SecureCoreError/destroyed`` if either was destroyed.
    public func isEqual(to other: Password) throws(SecureCoreError) -> Bool {
        let mine = try live()
        return try other.withHandle { (theirs) throws(SecureCoreError) in try PasswordHandle.equal(mine, theirs) }
    }

    /// Makes an independent immutable copy (with its own pad) to hand to an
    /// operation; clearing or destroying this object does not affect it.
    /// - Returns: the copy.
    /// - Throws: ``SecureCoreError/destroyed``, ``SecureCoreError/outOfMemory``.
    public func copyToImmutable() throws(SecureCoreError) -> Password {
        Password(handle: try PasswordHandle.copy(try live()))
    }

    /// Wipes and releases the memory now; later edits throw
    /// ``SecureCoreError/destroyed``. Calling it twice is harmless.
    public func destroy() {
        spc_password_free(handle)
        handle = nil
    }

    func live() throws(SecureCoreError) -> OpaquePointer {
        guard let handle else { throw .destroyed }
        return handle
    }
}

// MARK: - Redacted descriptions

extension MutablePassword: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `MutablePassword(4 characters, redacted)`: the length, never the content.
    public var description: String {
        isDestroyed ? "MutablePassword(destroyed)" : "MutablePassword(\(length) characters, redacted)"
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror that shows the length only.
    public var customMirror: Mirror { Mirror(self, children: ["length": length], displayStyle: .class) }
}

/// C calls shared by the two password types.
enum PasswordHandle {
    static func equal(_ a: OpaquePointer, _ b: OpaquePointer) throws(SecureCoreError) -> Bool {
        var equal: Int32 = 0
        try check(spc_password_equal(a, b, &equal))
        return equal == 1
    }

    static func copy(_ source: OpaquePointer) throws(SecureCoreError) -> OpaquePointer {
        var copy: OpaquePointer?
        try check(spc_password_copy(source, &copy))
        guard let copy else { throw .outOfMemory }
        return copy
    }
}
