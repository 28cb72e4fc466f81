/// A bounds-checked reader over public bytes, with the mobile SDK's `DataReader`
/// primitives (`src/PowerAuth/utils/DataReader.cpp`); every read returns `nil`
/// instead of trapping.
struct ByteReader {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index == bytes.count }

    mutating func byte() -> UInt8? {
        guard index < bytes.count else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func take(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count - index >= count else { return nil }
        defer { index += count }
        return Array(bytes[index..<(index + count)])
    }

    /// `Count`: one byte below `0x80`; `0x80 | n` in two bytes below `0x4000`; `0xC0 | n`
    /// in four bytes below `0x4000_0000` (the top two bits of the first byte say which).
    mutating func count() -> Int? {
        guard let first = byte() else { return nil }
        switch first & 0xC0 {
        case 0x00, 0x40: return Int(first)
        case 0x80:
            guard let next = byte() else { return nil }
            return Int(first & 0x3F) << 8 | Int(next)
        default:
            guard let rest = take(3) else { return nil }
            return rest.reduce(Int(first & 0x3F)) { $0 << 8 | Int($1) }
        }
    }

    /// `Data`: a `Count` and that many bytes.
    mutating func data() -> [UInt8]? {
        guard let length = count() else { return nil }
        return take(length)
    }
}

/// The writing side of ``ByteReader`` (the SDK's `DataWriter`).
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    /// `Count`, in the shortest form; `n` must be below `0x4000_0000`.
    mutating func count(_ n: Int) {
        precondition((0..<0x4000_0000).contains(n), "a Count is below 2^30")
        switch n {
        case 0..<0x80: bytes.append(UInt8(n))
        case 0x80..<0x4000: bytes += [UInt8(0x80 | n >> 8), UInt8(n & 0xFF)]
        default: bytes += [UInt8(0xC0 | n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        }
    }

    /// `Data`: a `Count` and the bytes.
    mutating func data(_ value: [UInt8]) {
        count(value.count)
        bytes += value
    }
}
