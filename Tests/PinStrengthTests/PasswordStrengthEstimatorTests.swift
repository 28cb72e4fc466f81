import TestSupport
import Testing

@testable import PinStrength

@Suite("PasswordStrengthEstimator")
struct PasswordStrengthEstimatorTests {
    let estimator = PasswordStrengthEstimator()

    func estimate(_ text: String) throws -> PasswordStrengthEstimate {
        let candidate = try password(text)
        defer { candidate.destroy() }
        return estimator.estimate(candidate)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let text: String
        let penalties: PasswordPenalties
        let rating: PasswordStrengthEstimate.Rating
        var testDescription: String { text }
    }

    @Test(
        "common passwords and patterns are penalised",
        arguments: [
            Case(text: "password", penalties: [.commonPassword, .singleCharacterClass], rating: .veryWeak),
            Case(text: "aaaaaaaa", penalties: [.repeatedCharacters, .singleCharacterClass], rating: .veryWeak),
            Case(text: "abcdefgh", penalties: [.sequence, .singleCharacterClass], rating: .veryWeak),
            Case(text: "wertyuio", penalties: [.keyboardPattern, .singleCharacterClass], rating: .veryWeak),
            Case(text: "Summer1990", penalties: [.commonPassword, .containsYear], rating: .veryWeak),
            Case(text: "correct horse battery staple", penalties: [], rating: .strong),
        ])
    func penalties(_ row: Case) throws {
        let (text, penalties, rating) = (row.text, row.penalties, row.rating)
        let result = try estimate(text)
        #expect(result.penalties == penalties, "\(text): \(result)")
        #expect(result.rating == rating, "\(text): \(result)")
        #expect(result.length == text.unicodeScalars.count)
    }

    @Test("varied characters estimate higher than patterned ones of the same length")
    func ordering() throws {
        let patterned = try estimate("abcabcabc1")
        let varied = try estimate("q7#Lm2!vRx")
        #expect(varied.estimatedBits > patterned.estimatedBits + 20)
        #expect(varied.rating >= .fair)
    }

    @Test("non-ASCII characters count as one character each")
    func unicode() throws {
        let result = try estimate("žluťoučký kůň")
        #expect(result.length == 13)
        #expect(result.estimatedBits > 60)
    }
}
