import Foundation
import Spawn
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Drives the real `pinpad-demo` binary (built with the tests, started from
/// the build directory; nothing is built here) inside a detached tmux session
/// with its own server socket, so the terminal pad runs on a real pty.
enum Tmux {
    static let path: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static var isAvailable: Bool { path != nil }

    /// The demo binary next to the test bundle in the build directory.
    static var demo: String { (try? BuiltExecutable.path("pinpad-demo")) ?? "pinpad-demo" }
}

/// One tmux server and session for one test.
final class TmuxSession {
    let socket = "pinentry-test-\(getpid())-\(UInt32.random(in: 0 ... .max))"
    let scratch: URL

    /// Starts `command(scratch directory)` in a new detached session.
    init(_ command: (URL) -> String) throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent(socket)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        // The server forks from this client and would inherit a captured
        // stdout, so reading it would never see end of file: no capture here.
        try run(["new-session", "-d", "-s", "pad", "-x", "120", "-y", "30", command(scratch)], capture: false)
    }

    deinit {
        _ = try? run(["kill-server"])
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Runs tmux and waits for it (`ChildProcess`: `posix_spawn` and `waitpid`, not Foundation's
    /// `Process`, whose wait can hang under the test runner), with a clean signal mask and default
    /// dispositions so the tmux server and the demo do not inherit the runner's blocked signals.
    /// - Returns: its standard output when `capture` is set (empty otherwise).
    @discardableResult
    func run(_ arguments: [String], capture: Bool = true) throws -> String {
        // The socket lives in the scratch directory, so removing it leaves
        // nothing behind (tmux does not delete its socket on exit).
        let finished = try ChildProcess.run(
            Tmux.path!, ["-S", scratch.appendingPathComponent("tmux.sock").path, "-f", "/dev/null"] + arguments,
            standardInput: .nullDevice, standardOutput: capture ? .pipe : .nullDevice, standardError: .nullDevice)
        return String(decoding: finished.output, as: UTF8.self)
    }

    func send(_ keys: String...) throws { try run(["send-keys", "-t", "pad"] + keys) }

    func capture() throws -> String { try run(["capture-pane", "-p", "-t", "pad"]) }

    /// Waits until the pane shows `marker`; returns the pane.
    func wait(for marker: String, seconds: Double = 15) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var pane = ""
        while Date() < deadline {
            pane = try capture()
            if pane.contains(marker) { return pane }
            usleep(50_000)
        }
        Issue.record("timed out waiting for \(marker.debugDescription); pane:\n\(pane)")
        return pane
    }

    /// The demo's process id (the child of the pane's shell).
    func demoPid() throws -> pid_t? {
        let shell = try run(["display-message", "-p", "-t", "pad", "#{pane_pid}"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let children = try? String(contentsOfFile: "/proc/\(shell)/task/\(shell)/children", encoding: .utf8)
        return children?.split(separator: " ").first.flatMap { pid_t($0) }
    }
}

@Suite(
    "Terminal pad in tmux", .serialized,
    .enabled(if: Tmux.isAvailable, "tmux is not installed: the terminal pad needs a real pty to be tested"))
struct TerminalPinPadTests {
    func shellCommand(_ arguments: String, scratch: URL) -> String {
        let stty = scratch.appendingPathComponent("stty.txt").path
        return "sh -c '\(Tmux.demo) \(arguments); echo EXIT=$?; stty -a > \(stty); echo DONE; sleep 30'"
    }

    @Test("typed digits show as dots only, and the PIN never reaches the screen")
    func dotsOnly() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Tmux.demo), "pinpad-demo not found next to the tests")
        let session = try TmuxSession { shellCommand("--complexity digits-6 --today 2026-11-30", scratch: $0) }
        _ = try session.wait(for: "Enter PIN")
        try session.send("9", "7", "5")
        let partial = try session.wait(for: "•••···")
        #expect(!partial.contains { $0.isASCII && $0.isNumber }, "a digit on screen:\n\(partial)")
        try session.send("3", "1", "0")
        let done = try session.wait(for: "DONE")
        #expect(done.contains("verdict: acceptable"))
        #expect(done.contains("EXIT=0"))
        // Everything the pad and the demo drew (the shell's EXIT= line aside).
        let drawn = done.split(separator: "\n").filter { !$0.hasPrefix("EXIT=") }.joined(separator: "\n")
        for digit in "975310" { #expect(!drawn.contains(digit), "digit \(digit) on screen:\n\(done)") }
    }

    /// Every way to abandon the entry must wipe it, report a cancellation
    /// (exit 130) and leave the terminal sane: echo and canonical mode back.
    @Test(
        "cancellation leaves the terminal sane and nothing entered",
        arguments: ["C-c", "C-z", "SIGHUP", "SIGTSTP", "SIGTERM"])
    func cancellation(_ how: String) throws {
        let session = try TmuxSession { shellCommand("--complexity digits-6", scratch: $0) }
        _ = try session.wait(for: "Enter PIN")
        try session.send("1", "2")
        _ = try session.wait(for: "••····")
        switch how {
        case "SIGHUP", "SIGTSTP", "SIGTERM":
            let pid = try #require(try session.demoPid(), "demo process not found")
            let signal = how == "SIGHUP" ? SIGHUP : how == "SIGTSTP" ? SIGTSTP : SIGTERM
            #expect(kill(pid, signal) == 0)
        default:
            try session.send(how)
        }
        let pane = try session.wait(for: "DONE")
        #expect(pane.contains("cancelled"))
        #expect(pane.contains("nothing was entered"))
        #expect(pane.contains("EXIT=130"))
        #expect(!pane.contains("verdict"))
        let stty = try String(contentsOf: session.scratch.appendingPathComponent("stty.txt"), encoding: .utf8)
        let flags = stty.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == ";" })
        #expect(flags.contains("echo") && !flags.contains("-echo"), "\(stty)")
        #expect(flags.contains("icanon") && !flags.contains("-icanon"), "\(stty)")
        #expect(flags.contains("isig") && !flags.contains("-isig"), "\(stty)")
    }

    @Test("keys typed after auto-confirm never reach the shell")
    func typeAheadDiscarded() throws {
        // After the demo, the shell reads one line: it must not get the extra keys.
        let session = try TmuxSession { scratch in
            let marker = scratch.appendingPathComponent("after.txt").path
            return
                "sh -c '\(Tmux.demo) --complexity digits-4 --today 2026-11-30; read -r line; echo \"LINE=[$line]\" > \(marker); echo DONE; sleep 30'"
        }
        let marker = session.scratch.appendingPathComponent("after.txt").path
        _ = try session.wait(for: "Enter PIN")
        // One send-keys call: the extra digits arrive while the pad is still reading.
        try session.send("5", "8", "1", "3", "6", "6", "6")
        _ = try session.wait(for: "verdict")
        try session.send("Enter")
        _ = try session.wait(for: "DONE")
        let line = try String(contentsOfFile: marker, encoding: .utf8)
        #expect(!line.contains("6"), "type-ahead leaked: \(line)")
    }

    @Test("the on-screen keypad: arrows and Space enter digits")
    func keypad() throws {
        let session = try TmuxSession {
            shellCommand("--complexity digits-4 --keypad --json --today 2026-11-30", scratch: $0)
        }
        _ = try session.wait(for: "Enter PIN")
        // From the centre (5): Up Space = 2; Down Space = 5; Down Down Space = 0; Up Up Up Space = 2.
        try session.send("Up", "Space", "Down", "Space", "Down", "Down", "Space", "Up", "Up", "Up", "Space")
        let pane = try session.wait(for: "DONE")
        // 2502 reads as 25 February: a date, and dates are on the 4-digit blocklist.
        #expect(pane.contains(#""flags":["possibly-date","frequently-used"]"#), "\(pane)")
        #expect(pane.contains("EXIT=3"))
    }

    @Test("letters, control keys and ill-formed UTF-8 on the terminal are ignored, nothing stored")
    func badTerminalInput() throws {
        let session = try TmuxSession { shellCommand("--complexity digits-4 --json --today 2026-11-30", scratch: $0) }
        _ = try session.wait(for: "Enter PIN")
        try session.send("5")
        try session.run(["send-keys", "-t", "pad", "-H", "ff"])  // never valid UTF-8
        try session.send("x", "C-a", "8")
        try session.run(["send-keys", "-t", "pad", "-H", "c3"])  // truncated by the next digit
        try session.send("1", "3")
        let pane = try session.wait(for: "DONE")
        // Exactly 5813 was stored: four digits, none of this PIN's flags.
        #expect(
            pane.contains(#"{"format":"numeric","length":4,"flags":[],"relevant_flags":[],"verdict":"acceptable"}"#),
            "\(pane)")
        #expect(pane.contains("EXIT=0"))
    }

    /// Counts the terminal bells the pane received since `pipe-pane` started.
    func bells(_ session: TmuxSession) -> Int {
        let raw = session.scratch.appendingPathComponent("raw.bin").path
        return (FileManager.default.contents(atPath: raw) ?? Data()).filter { $0 == 0x07 }.count
    }

    func recordRawOutput(_ session: TmuxSession) throws {
        let raw = session.scratch.appendingPathComponent("raw.bin").path
        try session.run(["pipe-pane", "-t", "pad", "-o", "cat >> \(raw)"])
    }

    @Test("a refused key rings the bell and says why: a space, a 9th digit; the rest is kept")
    func refusedKeysRingAndExplain() throws {
        let session = try TmuxSession {
            shellCommand("--complexity digits-4-8 --json --today 2026-11-30", scratch: $0)
        }
        try recordRawOutput(session)
        _ = try session.wait(for: "Enter PIN")
        try session.send("2", "4", "Space")
        let spaced = try session.wait(for: "! digits only")
        #expect(spaced.contains("Enter PIN: ••  ! digits only"), "\(spaced)")
        try session.send("6", "8")
        // The reason stays after later digits (as after a paste), until Backspace.
        _ = try session.wait(for: "Enter PIN: ••••  (Enter to confirm)  ! digits only")
        try session.send("BSpace")
        _ = try session.wait(for: "Enter PIN: •••\n")
        try session.send("8")
        try session.send("1", "3", "5", "7", "9", "0")
        let full = try session.wait(for: "! at most 8 digits")
        #expect(full.contains("Enter PIN: ••••••••  (Enter to confirm)  ! at most 8 digits"), "\(full)")
        try session.send("Enter")
        let done = try session.wait(for: "DONE")
        #expect(done.contains(#""length":8"#), "\(done)")
        #expect(bells(session) >= 3, "one bell per refused key, got \(bells(session))")
    }

    @Test("Enter before the minimum says so and keeps editing")
    func enterBeforeTheMinimum() throws {
        let session = try TmuxSession {
            shellCommand("--complexity digits-4-8 --json --today 2026-11-30", scratch: $0)
        }
        try recordRawOutput(session)
        _ = try session.wait(for: "Enter PIN")
        try session.send("5", "8", "Enter")
        let short = try session.wait(for: "! at least 4 digits")
        #expect(short.contains("Enter PIN: ••  ! at least 4 digits"), "\(short)")
        #expect(!short.contains("verdict"))
        try session.send("1", "3", "Enter")
        let done = try session.wait(for: "DONE")
        #expect(done.contains(#""length":4"#), "\(done)")
        #expect(bells(session) >= 1)
    }

    @Test("with a shuffled keypad, typed digits still enter the digit typed")
    func shuffledKeypadTyping() throws {
        let session = try TmuxSession {
            shellCommand("--complexity digits-4 --shuffled --json --today 2026-11-30", scratch: $0)
        }
        _ = try session.wait(for: "Enter PIN")
        try session.send("5", "8", "1", "3")
        let pane = try session.wait(for: "DONE")
        #expect(pane.contains(#""flags":[]"#), "\(pane)")
        #expect(pane.contains("EXIT=0"))
    }
}
