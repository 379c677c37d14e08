import Foundation
import Simulator

/// `detour-analytics simulate`: plays a realistic world through the real HTTP API and writes the
/// exact numbers the reports must show.
enum SimulateCommand: Command {
    static let name = "simulate"
    static let summary = "play a realistic simulated world through the HTTP API, with its true numbers"
    static let help = """
        Usage: detour-analytics simulate --app ID --publishable-key KEY --secret-key KEY [options]

        Generates links, clicks, matched and organic installs, funnels, retention, purchases and refunds
        in several currencies, re-engagements, custom events, from a seed; sends them the way the SDKs
        and the link service do (SDK family mix, batches and single events, gzip, repeated requests,
        skewed clocks, late events, a few invalid events) and writes the exact expected report numbers.
        Deterministic for a given seed. Exits 1 if any request got an answer it should not have.

        Options:
          --target URL             ingest base URL (default http://127.0.0.1:8080)
          --app ID                 app id (X-App-ID)
          --publishable-key KEY    key for the SDK routes (env DETOUR_PUBLISHABLE_KEY)
          --secret-key KEY         key for the link-service route (env DETOUR_SECRET_KEY; a flag's
                                   value is visible to every local user in `ps` while this runs)
          --links N                links (default 20)
          --devices N              devices (default 1000)
          --days N                 simulated days (default 30)
          --start DATE             first simulated day, YYYY-MM-DD (default: --days days before today
                                   in UTC, so yesterday is the last day; a report's default 30 days
                                   ending today leave out the first of 30 simulated days)
          --seed N                 random seed (default 1)
          --rate N                 events per second, at least 0.001 (default unlimited: a load generator)
          --concurrency N          connections (default 8)
          --deadline D             give up sending after D (default 30m; what is left counts as not
                                   sent, exit 1): at a low --rate, allow for the world's events
          --truth FILE             write the true report numbers as JSON to FILE

        Exit status: 0 every answer as expected, 64 bad usage, 1 an unexpected answer or a failure.
        """

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let target = try arguments.option("--target") ?? "http://127.0.0.1:8080"
        let app = try arguments.required("--app")
        // From the environment too: a command line is readable by every local user (`ps`,
        // /proc/PID/cmdline), and scripts/run --demo passed the demo app's secret key there.
        let publishable = try arguments.required(
            "--publishable-key", default: environment["DETOUR_PUBLISHABLE_KEY"])
        let secret = try arguments.required("--secret-key", default: environment["DETOUR_SECRET_KEY"])
        let links = try arguments.integer("--links", default: 20, in: 1...10_000)
        let devices = try arguments.integer("--devices", default: 1000, in: 1...10_000_000)
        let days = try arguments.integer("--days", default: 30, in: 1...366)
        let start = try arguments.option("--start").map { try parseDay($0) }
        let seed = try arguments.integer("--seed", default: 1, in: 0...Int.max)
        let rate = try arguments.option("--rate").map { text -> Double in
            // A rate far below that made a request's wait overflow, a crash (until 2026-12-05).
            guard let value = Double(text), value >= 0.001, value.isFinite else {
                throw UsageError(description: "--rate must be a number of events per second, at least 0.001")
            }
            return value
        }
        let deadline = try arguments.option("--deadline").map { try parseDuration($0, flag: "--deadline") }
        if let deadline, deadline < .seconds(1) || deadline > .seconds(366 * 86_400) {
            throw UsageError(description: "--deadline must be from 1s to 366d")
        }
        let concurrency = try arguments.integer("--concurrency", default: 8, in: 1...256)
        let truth = try arguments.option("--truth")
        try arguments.finish()
        let configuration = SimulationConfiguration(
            target: target, appID: app, publishableKey: publishable, secretKey: secret, links: links,
            devices: devices, days: days, start: start, seed: UInt64(seed), rate: rate, concurrency: concurrency,
            truthPath: truth, deadline: deadline ?? .seconds(1800))
        do {
            try configuration.validate()
        } catch {
            throw UsageError(description: error.description)
        }
        let summary = try Simulation.run(configuration)
        say(summary.description)
        return summary.isSuccess ? 0 : 1
    }

    /// `YYYY-MM-DD` as UTC midnight in milliseconds since the epoch.
    static func parseDay(_ text: String) throws -> Int64 {
        let parts = text.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, (1970...9999).contains(parts[0]), (1...12).contains(parts[1]),
            (1...31).contains(parts[2])
        else {
            throw UsageError(description: "--start must be a date YYYY-MM-DD, got \(text)")
        }
        var components = DateComponents()
        (components.year, components.month, components.day) = (parts[0], parts[1], parts[2])
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        // The calendar rolls 2026-02-30 over to March 2 rather than refuse it.
        guard let date = calendar.date(from: components),
            calendar.dateComponents([.year, .month, .day], from: date) == components
        else {
            throw UsageError(description: "--start: no such day \(text)")
        }
        return Int64(date.timeIntervalSince1970 * 1000)
    }
}
