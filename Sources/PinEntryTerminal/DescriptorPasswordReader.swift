import PinEntry
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a PIN or password from a file descriptor for scripts
/// (`--pin-fd N`): `read(2)` one byte at a time through an incremental UTF-8
/// decoder straight into a `MutablePassword`, up to the first line feed or
/// carriage return or the end of input. The line ending is not part of the
/// password, and bytes after it are left unread in the descriptor.
///
/// Bad input is refused as a whole and nothing is kept: the password is
/// destroyed before the error is thrown.
public struct DescriptorPasswordReader: Sendable {
    /// The descriptor to read.
    public let descriptor: Int32
    /// The accepted characters and length.
    public let format: PinFormat

    /// Creates a reader; the descriptor is not touched until ``readPassword()``.
    /// - Parameters:
    ///   - descriptor: an open, readable descriptor (not closed by the reader).
    ///   - format: the accepted characters and length.
    public init(descriptor: Int32, format: PinFormat) {
        self.descriptor = descriptor
        self.format = format
    }

    /// Reads one line.
    /// - Returns: an immutable copy of what was read; destroy it when done.
    /// - Throws: ``PinEntryTerminalError/characterNotAllowed`` (a non-digit for a
    ///   numeric format, a control character), ``PinEntryTerminalError/malformedInput``
    ///   (ill-formed UTF-8), ``PinEntryTerminalError/tooLong(maximum:)``,
    ///   ``PinEntryTerminalError/tooShort(minimum:)``, ``PinEntryTerminalError/readFailed(errno:)``,
    ///   ``PinEntryTerminalError/secureMemory(_:)``.
    @inline(never)  // one symbol, so the release audit can see its wipes (make audit-wipes)
    public func readPassword() throws(PinEntryTerminalError) -> Password {
        let pin: MutablePassword
        do { pin = try MutablePassword() } catch { throw PinEntryTerminalError(error) }
        defer { pin.destroy() }
        var decoder = UTF8StreamDecoder()
        defer { decoder.wipe() }
        let policy = format.lengthPolicy
        var byte: UInt8 = 0
        // Not `byte = 0`: the optimiser deletes that dead store (review L6).
        defer { SecureMemory.wipe(&byte) }
        reading: while true {
            let count = read(descriptor, &byte, 1)
            if count < 0 {
                if errno == EINTR { continue }
                throw .readFailed(errno: errno)
            }
            if count == 0 { break }
            if !decoder.isPending && (byte == 0x0A || byte == 0x0D) { break reading }
            switch decoder.feed(byte) {
            case .pending:
                continue
            case .invalid:
                throw .malformedInput
            case .scalar(let scalar):
                guard format.accepts(scalar) else { throw .characterNotAllowed }
                guard pin.length < policy.maximum else { throw .tooLong(maximum: policy.maximum) }
                do { try pin.addCharacter(scalar) } catch { throw PinEntryTerminalError(error) }
            }
        }
        guard !decoder.isPending else { throw .malformedInput }
        guard pin.length >= policy.minimum else { throw .tooShort(minimum: policy.minimum) }
        do { return try pin.copyToImmutable() } catch { throw PinEntryTerminalError(error) }
    }
}
