import SecureCore
import Synchronization

/// A source of uniformly distributed 64-bit words. The keypad draws its view
/// order and key identifiers from one; tests inject a deterministic source.
public protocol RandomSource: Sendable {
    /// Returns the next uniformly distributed word.
    /// - Throws: ``PinEntryError/randomSourceFailed`` when no bytes are available.
    func nextWord() throws(PinEntryError) -> UInt64
}

extension RandomSource {
    /// An unbiased integer in `0 ..< bound`, by rejection sampling: words in
    /// the lowest `2^64 mod bound` values are drawn again, so every result has
    /// exactly the same number of preimages (no modulo bias).
    /// - Parameter bound: at least 1.
    /// - Returns: the integer.
    /// - Throws: what ``nextWord()`` throws.
    public func uniform(below bound: Int) throws(PinEntryError) -> Int {
        precondition(bound > 0, "uniform(below:) needs a positive bound")
        let n = UInt64(bound)
        let rejectBelow = (0 &- n) % n  // 2^64 mod n
        while true {
            let word = try nextWord()
            if word >= rejectBelow { return Int(word % n) }
        }
    }

    /// Shuffles `elements` in place with the Fisher–Yates algorithm, drawing
    /// each index with ``uniform(below:)``: every permutation is equally likely.
    /// - Throws: what ``nextWord()`` throws; `elements` may then be partly shuffled.
    public func shuffle<T>(_ elements: inout [T]) throws(PinEntryError) {
        var i = elements.count - 1
        while i > 0 {
            let j = try uniform(below: i + 1)
            if i != j { elements.swapAt(i, j) }
            i -= 1
        }
    }
}

/// The default ``RandomSource``: the operating system's CSPRNG through
/// `SecureBytes.random(count:)`, fetched in small batches kept in secure
/// memory. Each word is wiped from the batch as it is handed out, so the
/// order a keypad was shuffled into cannot be read back from memory later.
public final class SystemRandomSource: RandomSource {
    private struct Pool: Sendable {
        var bytes: SecureBytes?
        var offset = 0
    }

    private static let batchSize = 512
    private let pool = Mutex(Pool())

    /// Creates a source; no bytes are fetched until the first draw.
    public init() {}

    /// Returns the next word from the CSPRNG.
    /// - Throws: ``PinEntryError/randomSourceFailed`` if the CSPRNG or secure
    ///   memory fails.
    public func nextWord() throws(PinEntryError) -> UInt64 {
        try pool.withLock { (pool) throws(PinEntryError) -> UInt64 in
            if pool.bytes == nil || pool.offset + 8 > Self.batchSize {
                pool.bytes?.destroy()
                do { pool.bytes = try SecureBytes.random(count: Self.batchSize) } catch {
                    pool.bytes = nil
                    throw .randomSourceFailed
                }
                pool.offset = 0
            }
            guard let bytes = pool.bytes else { throw .randomSourceFailed }
            let offset = pool.offset
            pool.offset += 8
            return bytes.withUnsafeMutableBytes { raw in
                let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                raw.baseAddress!.advanced(by: offset).initializeMemory(as: UInt8.self, repeating: 0, count: 8)
                return word
            }
        }
    }
}
