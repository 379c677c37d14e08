import Foundation

struct ChromiumUnavailable: Error {}

/// Headless Chromium for rendering tests: found on PATH, or installed with apt-get when running as
/// root (once per process); otherwise unavailable with a reason.
struct Chromium {
    let executable: String
    nonisolated(unsafe) static var unavailableReason = ""

    static func find() -> Chromium? {
        if let path = lookup() { return Chromium(executable: path) }
        guard getuid() == 0 else {
            unavailableReason = "chromium is not on PATH and the tests are not running as root"
            return nil
        }
        let status = run(
            "/usr/bin/env", ["DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q", "chromium"])
        if let path = lookup() { return Chromium(executable: path) }
        unavailableReason = "apt-get install chromium exited with \(status)"
        return nil
    }

    private static func lookup() -> String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Renders a local HTML file to a PNG, bounded by a timeout.
    func screenshot(html: String, png: String) throws {
        let profile = NSTemporaryDirectory() + "chromium-profile-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let status = Self.run(
            "/usr/bin/timeout",
            [
                "90", executable, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--user-data-dir=" + profile, "--window-size=1000,1600", "--screenshot=" + png,
                "file://" + html,
            ])
        guard status == 0, FileManager.default.fileExists(atPath: png) else {
            throw ChromiumFailed(status: status)
        }
    }

    /// The laid-out page width (`scrollWidth`) of a local HTML file in a window `windowWidth` wide:
    /// a copy of the page gets a script that writes it into the DOM, which `--dump-dom` prints.
    func scrollWidth(html: String, windowWidth: Int) throws -> Int {
        let probe = NSTemporaryDirectory() + "chromium-probe-" + UUID().uuidString + ".html"
        let dump = probe + ".dom"
        let profile = NSTemporaryDirectory() + "chromium-profile-" + UUID().uuidString
        defer { for path in [probe, dump, profile] { try? FileManager.default.removeItem(atPath: path) } }
        let script =
            #"<script>document.body.setAttribute("data-scroll-width", "#
            + #"String(document.documentElement.scrollWidth))</script></body>"#
        let page = try String(contentsOfFile: html, encoding: .utf8).replacingOccurrences(of: "</body>", with: script)
        try page.write(toFile: probe, atomically: true, encoding: .utf8)
        let status = Self.run(
            "/usr/bin/timeout",
            [
                "90", executable, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile,
                "--window-size=\(windowWidth),600", "--dump-dom", "file://" + probe,
            ], standardOutput: dump)
        let dom = (try? String(contentsOfFile: dump, encoding: .utf8)) ?? ""
        guard status == 0, let range = dom.range(of: #"data-scroll-width=""#),
            let width = Int(dom[range.upperBound...].prefix { $0.isNumber })
        else { throw ChromiumFailed(status: status) }
        return width
    }

    struct ChromiumFailed: Error { var status: Int32 }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], standardOutput: String? = nil) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        if let standardOutput {
            _ = FileManager.default.createFile(atPath: standardOutput, contents: nil)
            process.standardOutput = FileHandle(forWritingAtPath: standardOutput) ?? FileHandle.nullDevice
        }
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return -1
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
