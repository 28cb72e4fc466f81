/// Why an activation code, or its QR form `CODE#SIGNATURE`, was refused. Codes are
/// public identifiers, so the cases may name what was wrong; none echoes the input.
public enum ActivationCodeError: Error, Equatable, Sendable {
    /// Not 23 characters in four groups of five separated by `-` (or a QR text longer
    /// than a code with the longest signature).
    case malformed
    /// A character outside the Base32 alphabet `A-Z2-7` (lower case included, as upstream).
    case invalidCharacter
    /// The last character sets bits the 12 encoded bytes do not have: a second
    /// spelling of the same bytes, which this implementation refuses.
    case nonCanonical
    /// The CRC-16/ARC of the first 10 bytes is not the last two: a mistyped code.
    case checksumMismatch
    /// The part after `#` is empty or not canonical Base64.
    case malformedSignature
    /// The signature does not verify under the master server public key.
    case signatureMismatch
}

extension ActivationCodeError: CustomStringConvertible {
    /// What is wrong with the code, in a sentence fragment a person can act on.
    public var description: String {
        switch self {
        case .malformed: "the code is not 23 characters in four groups of five separated by dashes"
        case .invalidCharacter: "the code has a character outside the Base32 alphabet A-Z and 2-7"
        case .nonCanonical: "the code's last character is not canonical: a second spelling of the same bytes"
        case .checksumMismatch: "the code's checksum does not match: it is probably mistyped"
        case .malformedSignature: "the signature after # is empty or not canonical Base64"
        case .signatureMismatch: "the signature does not verify under the master server public key"
        }
    }
}
