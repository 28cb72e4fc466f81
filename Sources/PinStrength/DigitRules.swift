/// The rules of the strength meter, each a small pure function over a digit
/// accessor. The meter runs them on the revealed secure buffer (digits read
/// in place, nothing copied); the blocklist generator runs some of them on
/// public candidates. Documented in `docs/pin-strength.md`.
struct Digits {
    let count: Int
    private let digitAt: (Int) -> Int

    /// Reads ASCII digits in place from a revealed buffer (already checked).
    init(ascii buffer: UnsafeRawBufferPointer) {
        count = buffer.count
        digitAt = { Int(buffer[$0]) &- 0x30 }
    }

    /// Public candidate digits (blocklist generation, tests).
    init(count: Int, digit: @escaping (Int) -> Int) {
        self.count = count
        digitAt = digit
    }

    subscript(index: Int) -> Int { digitAt(index) }

    /// The number formed by `length` digits from `start`.
    func number(from start: Int, length: Int) -> Int {
        var value = 0
        for i in start..<start + length { value = value * 10 + self[i] }
        return value
    }
}

enum DigitRules {
    // MARK: not unique

    static func isNotUnique(_ d: Digits) -> Bool {
        var seen: UInt16 = 0
        for i in 0..<d.count { seen |= 1 << UInt16(d[i]) }
        let distinct = seen.nonzeroBitCount
        seen = 0
        return d.count <= 7 ? distinct < 3 : distinct < 4
    }

    // MARK: repeating

    static func isRepeating(_ d: Digits) -> Bool {
        hasRepeatedBlock(d) || longestRun(d) >= 3 || (d.count >= 6 && isMirrored(d))
    }

    /// The whole PIN is two or more copies of a shorter block.
    static func hasRepeatedBlock(_ d: Digits) -> Bool {
        let n = d.count
        guard n >= 2 else { return false }
        for period in 1...n / 2 where n % period == 0 {
            var same = true
            for i in period..<n where d[i] != d[i - period] { same = false; break }
            if same { return true }
        }
        return false
    }

    static func longestRun(_ d: Digits) -> Int {
        guard d.count > 0 else { return 0 }
        var longest = 1, run = 1
        for i in 1..<d.count {
            run = d[i] == d[i - 1] ? run + 1 : 1
            longest = max(longest, run)
        }
        return longest
    }

    /// The second half is the first half reversed (123321).
    static func isMirrored(_ d: Digits) -> Bool {
        guard d.count % 2 == 0 else { return false }
        for i in 0..<d.count / 2 where d[i] != d[d.count - 1 - i] { return false }
        return true
    }

    // MARK: pattern

    static func isPattern(_ d: Digits) -> Bool {
        isConstantStep(d) || isKeypadLines(d) || isCornerCycle(d)
    }

    /// Each digit is the previous plus the same non-zero step, modulo 10
    /// (1234, 3579, 9876, 7890, 1470).
    static func isConstantStep(_ d: Digits) -> Bool {
        guard d.count >= 3 else { return false }
        let step = (d[1] - d[0] + 10) % 10
        guard step != 0 else { return false }
        for i in 2..<d.count where (d[i] - d[i - 1] + 10) % 10 != step { return false }
        return true
    }

    /// The PIN splits into straight keypad lines of at least 3 keys each:
    /// consecutive keys adjacent (including diagonally) in one direction
    /// (2580, 147258, 159357, 123654). From 6 digits the last line may have
    /// only 2 keys, so a pattern that runs out of PIN still counts (14725836).
    static func isKeypadLines(_ d: Digits) -> Bool {
        let n = d.count
        // reachable bit i: the first i digits split into lines. A 64-bit set
        // covers every numeric length this module accepts up to 63 digits.
        guard n >= 3, n < 64 else { return false }
        var reachable: UInt64 = 1
        for end in 2...n {
            let shortest = (end == n && n >= 6) ? 2 : 3
            for start in stride(from: end - shortest, through: 0, by: -1)
            where reachable & (1 << UInt64(start)) != 0 && isStraightLine(d, from: start, to: end, shortest: shortest) {
                reachable |= 1 << UInt64(end)
                break
            }
        }
        let result = reachable & (1 << UInt64(n)) != 0
        reachable = 0
        return result
    }

