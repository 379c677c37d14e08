/// Everything `detour-analytics simulate` needs, parsed once by the CLI.
package struct SimulationConfiguration: Sendable {
    /// Base URL of the ingest server, `http://host[:port]` (default `http://127.0.0.1:8080`).
    package var target: String
    /// The app id (`X-App-ID`).
    package var appID: String
    /// Publishable key for SDK routes (`Authorization: Bearer`).
    package var publishableKey: String
    /// Secret key for the link-service route.
    package var secretKey: String
    /// Number of links (default 20).
    package var links: Int
    /// Target number of devices (default 1,000).
    package var devices: Int
    /// Simulated days (default 30).
    package var days: Int
    /// First simulated day, UTC midnight in milliseconds since the epoch. The whole period must
    /// end before the run starts (the pipeline clamps future times). `defaultStart(days:)` ends it today.
    package var start: Int64
    /// Seed of every random draw (default 1).
    package var seed: UInt64
    /// Events per second; nil sends as fast as the server answers (default nil).
    package var rate: Double?
    /// Worker threads, each with one keep-alive connection (default 8, at most 256).
    package var concurrency: Int
    /// Where to write the truth JSON; nil writes none.
    package var truthPath: String?
    /// Total deadline for sending; requests not sent by then are counted as not sent (default 30 minutes).
    package var deadline: Duration
    /// Socket connect/send/receive timeout in seconds (default 30).
    package var ioTimeoutSeconds: Int
    /// How often a request answered 429 or 503 is sent again, after its `Retry-After` (capped at
    /// 5 s; 1 s when absent) (default 5). The pipeline dedups, so a retry never counts twice.
    package var maxRetries: Int

    /// Creates a configuration; every parameter but the keys has a default.
    package init(
        target: String = "http://127.0.0.1:8080", appID: String, publishableKey: String, secretKey: String,
        links: Int = 20, devices: Int = 1000, days: Int = 30, start: Int64? = nil, seed: UInt64 = 1,
        rate: Double? = nil, concurrency: Int = 8, truthPath: String? = nil, deadline: Duration = .seconds(1800),
        ioTimeoutSeconds: Int = 30, maxRetries: Int = 5
    ) {
        self.target = target
        self.appID = appID
        self.publishableKey = publishableKey
        self.secretKey = secretKey
        self.links = links
        self.devices = devices
        self.days = days
        self.start = start ?? Self.defaultStart(days: days)
        self.seed = seed
        self.rate = rate
        self.concurrency = concurrency
        self.truthPath = truthPath
        self.deadline = deadline
        self.ioTimeoutSeconds = ioTimeoutSeconds
        self.maxRetries = maxRetries
    }

    /// The start that makes the period end at today's UTC midnight: today minus `days` days.
    package static func defaultStart(days: Int) -> Int64 {
        let today = SimulatedTime.dayIndex(LoadRunner.wallClockMilliseconds())
        return (today - Int64(days)) * SimulatedTime.day
    }

    /// The world parameters this configuration describes.
    package var worldParameters: WorldParameters {
        WorldParameters(appID: appID, links: links, devices: devices, days: days, start: start, seed: seed)
    }

    /// Checks ranges and that the period lies in the past.
    /// - Throws: `SimulationError.invalidConfiguration` naming the first bad field.
    package func validate(now: Int64 = LoadRunner.wallClockMilliseconds()) throws(SimulationError) {
        guard !appID.isEmpty else { throw .invalidConfiguration("--app is required") }
        guard (1...10_000).contains(links) else { throw .invalidConfiguration("--links must be 1...10000") }
        guard (1...10_000_000).contains(devices) else { throw .invalidConfiguration("--devices must be 1...10000000") }
        guard (1...366).contains(days) else { throw .invalidConfiguration("--days must be 1...366") }
        guard (1...256).contains(concurrency) else { throw .invalidConfiguration("concurrency must be 1...256") }
        guard (0...100).contains(maxRetries) else { throw .invalidConfiguration("retries must be 0...100") }
        if let rate, !(rate > 0) { throw .invalidConfiguration("--rate must be positive") }
        // A malformed --target is bad usage (64), found before the world is generated; a name that
        // does not resolve is found when sending starts.
        do {
            _ = try TargetAddress(url: target)
        } catch .invalidTarget(let url) {
            throw .invalidConfiguration("invalid --target \(url): expected http://host[:port]")
        } catch {}
        let end = SimulatedTime.dayIndex(start) * SimulatedTime.day + Int64(days) * SimulatedTime.day
        guard end <= now else {
            throw .invalidConfiguration(
                "the period ends \(SimulatedTime.iso8601(end)), after now; choose an earlier --start")
        }
    }
}
