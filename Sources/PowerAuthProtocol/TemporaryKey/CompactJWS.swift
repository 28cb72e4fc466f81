import Foundation

/// A JWS in compact serialization, `B64URL(header).B64URL(payload).B64URL(signature)`,
/// split but not verified. The signing input is the first two segments exactly as
/// received, so a verifier never re-encodes what it checks.
struct CompactJWS: Sendable {
    /// Longest token accepted (characters), far above any temporary-key JWT.
    static let maximumLength = 8192

    /// The header's `alg`.
    let algorithm: String
    /// The header's `typ`, if present.
    let type: String?
    /// `B64URL(header) ‖ "." ‖ B64URL(payload)`, as ASCII bytes.
    let signingInput: [UInt8]
    /// The decoded payload (JSON).
    let payload: [UInt8]
    /// The decoded signature.
    let signature: [UInt8]

    /// Splits and decodes a compact JWS.
    /// - Parameter token: the token text.
    /// - Throws: ``JWTError/malformed(reason:)``.
    init(_ token: String) throws(JWTError) {
        guard token.utf8.count <= Self.maximumLength else { throw .malformed(reason: "the token is too long") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            throw .malformed(reason: "the token is not three segments")
        }
        guard let header = Base64URL.decode(parts[0]) else { throw .malformed(reason: "header encoding") }
        guard let payload = Base64URL.decode(parts[1]) else { throw .malformed(reason: "payload encoding") }
        guard let signature = Base64URL.decode(parts[2]) else { throw .malformed(reason: "signature encoding") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
            let algorithm = object["alg"] as? String
        else { throw .malformed(reason: "header") }
        self.algorithm = algorithm
        self.type = object["typ"] as? String
        self.signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        self.payload = payload
        self.signature = signature
    }

    /// Builds the signing input for a header and payload.
    /// - Parameters:
    ///   - header: the header JSON bytes.
    ///   - payload: the payload JSON bytes.
    /// - Returns: `B64URL(header) ‖ "." ‖ B64URL(payload)` as text.
    static func signingInput(header: [UInt8], payload: [UInt8]) -> String {
        Base64URL.encode(header) + "." + Base64URL.encode(payload)
    }
}
