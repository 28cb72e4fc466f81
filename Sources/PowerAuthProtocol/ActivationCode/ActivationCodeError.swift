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
