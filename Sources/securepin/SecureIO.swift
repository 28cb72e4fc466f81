import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Moving secrets between descriptors and secure memory without a Swift
/// `String`, `Array` or `Data` in between.
enum SecureIO {
    /// Largest secret read from a descriptor.
    static let maximumSecretBytes = 4096

    enum Failure: Error {
        case tooLong
        case readFailed(Int32)
        /// Writing the secret out failed with this errno.
        case writeFailed(Int32)
    }

    /// Reads everything from `fd` (up to ``maximumSecretBytes``) into secure
    /// memory. Returns the buffer and how many bytes are valid.
    static func readAll(from fd: Int32, maximum: Int = maximumSecretBytes) throws -> (buffer: SecureBytes, count: Int) {
        let buffer = try SecureBytes(count: maximum + 1)
        let count = try buffer.withUnsafeMutableBytes { raw -> Int in
            var total = 0
            while total < raw.count {
                let n = read(fd, raw.baseAddress! + total, raw.count - total)
                if n == 0 { break }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw Failure.readFailed(errno)
                }
                total += n
            }
            return total
        }
        guard count <= maximum else { throw Failure.tooLong }
        return (buffer, count)
    }

    /// Writes the raw bytes of `secret` to `fd`.
    static func writeRaw(_ secret: SecureBytes, to fd: Int32) throws(Failure) {
        try secret.withUnsafeBytes { (bytes) throws(Failure) in
            var done = 0
            while done < bytes.count {
                let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw Failure.writeFailed(errno)
                }
                done += n
            }
        }
    }

    /// Writes the bytes of `secret`, encoded, to `fd` followed by a newline.
    /// The encoding is produced inside secure memory.
    static func writeEncoded(_ secret: SecureBytes, as encoding: Encoding, to fd: Int32 = 1) throws {
        let length = encoding == .hex ? secret.count * 2 : (secret.count * 4 + 2) / 3
        let text = try SecureBytes(count: length + 1)
        secret.withUnsafeBytes { input in
            text.withUnsafeMutableBytes { output in
                switch encoding {
                case .hex: hex(input, into: output)
                case .base64NoPadding: base64(input, into: output)
                }
                output[length] = 0x0A
                _ = write(fd, output.baseAddress!, output.count)
            }
        }
        text.destroy()
    }

    enum Encoding { case hex, base64NoPadding }

    /// Lower-case hex; digits computed with masks, never looked up by a secret nibble.
    static func hex(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        for (i, byte) in input.enumerated() {
            output[2 * i] = ConstantTimeEncoding.hexDigit(byte >> 4)
            output[2 * i + 1] = ConstantTimeEncoding.hexDigit(byte & 0x0F)
        }
    }

    /// Standard Base64 alphabet without padding (as in PHC strings); characters computed with
    /// masks, never looked up by a secret sextet. Branches depend on lengths only.
    static func base64(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        var o = 0
        var i = 0
        while i < input.count {
            let b0 = UInt32(input[i])
            let b1 = i + 1 < input.count ? UInt32(input[i + 1]) : 0
            let b2 = i + 2 < input.count ? UInt32(input[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            let produced = min(4, (input.count - i) * 4 / 3 + ((input.count - i) * 4 % 3 == 0 ? 0 : 1))
            for k in 0..<produced {
                output[o + k] = ConstantTimeEncoding.base64Character(UInt8((v >> (18 - 6 * UInt32(k))) & 0x3F))
            }
            o += produced
            i += 3
        }
    }
}

/// Base64 without padding for public bytes (salts).
func base64NoPadding(_ bytes: [UInt8]) -> String {
    var out = [UInt8](repeating: 0, count: (bytes.count * 4 + 2) / 3)
    bytes.withUnsafeBytes { input in out.withUnsafeMutableBytes { SecureIO.base64(input, into: $0) } }
    return String(decoding: out, as: UTF8.self)
}
