import Foundation

/// A failure to understand the command line; printed with the command's usage.
struct UsageError: Error, CustomStringConvertible {
    let description: String
}

/// A refusal that ends a command with its own exit status and one line, without the command's help
/// (which `UsageError` prints): a name that matches nothing in the database, for instance.
protocol RefusalError: Error, CustomStringConvertible {
    var exitStatus: Int32 { get }
}

/// The arguments of one command: options are taken by name, what is left must be empty.
/// Accepts `--name value` and `--name=value`; `--help`/`-h` anywhere asks for help.
struct Arguments {
    private var tokens: [String]

    init(_ tokens: [String]) { self.tokens = tokens }

    /// Whether `--help` or `-h` was given.
    var wantsHelp: Bool { tokens.contains("--help") || tokens.contains("-h") }

    /// Removes and returns the first positional argument (a subcommand or file), if any.
    mutating func popPositional() -> String? {
        guard let index = tokens.firstIndex(where: { !$0.hasPrefix("-") }) else { return nil }
        return tokens.remove(at: index)
    }

    /// Removes `--name` and returns whether it was present.
    mutating func flag(_ name: String) -> Bool {
        guard let index = tokens.firstIndex(of: name) else { return false }
        tokens.remove(at: index)
        return true
    }

    /// Removes `--name value` (or `--name=value`) and returns the value, if present.
    mutating func option(_ name: String) throws -> String? {
        if let index = tokens.firstIndex(where: { $0.hasPrefix(name + "=") }) {
            let value = String(tokens.remove(at: index).dropFirst(name.count + 1))
            return value
        }
        guard let index = tokens.firstIndex(of: name) else { return nil }
        guard index + 1 < tokens.count else { throw UsageError(description: "\(name) needs a value") }
        let value = tokens[index + 1]
        tokens.removeSubrange(index...index + 1)
        return value
    }

    /// Like `option`, but falls back to `fallback` (usually an environment variable's value).
    mutating func option(_ name: String, default fallback: String?) throws -> String? {
        try option(name) ?? fallback
    }

    /// Like `option`, falling back to the environment variable `variable`; also says which of the two
    /// set the value (the flag or the variable, the flag when neither did), so a refusal names it.
    mutating func option(
        _ name: String, orEnvironment variable: String, _ environment: Environment
    ) throws -> (value: String?, source: String) {
        if let value = try option(name) { return (value, name) }
        if let value = environment[variable] { return (value, variable) }
        return (nil, name)
    }

    /// Like `option`, parsed as an integer within `range`.
    mutating func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = try option(name) else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(
                description: "\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got \(text)")
        }
        return value
    }

    /// A required option.
    mutating func required(_ name: String, default fallback: String? = nil) throws -> String {
        guard let value = try option(name) ?? fallback else { throw UsageError(description: "\(name) is required") }
        return value
    }

    /// Throws if anything was not consumed, so typos are reported rather than ignored.
    func finish() throws {
        if let stray = tokens.first { throw UsageError(description: "unexpected argument \(stray)") }
    }
}

/// Parses a duration such as `200us`, `500ms`, `2s`, `5m`, `1h`, `7d` (to the microsecond); a bare
/// number is seconds.
func parseDuration(_ text: String, flag: String) throws -> Duration {
    // Longest suffix first ("ms" and "us" before "s"). Kept to the microsecond: `--commit-delay
    // 200us` (or 0.2ms) is a useful setting, and whole milliseconds made it 0. Below 1e12 s, so
    // the microseconds fit in an Int64.
    let units: [(String, Double)] = [("us", 1e-6), ("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
    for (suffix, scale) in units where text.hasSuffix(suffix) {
        if let number = Double(text.dropLast(suffix.count)), number >= 0, number * scale < 1e12 {
            return .microseconds(Int64((number * scale * 1e6).rounded()))
        }
    }
    if let number = Double(text), number >= 0, number < 1e12 { return .microseconds(Int64((number * 1e6).rounded())) }
    throw UsageError(description: "\(flag) must be a duration such as 200us, 500ms, 2s, 5m, 1h or 7d, got \(text)")
}

/// Parses a byte size such as `128MiB`, `512KiB`, `2GiB` or a bare byte count.
func parseBytes(_ text: String, flag: String) throws -> Int64 {
    let units: [(String, Int64)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40), ("B", 1)]
    for (suffix, scale) in units where text.hasSuffix(suffix) {
        if let number = Int64(text.dropLast(suffix.count)), number >= 0 {
            // `99999999999999TiB` overflowed the multiplication and trapped (exit 132, no message).
            let (bytes, overflow) = number.multipliedReportingOverflow(by: scale)
            guard !overflow else { throw UsageError(description: "\(flag) is too large, got \(text)") }
            return bytes
        }
    }
    if let number = Int64(text), number >= 0 { return number }
    throw UsageError(description: "\(flag) must be a size such as 512KiB, 128MiB or 2GiB, got \(text)")
}
