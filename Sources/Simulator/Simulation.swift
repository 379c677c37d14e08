import Foundation

/// The simulator's entry points: build a world, compute its truth, encode or send its requests.
package enum Simulation {
    /// The deterministic world of the given parameters.
    package static func world(_ parameters: WorldParameters) -> World {
        var generator = WorldGenerator(parameters: parameters)
        return generator.generate()
    }

    /// The exact report numbers of a world (`Truth.encoded()` gives the truth file's bytes).
    package static func truth(of world: World) -> Truth {
        TruthCalculator(world: world).compute()
    }

    /// Every HTTP request of the world, in sending order, fully encoded.
    /// - Parameters:
    ///   - sendTime: the wall-clock time (milliseconds) batch `sent_at` values are computed from;
    ///     `run` uses the real clock at each send instead. Defaults to the end of the period.
    package static func requests(
        for world: World, appID: String, publishableKey: String, secretKey: String, sendTime: Int64? = nil
    ) -> [SimulatedRequest] {
        let encoder = RequestEncoder(world: world, appID: appID, publishableKey: publishableKey, secretKey: secretKey)
        var planner = RequestPlanner(world: world)
        let time = sendTime ?? world.end
        return planner.plan().phases.flatMap { $0.map { encoder.encode($0, sendTime: time) } }
    }

    /// Validates the configuration, writes the truth file (when asked), then sends the world to
    /// the target and returns what happened. Answers that differ from expectations are reported
    /// in the summary (`isSuccess`), not thrown.
    /// - Throws: `SimulationError` for a bad configuration, an unreachable target or an unwritable truth file.
    package static func run(_ configuration: SimulationConfiguration) throws -> SimulationSummary {
        try configuration.validate()
        let target = try TargetAddress(url: configuration.target)
        // Fail fast when unreachable.
        _ = try HTTPConnection(to: target, timeoutSeconds: configuration.ioTimeoutSeconds)
        let deadline = ContinuousClock.now + configuration.deadline
        let world = world(configuration.worldParameters)
        if let path = configuration.truthPath {
            let bytes = truth(of: world).encoded() + [10]
            guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
                throw SimulationError.truthFile(path: path, message: "cannot create the file")
            }
        }
        var planner = RequestPlanner(world: world)
        let encoder = RequestEncoder(
            world: world, appID: configuration.appID, publishableKey: configuration.publishableKey,
            secretKey: configuration.secretKey)
        let runner = LoadRunner(
            target: target, encoder: encoder, concurrency: configuration.concurrency, rate: configuration.rate,
            deadline: deadline, ioTimeoutSeconds: configuration.ioTimeoutSeconds, maxRetries: configuration.maxRetries)
        var summary = runner.run(planner.plan())
        summary.worldDevices = world.devices.count
        summary.worldEvents = world.events.count
        summary.truthPath = configuration.truthPath
        return summary
    }
}
