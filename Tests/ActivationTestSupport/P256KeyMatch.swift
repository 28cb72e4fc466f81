import SecureCore

/// Whether a P-256 private key belongs to a public key: an ECDH with a fresh peer agrees from
/// both sides (the tests' way to check a server's temporary key without its public half).
/// - Parameters:
///   - privateKey: the private scalar, in secure memory.
///   - publicKey: the SEC1 public key.
/// - Returns: `true` when they are one key pair.
/// - Throws: `SecureCoreError` from key generation or ECDH.
package func p256KeysMatch(_ privateKey: SecureBytes, _ publicKey: [UInt8]) throws -> Bool {
    let peer = try P256.generateKeyPair()
    defer { peer.privateKey.destroy() }
    let ours = try P256.sharedSecret(privateKey: privateKey, publicKey: peer.publicKey)
    let theirs = try P256.sharedSecret(privateKey: peer.privateKey, publicKey: publicKey)
    defer {
        ours.destroy()
        theirs.destroy()
    }
    return try ours.isEqual(to: theirs)
}
