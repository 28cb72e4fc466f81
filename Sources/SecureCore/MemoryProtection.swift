internal import CSecureCore

/// What the operating system actually granted a secret's memory. Each flag is
/// set only after the kernel accepted the call; nothing is claimed on faith.
public struct MemoryProtection: OptionSet, Sendable, Hashable {
    /// The `SPC_PROT_*` bits.
    public let rawValue: UInt32

    /// Creates a set from the C core's `SPC_PROT_*` bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Pages cannot be swapped out (`mlock`, or secret memory).
    public static let locked = MemoryProtection(rawValue: UInt32(SPC_PROT_LOCKED))
    /// `MADV_DONTDUMP`: excluded from core dumps.
    public static let dontDump = MemoryProtection(rawValue: UInt32(SPC_PROT_DONTDUMP))
    /// `MADV_WIPEONFORK`: a forked child reads zeros.
    public static let wipeOnFork = MemoryProtection(rawValue: UInt32(SPC_PROT_WIPEONFORK))
    /// `MADV_DONTFORK`: a forked child has no mapping at all.
    public static let dontFork = MemoryProtection(rawValue: UInt32(SPC_PROT_DONTFORK))
    /// `memfd_secret(2)`: the pages are unreadable even to the kernel
    /// (`/proc/PID/mem`, core dumps).
    public static let secretMemory = MemoryProtection(rawValue: UInt32(SPC_PROT_SECRETMEM))
    /// No-access guard pages before and after the slab.
    public static let guardPages = MemoryProtection(rawValue: UInt32(SPC_PROT_GUARDPAGES))
    /// Pages are no-access whenever no secret in them is being used.
    public static let noAccessWhenIdle = MemoryProtection(rawValue: UInt32(SPC_PROT_NOACCESS_IDLE))

    /// Whether a forked child is kept from the secret, one way or the other.
    public var protectsAgainstFork: Bool { !isDisjoint(with: [.wipeOnFork, .dontFork]) }
}

extension MemoryProtection: CustomStringConvertible {
    /// Flag names, comma-separated, for example `locked, dontDump, secretMemory`.
    public var description: String {
        let names: [(MemoryProtection, String)] = [
            (.locked, "locked"), (.dontDump, "dontDump"), (.wipeOnFork, "wipeOnFork"),
            (.dontFork, "dontFork"), (.secretMemory, "secretMemory"), (.guardPages, "guardPages"),
            (.noAccessWhenIdle, "noAccessWhenIdle"),
        ]
        let present = names.filter { contains($0.0) }.map(\.1)
        return present.isEmpty ? "none" : present.joined(separator: ", ")
    }
}
