/// A cell of the keypad's 3 × 4 grid, counted from the top-left corner.
public struct GridPosition: Hashable, Sendable, CustomStringConvertible {
    /// Number of rows of the keypad grid.
    public static let rows = 4
    /// Number of columns of the keypad grid.
    public static let columns = 3

    /// The row, 0 (top, keys 1 2 3) to 3 (bottom, biometry 0 delete).
    public let row: Int
    /// The column, 0 (left) to 2 (right).
    public let column: Int

    /// Creates a position.
    /// - Parameters:
    ///   - row: 0 to 3 (a precondition).
    ///   - column: 0 to 2 (a precondition).
    public init(row: Int, column: Int) {
        precondition(
            (0..<Self.rows).contains(row) && (0..<Self.columns).contains(column),
            "a keypad position lies in the 3 × 4 grid")
        self.row = row
        self.column = column
    }

    /// `(row, column)`.
    public var description: String { "(\(row), \(column))" }
}

/// What a key does, internally. Never exposed as a value a UI could read a
/// digit from; the public side sees ``KeypadKey/Kind``.
enum PinKey: Hashable, Sendable {
    case digit(UInt8)
    case biometry
    case delete

    /// Every key, digits first.
    static let all: [PinKey] = (0...9).map { .digit(UInt8($0)) } + [.biometry, .delete]

    /// The usual telephone layout: 1 2 3 / 4 5 6 / 7 8 9 / biometry 0 delete.
    var standardPosition: GridPosition {
        switch self {
        case .digit(0): GridPosition(row: 3, column: 1)
        case .digit(let value): GridPosition(row: (Int(value) - 1) / 3, column: (Int(value) - 1) % 3)
        case .biometry: GridPosition(row: 3, column: 0)
        case .delete: GridPosition(row: 3, column: 2)
        }
    }
}
