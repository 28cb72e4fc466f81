import Testing

@testable import SecureCore

@Suite("ConstantTime")
struct ConstantTimeTests {
    @Test func equalAndDifferentAtEveryPosition() {
        let code = [UInt8](0..<64)
        #expect(ConstantTime.isEqual(code, code))
        for position in [0, 31, 63] {
            var presented = code
            presented[position] ^= 0x01
            #expect(!ConstantTime.isEqual(code, presented), "a difference at byte \(position)")
        }
    }

    @Test func lengthsArePublic() {
        #expect(ConstantTime.isEqual([], []))
        #expect(!ConstantTime.isEqual([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.isEqual([], [0]))
    }
}
