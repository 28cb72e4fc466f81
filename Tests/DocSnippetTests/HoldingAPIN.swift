import SecureCore
import Testing

// snippet.begin holding-a-pin
/// Collects a PIN key by key, hands an immutable copy on, and wipes both.
func holdAPIN() throws -> Int {
    let pin = try MutablePassword()  // when the PIN screen appears
    try pin.addCharacter(0x31)  // "1": a key goes straight in, never through a String
    try pin.addCharacter("2" as Unicode.Scalar)
    try pin.insertCharacter(0x30, at: 0)  // "012"
    try pin.removeLastCharacter()  // "01"
    let immutable = try pin.copyToImmutable()  // what the operation gets
    try pin.clear()  // the screen may wipe its copy at once
    let length = immutable.withUnsafeUTF8Bytes { utf8 in
        utf8.count  // utf8 is a temporary secure buffer, wiped when the closure returns
    }
    immutable.destroy()  // wipe now rather than at deinit
    pin.destroy()  // when the screen goes away
    return length
}
// snippet.end

@Test("article: holding a PIN") func holdingAPIN() throws {
    #expect(try holdAPIN() == 2)
}
