/// CRC-16/ARC (polynomial `0x8005` reflected as `0xA001`, initial value 0, no final
/// XOR), the checksum PowerAuth appends to an activation code's 10 random bytes
/// (powerauth-crypto `docs/Activation-Code.md`; mobile SDK `src/PowerAuth/utils/CRC16.cpp`).
/// Public data only: the code is an identifier, not a secret.
enum CRC16ARC {
    /// The checksum of `bytes`; `"123456789"` gives `0xBB3D`.
    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        }
        return crc
    }
}
