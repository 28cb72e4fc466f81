import PinEntry

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Draws the pad: the prompt with one dot per entered character, and
/// optionally the keypad above it. What it writes holds counts and key
/// titles only, never an entered character. Write errors are ignored: a
/// closed terminal is noticed by the reader.
final class TerminalScreen {
    let output: Int32
    let options: TerminalPinPad.Options
    private var linesAbove = 0
    private var drawn = false
    /// Why the last key was refused, shown until Backspace or the next refusal.
    var notice: String?
    /// Rings the terminal bell with the next drawing.
    var ringsBell = false

    init(output: Int32, options: TerminalPinPad.Options) {
        self.output = output
        self.options = options
    }

    func draw(_ controller: PinEntryController, selected: GridPosition) {
        var text = linesAbove > 0 ? "\u{1B}[\(linesAbove)A" : ""
        text += "\r\u{1B}[J"
        var lines: [String] = []
        if options.showsKeypad, let keypad = controller.keypad {
            for row in 0..<GridPosition.rows {
                var line = "  "
                for column in 0..<GridPosition.columns {
                    let position = GridPosition(row: row, column: column)
                    let title = keypad.key(at: position)?.title ?? ""
                    let padded = Self.center(title, width: 3)
                    line += position == selected ? "[\(padded)]" : " \(padded) "
                }
                lines.append(line)
            }
            lines.append("  digits, or arrows and Space; Backspace deletes; Esc cancels")
        }
        lines.append(promptLine(controller))
        text += lines.joined(separator: "\r\n")
        if ringsBell { text += "\u{07}" }
        ringsBell = false
        linesAbove = lines.count - 1
        drawn = true
        emit(text)
    }

    /// Ends the pad's output with a newline.
    func finish() {
        if drawn { emit("\r\n") }
        drawn = false
    }

    private func promptLine(_ controller: PinEntryController) -> String {
        let state = controller.state
        let policy = state.lengthPolicy
        let head = options.prompt + ": "
        var dots = String(repeating: "•", count: state.enteredLength)
        if policy.isFixed {
            dots += String(repeating: "·", count: max(0, policy.maximum - state.enteredLength))
        }
        var tail = ""
        if state.showsConfirmButton && state.phase == .entering {
            tail += state.isConfirmEnabled ? "  (Enter to confirm)" : ""
        }
        if options.showsProgressText { tail += "  " + controller.indicatorText }
        if let attempts = controller.attemptsText { tail += "  " + attempts }
        if let notice, state.phase == .entering { tail += "  ! " + notice }
        guard let room = columns.map({ $0 - 1 }), head.count + dots.count + tail.count > room else {
            return head + dots + tail
        }
        // Wider than the terminal, the line would wrap, and the next redraw (which starts at the
        // beginning of the cursor's row) would leave the wrapped rows behind: one more row per
        // keystroke. So the line stays within the width: the dots give way to their count.
        let count = "…(\(state.enteredLength))"
        let kept = max(0, room - head.count - tail.count - count.count)
        return String((head + String(repeating: "•", count: kept) + count + tail).prefix(max(0, room)))
    }

    /// The terminal's width in columns, or nil when the output is not a terminal that says.
    private var columns: Int? {
        var size = winsize()
        guard ioctl(output, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    private static func center(_ title: String, width: Int) -> String {
        let count = title.count
        guard count < width else { return title }
        let left = (width - count) / 2
        return String(repeating: " ", count: left) + title + String(repeating: " ", count: width - count - left)
    }

    private func emit(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(output, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
