import Foundation

/// How hard the reliability tests push. The defaults are the reduced forms that run inside
/// `scripts/test` (a few minutes together on a loaded 2-core machine); `scripts/chaos` raises them
/// through the environment (`--quick` a little, the full run to the figures in issue 9).
enum Scale {
    private static func integer(_ name: String, _ fallback: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? fallback
    }

    /// SIGKILLs in the crash test (`DETOUR_CHAOS_KILLS`, default 3; full chaos 20+).
    static var kills: Int { integer("DETOUR_CHAOS_KILLS", 3) }
    /// Seconds PostgreSQL stays down in the outage test (`DETOUR_CHAOS_OUTAGE_SECONDS`, default 5; full 60).
    static var outageSeconds: Int { integer("DETOUR_CHAOS_OUTAGE_SECONDS", 5) }
    /// Idle connections held open in the hostile-input test (`DETOUR_CHAOS_IDLE_CONNECTIONS`, default 300).
    static var idleConnections: Int { integer("DETOUR_CHAOS_IDLE_CONNECTIONS", 300) }
    /// Client threads posting batches (`DETOUR_CHAOS_CLIENTS`, default 3).
    static var clients: Int { integer("DETOUR_CHAOS_CLIENTS", 3) }
    /// Where a test appends its figures as `name value` lines (`DETOUR_CHAOS_FIGURES`), for docs/reliability.md.
    static var figuresPath: String? { ProcessInfo.processInfo.environment["DETOUR_CHAOS_FIGURES"] }

    /// Appends `name value` to the figures file when one is configured.
    static func record(_ name: String, _ value: Int) {
        guard let path = figuresPath else { return }
        let line = "\(name) \(value)\n"
        if let handle = FileHandle(forWritingAtPath: path) {
            handle.seekToEndOfFile()
            handle.write(Data(line.utf8))
            handle.closeFile()
        } else {
            _ = FileManager.default.createFile(atPath: path, contents: Data(line.utf8))
        }
    }
}
