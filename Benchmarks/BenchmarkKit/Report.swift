// Rendering of KDF benchmark results: table, CSV, JSON and an SVG plot.
import Foundation

/// Formats a number with `digits` decimals.
func fixed(_ v: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", v) }

/// The table printed on standard output.
public func kdfTable(_ rows: [KDFRow], memcpyGiBps: Double) -> String {
    var out = "memcpy bandwidth: \(fixed(memcpyGiBps, 2)) GiB/s (same run)\n"
    out += "m MiB  t  p  API ms   backend    sodium ms  argon2 ms  floor ms  API/raw  API/floor\n"
    for r in rows {
        let cols = [
            String(r.memoryMiB).padding(toLength: 7, withPad: " ", startingAt: 0),
            String(r.iterations).padding(toLength: 3, withPad: " ", startingAt: 0),
            String(r.parallelism).padding(toLength: 3, withPad: " ", startingAt: 0),
            fixed(r.apiMs).padding(toLength: 9, withPad: " ", startingAt: 0),
            r.apiBackend.padding(toLength: 11, withPad: " ", startingAt: 0),
            (r.rawLibsodiumMs.map { fixed($0) } ?? "-").padding(toLength: 11, withPad: " ", startingAt: 0),
            fixed(r.rawLibargon2Ms).padding(toLength: 11, withPad: " ", startingAt: 0),
            fixed(r.floorMs).padding(toLength: 10, withPad: " ", startingAt: 0),
            fixed(r.apiOverRaw, 3).padding(toLength: 9, withPad: " ", startingAt: 0),
            fixed(r.apiOverFloor, 1),
        ]
        out += cols.joined() + "\n"
    }
    return out
}

/// The same figures as CSV.
public func kdfCSV(_ rows: [KDFRow]) -> String {
    var out =
        "memory_mib,iterations,parallelism,api_ms,api_backend,raw_libsodium_ms,raw_libargon2_ms,floor_ms,api_over_raw\n"
    for r in rows {
        out += "\(r.memoryMiB),\(r.iterations),\(r.parallelism),\(fixed(r.apiMs, 2)),\(r.apiBackend),"
        out += "\(r.rawLibsodiumMs.map { fixed($0, 2) } ?? ""),\(fixed(r.rawLibargon2Ms, 2)),\(fixed(r.floorMs, 2)),"
        out += "\(fixed(r.apiOverRaw, 3))\n"
    }
    return out
}

/// The same figures as JSON.
public func kdfJSON(_ rows: [KDFRow], memcpyGiBps: Double) throws -> String {
    struct Doc: Codable {
        var memcpyGiBps: Double
        var rows: [KDFRow]
        enum CodingKeys: String, CodingKey {
            case memcpyGiBps = "memcpy_gib_per_s"
            case rows
        }
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.keyEncodingStrategy = .convertToSnakeCase
    return String(decoding: try encoder.encode(Doc(memcpyGiBps: memcpyGiBps, rows: rows)), as: UTF8.self)
}

/// An SVG plot of time against memory (log-log), one line per series, with
/// the target time drawn as a dashed line.
public func kdfSVG(_ rows: [KDFRow], targetMs: Double) -> String {
    let width = 760.0
    let height = 480.0
    let left = 70.0
    let right = 200.0
    let top = 30.0
    let bottom = 50.0
    let memories = rows.map { Double($0.memoryMiB) }
    var times = rows.flatMap { [$0.apiMs, $0.rawLibargon2Ms, $0.floorMs] + ($0.rawLibsodiumMs.map { [$0] } ?? []) }
    times.append(targetMs)
    let (mLo, mHi) = (log10(memories.min() ?? 1), log10(max(memories.max() ?? 2, (memories.min() ?? 1) * 2)))
    let (tLo, tHi) = (log10(max(0.1, times.min() ?? 1)), log10(times.max() ?? 10))
    func x(_ m: Double) -> Double { left + (log10(m) - mLo) / (mHi - mLo) * (width - left - right) }
    func y(_ t: Double) -> Double {
        top + (1 - (log10(max(0.1, t)) - tLo) / max(0.001, tHi - tLo)) * (height - top - bottom)
    }
    var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(left)" y="18" font-size="14">Argon2id wall time against memory (log-log)</text>
        <line x1="\(left)" y1="\(height - bottom)" x2="\(width - right)" y2="\(height - bottom)" stroke="black"/>
        <line x1="\(left)" y1="\(top)" x2="\(left)" y2="\(height - bottom)" stroke="black"/>
        <text x="\((left + width - right) / 2)" y="\(height - 12)" text-anchor="middle">memory (MiB)</text>
        <text x="16" y="\((top + height - bottom) / 2)" transform="rotate(-90 16 \((top + height - bottom) / 2))" text-anchor="middle">time (ms)</text>

        """
    for m in Set(rows.map(\.memoryMiB)).sorted() {
        svg += "<text x=\"\(fixed(x(Double(m))))\" y=\"\(height - bottom + 16)\" text-anchor=\"middle\">\(m)</text>\n"
    }
    for decade in stride(from: floor(tLo), through: ceil(tHi), by: 1) {
        let t = pow(10, decade)
        guard t >= pow(10, tLo) * 0.999, t <= pow(10, tHi) * 1.001 else { continue }
        svg += "<text x=\"\(left - 6)\" y=\"\(fixed(y(t) + 4))\" text-anchor=\"end\">\(fixed(t, 0))</text>\n"
        svg +=
            "<line x1=\"\(left)\" y1=\"\(fixed(y(t)))\" x2=\"\(width - right)\" y2=\"\(fixed(y(t)))\" stroke=\"#ddd\"/>\n"
    }
    svg += "<line x1=\"\(left)\" y1=\"\(fixed(y(targetMs)))\" x2=\"\(width - right)\" y2=\"\(fixed(y(targetMs)))\" "
    svg += "stroke=\"red\" stroke-dasharray=\"6 4\"/>\n"
    svg +=
        "<text x=\"\(left + 6)\" y=\"\(fixed(y(targetMs) - 5))\" fill=\"red\">target \(fixed(targetMs, 0)) ms</text>\n"
    let colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    var legend = 0
    let groups = Dictionary(grouping: rows) { "t=\($0.iterations) p=\($0.parallelism)" }
    for (groupIndex, (key, group)) in groups.sorted(by: { $0.key < $1.key }).enumerated() {
        let sorted = group.sorted { $0.memoryMiB < $1.memoryMiB }
        let series: [(String, (KDFRow) -> Double?, String)] = [
            ("API", { $0.apiMs }, ""), ("libargon2", { $0.rawLibargon2Ms }, "4 3"), ("floor", { $0.floorMs }, "1 3"),
        ]
        for (name, value, dash) in series {
            let points = sorted.compactMap { r in value(r).map { "\(fixed(x(Double(r.memoryMiB)))),\(fixed(y($0)))" } }
            guard points.count > 1 else { continue }
            let color = colors[groupIndex % colors.count]
            svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" stroke-dasharray=\"\(dash)\" "
            svg += "points=\"\(points.joined(separator: " "))\"/>\n"
            let ly = top + 16 * Double(legend)
            svg +=
                "<line x1=\"\(width - right + 10)\" y1=\"\(ly + 40)\" x2=\"\(width - right + 34)\" y2=\"\(ly + 40)\" "
            svg += "stroke=\"\(color)\" stroke-width=\"2\" stroke-dasharray=\"\(dash)\"/>\n"
            svg += "<text x=\"\(width - right + 38)\" y=\"\(ly + 44)\">\(name) \(key)</text>\n"
            legend += 1
        }
    }
    return svg + "</svg>\n"
}
