/// A key read from a terminal in raw mode.
enum TerminalKey: Equatable {
    /// A printable character (digits go straight into the password).
    case character(Unicode.Scalar)
    /// Backspace or Delete (0x7F, 0x08).
    case backspace
    /// Enter (CR or LF).
    case enter
    /// Space: presses the selected on-screen key.
    case space
    /// Ctrl-C (0x03) or Ctrl-\ (0x1C): cancel as interrupted.
    case interrupt
    /// Ctrl-Z (0x1A): cancel as suspended.
    case suspend
    /// Ctrl-D (0x04) or a lone Escape: cancel by the user.
    case cancel
    /// An arrow key (CSI or SS3 A/B/C/D).
    case arrow(ArrowDirection)
    /// Ill-formed UTF-8, another control character, or an unknown escape
    /// sequence: ignored, nothing stored.
    case ignored
}

/// A direction on the keypad grid.
enum ArrowDirection: Equatable {
    case up, down, left, right
}

/// Turns raw terminal bytes into ``TerminalKey``s, one byte at a time:
/// control characters, escape sequences (arrows), and UTF-8 through
/// ``UTF8StreamDecoder``.
struct TerminalInputDecoder {
    private enum EscapeState { case none, escape, sequence }

    private var utf8 = UTF8StreamDecoder()
    private var escape = EscapeState.none

    /// Whether a lone Escape may be waiting for the rest of a sequence; the
    /// reader then waits briefly and calls ``flushEscape()`` if nothing comes.
    var isInEscape: Bool { escape != .none }

    /// Feeds one byte.
    /// - Returns: a key, or `nil` while a sequence is incomplete.
    mutating func feed(_ byte: UInt8) -> TerminalKey? {
        switch escape {
        case .escape:
            if byte == 0x5B || byte == 0x4F { escape = .sequence; return nil }  // CSI "[" or SS3 "O"
            // Escape followed by another key (Alt+key): the Escape cancels and
            // the other byte is dropped, never stored.
            escape = .none
            return .cancel
        case .sequence:
            switch byte {
            case 0x20...0x3F: return nil  // parameters and intermediates
            case 0x40...0x7E:
                escape = .none
                switch byte {
                case 0x41: return .arrow(.up)
                case 0x42: return .arrow(.down)
                case 0x43: return .arrow(.right)
                case 0x44: return .arrow(.left)
                default: return .ignored
                }
            default:
                escape = .none
                return .ignored
            }
        case .none:
            break
        }
        if !utf8.isPending {
            switch byte {
            case 0x03, 0x1C: return .interrupt
            case 0x1A: return .suspend
            case 0x04: return .cancel
            case 0x7F, 0x08: return .backspace
            case 0x0D, 0x0A: return .enter
            case 0x20: return .space
            case 0x1B: escape = .escape; return nil
            case 0x00...0x1F: return .ignored
            default: break
            }
        }
        switch utf8.feed(byte) {
        case .pending: return nil
        case .scalar(let scalar):
            return (0x80...0x9F).contains(scalar.value) ? .ignored : .character(scalar)
        case .invalid(let reprocess):
            // Report the ill-formed sequence; a byte that starts something
            // new is decoded by the next call (the reader feeds it again).
            if reprocess { pendingReprocess = byte }
            return .ignored
        }
    }

    /// A byte that ended an ill-formed sequence but starts a new one; the
    /// reader feeds it again.
    private(set) var pendingReprocess: UInt8?

    /// Takes the byte to feed again, if any.
    mutating func takeReprocess() -> UInt8? {
        defer { pendingReprocess = nil }
        return pendingReprocess
    }

    /// A lone Escape that no sequence followed.
    mutating func flushEscape() -> TerminalKey? {
        guard escape != .none else { return nil }
        escape = .none
        return .cancel
    }

    /// Zeroes any partial character.
    mutating func wipe() {
        utf8.wipe()
        escape = .none
        pendingReprocess = nil
    }
}
