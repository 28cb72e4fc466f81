import SecureCore

extension MutablePassword {
    /// Applies a text-field edit to the password: the characters in `range`
    /// are replaced by `replacement`, character by character, as a secure text
    /// field's delegate does when it keeps only placeholder dots on screen.
    /// A paste of several characters is one edit.
    ///
    /// The edit is applied in place and never builds a string. If SecureCore
    /// refuses a character midway (an invalid code point, the password's
    /// capacity), the whole password is cleared before the error is thrown,
    /// so no half-applied edit survives.
    /// - Parameters:
    ///   - range: the replaced characters, within `0 ... length`.
    ///   - replacement: the new characters (for example `string.unicodeScalars`).
    /// - Returns: the caret position after the edit (where the UI puts the cursor).
    /// - Throws: ``PinEntryError/editOutOfRange(location:length:passwordLength:)``
    ///   (nothing changed), ``PinEntryError/secureMemory(_:)`` (cleared).
    public func applyTextFieldEdit<C: Collection>(replacing range: Range<Int>, with replacement: C)
        throws(PinEntryError) -> Int where C.Element == Unicode.Scalar
    {
        guard range.lowerBound >= 0, range.upperBound <= length else {
            throw .editOutOfRange(location: range.lowerBound, length: range.count, passwordLength: length)
        }
        do {
            for _ in range { try removeCharacter(at: range.lowerBound) }
            var index = range.lowerBound
            for scalar in replacement {
                try insertCharacter(scalar, at: index)
                index += 1
            }
            return index
        } catch {
            try? clear()
            throw PinEntryError(error)
        }
    }
}
