import Foundation
import Glibc
import Locking

/// A structured logger with swift-log's call shape: a constant message plus dotted metadata keys,
/// one line per record to standard error, e.g.
/// `2026-11-29T17:20:00.123Z info aggregator: cycle.done rows=512 cycle.ms=41`.
package struct Logger: Sendable {
    /// Severity, ordered from the most verbose.
    package enum Level: Int, Sendable, Comparable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical

        package static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        /// Parses a level name such as `info` or `warning`; nil for anything else.
        package init?(name: String) {
            guard let level = Level.allCases.first(where: { "\($0)" == name.lowercased() }) else { return nil }
            self = level
        }
    }

    /// The component this logger speaks for (`ingest`, `aggregator`, ...).
    package let label: String

    /// Creates a logger for one component.
    package init(label: String) { self.label = label }

    /// The minimum level written, for every logger; set once at start-up.
    package static var minimumLevel: Level {
        get { sharedState.withLock { $0.level } }
        set { sharedState.withLock { $0.level = newValue } }
    }

    /// Runs `body` with every line logged meanwhile kept for it (and not written to standard error);
    /// `lines()` returns those so far. Tests read what was logged this way; captures running at the
    /// same time (suites in parallel) each get every line.
    package static func capture<R>(_ body: (_ lines: () -> [String]) throws -> R) rethrows -> R {
        let lines = Locked<[String]>([])
        let id = sharedState.withLock { state in
            state.nextSink += 1
            state.sinks[state.nextSink] = { line in lines.withLock { $0.append(line) } }
            return state.nextSink
        }
        defer { _ = sharedState.withLock { $0.sinks.removeValue(forKey: id) } }
        return try body { lines.withLock { $0 } }
    }

    package func trace(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.trace, message, metadata)
    }
    package func debug(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.debug, message, metadata)
    }
    package func info(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.info, message, metadata)
    }
    package func notice(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.notice, message, metadata)
    }
    package func warning(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.warning, message, metadata)
    }
    package func error(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.error, message, metadata)
    }
    package func critical(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.critical, message, metadata)
    }

    /// Writes one record if `level` is at or above the minimum level.
    package func log(_ level: Level, _ message: StaticString, _ metadata: KeyValuePairs<String, String>) {
        let (minimum, sinks) = Logger.sharedState.withLock { ($0.level, $0.sinks) }
        guard level >= minimum else { return }
        var line = "\(Logger.timestamp()) \(level) \(label): \(message)"
        for (key, value) in metadata {
            line += " \(key)=\(Logger.quoted(value))"
        }
        if !sinks.isEmpty {
            for sink in sinks.values { sink(line) }
        } else {
            line += "\n"
            Logger.writeToStandardError(&line)
        }
    }

    private struct State {
        var level: Level = .info
        var sinks: [Int: @Sendable (String) -> Void] = [:]
        var nextSink = 0
    }
    private static let sharedState = Locked(State())

    /// `value` as it stands when it needs no quoting, else in double quotes with `"` and `\` escaped.
    /// Control characters (C0, DEL, C1, U+2028/2029) are always escaped (`\n`, `\r`, `\t`, else
    /// `\u{1b}`), one scalar at a time: a value, which may come from a client through an error
    /// message, can neither start a forged record (a CR LF is one `Character`, which a
    /// per-character match on "\n" missed) nor send escape sequences to an operator's terminal.
    private static func quoted(_ value: String) -> String {
        func isControl(_ scalar: Unicode.Scalar) -> Bool {
            scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028
                || scalar.value == 0x2029
        }
        let needsQuotes = value.unicodeScalars.contains { $0 == " " || $0 == "\"" || $0 == "=" || isControl($0) }
        if !value.isEmpty, !needsQuotes { return value }
        var escaped = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where isControl(scalar): escaped += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }

    /// Writes `line` to standard error with write(2), dropping it when that fails: a log on a full
    /// disk (`2>>/var/log/detour.log` on the data directory's disk) must not stop the process, and
    /// `FileHandle.write`, used until 2026-12-02, crashed it there.
    private static func writeToStandardError(_ line: inout String) {
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = time_t(now.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1,
            parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, Int(now.tv_nsec / 1_000_000))
    }
}