    static func isStraightLine(_ d: Digits, from start: Int, to end: Int, shortest: Int = 3) -> Bool {
        guard end - start >= max(2, shortest) else { return false }
        let first = position(d[start]), second = position(d[start + 1])
        let dr = second.row - first.row, dc = second.column - first.column
        guard abs(dr) <= 1, abs(dc) <= 1, dr != 0 || dc != 0 else { return false }
        for i in start + 2..<end {
            let a = position(d[i - 1]), b = position(d[i])
            if b.row - a.row != dr || b.column - a.column != dc { return false }
        }
        return true
    }

    /// The four corner keys 1, 3, 9, 7 once each, going round the square
    /// (1397, 7931, 3179, …).
    static func isCornerCycle(_ d: Digits) -> Bool {
        guard d.count == 4 else { return false }
        let cycle = [1, 3, 9, 7]
        guard let start = cycle.firstIndex(of: d[0]) else { return false }
        let forward = (0..<4).allSatisfy { d[$0] == cycle[(start + $0) % 4] }
        let backward = (0..<4).allSatisfy { d[$0] == cycle[(start - $0 + 4) % 4] }
        return forward || backward
    }

    /// Where a digit sits on the usual telephone keypad (1 2 3 / 4 5 6 /
    /// 7 8 9 / · 0 ·), as row and column from the top-left corner: the
    /// standard layout of PinEntry's keypad, restated here so the strength
    /// rules need no UI module (a test in PinEntryTests keeps the two equal).
    static func position(_ digit: Int) -> (row: Int, column: Int) {
        digit == 0 ? (row: 3, column: 1) : (row: (digit - 1) / 3, column: (digit - 1) % 3)
    }

    // MARK: dates

    /// Days in a month; February has 29 when the year is unknown.
    static func daysIn(month: Int, year: Int?) -> Int {
        switch month {
        case 1, 3, 5, 7, 8, 10, 12: 31
        case 4, 6, 9, 11: 30
        case 2:
            if let year { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28 } else { 29 }
        default: 0
        }
    }

    static func isDay(_ day: Int, month: Int, year: Int?) -> Bool {
        (1...12).contains(month) && day >= 1 && day <= daysIn(month: month, year: year)
    }

    /// The four-digit year a two-digit year most plausibly means: the latest
    /// year not after `today` with those last two digits.
    static func expand(twoDigitYear yy: Int, today: CalendarDay) -> Int {
        let candidate = today.year - today.year % 100 + yy
        return candidate > today.year ? candidate - 100 : candidate
    }

    static func isPossiblyDate(_ d: Digits, today: CalendarDay, years: ClosedRange<Int>) -> Bool {
        let n = { (start: Int, length: Int) in d.number(from: start, length: length) }
        switch d.count {
        case 4:
            return isDay(n(0, 2), month: n(2, 2), year: nil) || isDay(n(2, 2), month: n(0, 2), year: nil)
                || years.contains(n(0, 4))
        case 6:
            let ddmmyy = isDay(n(0, 2), month: n(2, 2), year: expand(twoDigitYear: n(4, 2), today: today))
            let mmddyy = isDay(n(2, 2), month: n(0, 2), year: expand(twoDigitYear: n(4, 2), today: today))
            let yymmdd = isDay(n(4, 2), month: n(2, 2), year: expand(twoDigitYear: n(0, 2), today: today))
            let mmyyyy = (1...12).contains(n(0, 2)) && years.contains(n(2, 4))
            let yyyymm = years.contains(n(0, 4)) && (1...12).contains(n(4, 2))
            return ddmmyy || mmddyy || yymmdd || mmyyyy || yyyymm
        case 8:
            let ddmmyyyy = years.contains(n(4, 4)) && isDay(n(0, 2), month: n(2, 2), year: n(4, 4))
            let mmddyyyy = years.contains(n(4, 4)) && isDay(n(2, 2), month: n(0, 2), year: n(4, 4))
            let yyyymmdd = years.contains(n(0, 4)) && isDay(n(6, 2), month: n(4, 2), year: n(0, 4))
            return ddmmyyyy || mmddyyyy || yyyymmdd
        default:
            return false
        }
    }
}
