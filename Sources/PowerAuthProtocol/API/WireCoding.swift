import Foundation

/// JSON coding of the API messages, in one place so the client and the
/// server write the same bytes.
public enum WireCoding {
    /// Encodes a message with sorted keys.
    /// - Parameter value: the message.
    /// - Returns: UTF-8 JSON bytes.
    /// - Throws: ``ProtocolError/malformedMessage(reason:)`` if the value cannot be encoded.
    public static func encode(_ value: some Encodable) throws(ProtocolError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw .malformedMessage(reason: "a message could not be encoded")
        }
    }

    /// Decodes a message; any malformed input is a typed error.
    /// - Parameters:
    ///   - type: the message type.
    ///   - bytes: UTF-8 JSON bytes (at most 64 KiB).
    /// - Returns: the message.
    /// - Throws: ``ProtocolError/malformedMessage(reason:)``.
    public static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws(ProtocolError) -> T {
        guard bytes.count <= 1 << 16 else { throw .malformedMessage(reason: "the body is too large") }
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw .malformedMessage(reason: "the body is not the expected JSON")
        }
    }
}
