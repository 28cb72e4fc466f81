internal import CProtocolCrypto

/// The library the protocol primitives run on. Nothing here is secret.
public enum CryptoLibrary {
    /// libcrypto's version as OpenSSL reports it, for `--version` and
    /// diagnostics: only the protocol C target links libcrypto, so callers ask
    /// it rather than link OpenSSL themselves.
    public static var openSSLVersion: String { String(cString: spc_crypto_library_version()) }
}
