import Testing

/// The rules every public error's description follows: a sentence fragment a person reads, never
/// a Swift value dump.
enum DescriptionRules {
    /// A camelCase identifier directly followed by a parenthesis: `wrongPIN(`.
    static var callSyntax: Regex<AnyRegexOutput> { try! Regex("[a-z]+[A-Z][A-Za-z]*\\(") }
    /// The whole text one camelCase identifier, with or without a leading dot: `.notFound`.
    static var bareIdentifier: Regex<AnyRegexOutput> { try! Regex("^\\.?[a-z]+[A-Z]\\w*$") }

    /// The problems of one description, empty when it follows the rules.
    /// - Parameters:
    ///   - description: the text.
    ///   - typeName: the error type's name, such as `VaultError`.
    ///   - caseName: the case it describes, nil for a struct.
    /// - Returns: what is wrong with it.
    static func problems(_ description: String, typeName: String, caseName: String?) -> [String] {
        var found: [String] = []
        if description.isEmpty { found.append("empty") }
        if description.contains("(") { found.append("has a parenthesis") }
        if description.contains("Optional") { found.append("prints an Optional") }
        if description.contains(callSyntax) { found.append("has call syntax") }
        if description.wholeMatch(of: bareIdentifier) != nil { found.append("is a bare identifier") }
        if description.hasPrefix(typeName + ".") || description.contains("." + typeName + ".") {
            found.append("names the type like a dump")
        }
        if let first = description.first, first.isUppercase,
            description.dropFirst().first.map({ !$0.isUppercase }) ?? true
        {
            found.append("starts with a capital that is not an acronym")
        }
        if let caseName {
            if description == caseName || description == "." + caseName { found.append("is the case name") }
            if description.contains("\(caseName)(") { found.append("has the case name with a parenthesis") }
        }
        return found
    }

    /// Checks every sample of an enum error: the samples cover the expected cases exactly, and each
    /// description follows the rules. Prints how many cases were checked.
    /// - Parameters:
    ///   - typeName: the type's name.
    ///   - samples: at least one value of every case.
    ///   - caseName: the case of a value, by an exhaustive switch.
    ///   - expected: the names of all cases, written out.
    static func check<E: CustomStringConvertible>(
        _ typeName: String, _ samples: [E], caseName: (E) -> String, expected: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let covered = Set(samples.map(caseName))
        #expect(
            Set(expected).count == expected.count, "\(typeName): a name listed twice", sourceLocation: sourceLocation)
        #expect(covered == Set(expected), "\(typeName): samples and cases differ", sourceLocation: sourceLocation)
        for sample in samples {
            let name = caseName(sample)
            let text = sample.description
            #expect(
                problems(text, typeName: typeName, caseName: name) == [], "\(typeName).\(name): \(text)",
                sourceLocation: sourceLocation)
            #expect(
                "\(sample)" == text, "\(typeName).\(name): interpolation prints the description",
                sourceLocation: sourceLocation)
        }
        print("ErrorDescriptionTests: \(typeName) \(covered.count) cases, \(samples.count) samples")
    }

    /// Checks the descriptions of a struct error.
    /// - Parameters:
    ///   - typeName: the type's name.
    ///   - samples: values to check.
    static func check<E: CustomStringConvertible>(
        _ typeName: String, structSamples samples: [E], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(!samples.isEmpty, sourceLocation: sourceLocation)
        for sample in samples {
            let text = sample.description
            #expect(
                problems(text, typeName: typeName, caseName: nil) == [], "\(typeName): \(text)",
                sourceLocation: sourceLocation)
        }
        print("ErrorDescriptionTests: \(typeName) \(samples.count) samples")
    }
}

@Suite("The description rules themselves")
struct DescriptionRulesTests {
    /// The rules catch the dumps they are meant to catch, so a passing check means something.
    @Test func rulesCatchDumps() {
        let dumps = [
            "wrongPIN(remainingAttempts: Optional(19))",
            "invalidActivationData(reason: \"the activation state is not readable\")",
            "notFound", ".notFound", "VaultError.locked", "PinVault.VaultError.locked", "",
            "Something happened",
        ]
        for dump in dumps {
            #expect(!DescriptionRules.problems(dump, typeName: "VaultError", caseName: "locked").isEmpty, "\(dump)")
        }
        #expect(DescriptionRules.problems("locked", typeName: "VaultError", caseName: "locked") != [])
        #expect(
            DescriptionRules.problems(
                "the PIN is wrong; 19 attempts remain", typeName: "VaultError", caseName: "wrongPIN") == [])
        #expect(
            DescriptionRules.problems("TLS: the handshake failed", typeName: "HTTPClientError", caseName: "tls") == [])
    }
}
