import PinEntry
import SecureCore

/// The PINs the demo uses: scripted digits, or, with `--interactive`, the two
/// PINs the person types on the terminal pad (kept in `MutablePassword`s for
/// the length of the demo and destroyed at the end). The wrong PINs the story
/// needs stay scripted: a person is not asked to type a wrong PIN on purpose.
final class DemoPINs {
    enum Role {
        /// The PIN the story starts with.
        case first
        /// The PIN it changes to.
        case second
        /// A wrong PIN.
        case wrong
        /// Another wrong PIN.
        case otherWrong
    }

    private let typed: [Role: MutablePassword]

    /// Scripted PINs.
    init() { typed = [:] }

    /// Asks for the first and the second PIN on the terminal; they must
    /// differ from each other and from the scripted wrong PINs.
    init(interactive: Void) throws {
        let format = PinFormat(.fourToEightDigits)
        var typed: [Role: MutablePassword] = [:]
        for (role, prompt) in [(Role.first, "Choose a PIN for the demo"), (.second, "Choose the PIN to change to")] {
            let entered = PinInput.terminal(prompt: prompt).read(format: format, command: "demo")
            defer { entered.destroy() }
            let kept = try MutablePassword()
            try entered.withUnsafeUTF8Bytes { bytes in
                for byte in bytes { try kept.addCharacter(UInt32(byte)) }
            }
            typed[role] = kept
        }
        self.typed = typed
        for role in [Role.wrong, .otherWrong] {
            let scripted = try DemoPINs.scripted(role)
            defer { scripted.destroy() }
            for mine in typed.values where try mine.isEqual(to: scripted) {
                CLI.fail("demo: that PIN is one the demo uses as a wrong PIN; choose another")
            }
        }
        if let a = typed[.first], let b = typed[.second], try a.isEqual(to: b) {
            CLI.fail("demo: the two PINs must differ")
        }
    }

    deinit { typed.values.forEach { $0.destroy() } }

    /// A fresh immutable copy of the PIN for `role`.
    func password(_ role: Role) throws -> Password {
        if let kept = typed[role] { return try kept.copyToImmutable() }
        return try DemoPINs.scripted(role)
    }

    /// A fresh mutable copy of the PIN for `role` (the PINs are ASCII digits).
    func mutable(_ role: Role) throws -> sending MutablePassword {
        let source = try password(role)
        defer { source.destroy() }
        let copy = try MutablePassword()
        try source.withUnsafeUTF8Bytes { bytes in
            for byte in bytes { try copy.addCharacter(UInt32(byte)) }
        }
        return copy
    }

    /// How the story names the PIN: its digits when scripted, never when typed.
    func label(_ role: Role) -> String {
        guard typed[role] == nil else { return role == .first ? "your first PIN" : "your second PIN" }
        switch role {
        case .first: return "PIN 2468"
        case .second: return "PIN 1973"
        case .wrong: return "PIN 0000"
        case .otherWrong: return "PIN 1111"
        }
    }

    private static func scripted(_ role: Role) throws -> Password {
        let digits: [UInt32] =
            switch role {
            case .first: [2, 4, 6, 8]
            case .second: [1, 9, 7, 3]
            case .wrong: [0, 0, 0, 0]
            case .otherWrong: [1, 1, 1, 1]
            }
        return try DemoCommand.pin(digits)
    }
}
