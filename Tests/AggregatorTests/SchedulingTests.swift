import Foundation
import Observability
import Testing

@testable import Aggregator

@Suite struct SchedulingTests {
    @Test("the timer loads new events without being asked, and stop leaves it stopped")
    func timerLoads() throws {
        let world = try World()
        defer { world.tearDown() }
        let aggregator = try world.aggregator()
        aggregator.start()
        try world.write(manyEvents(50))
        var loaded = 0
        for _ in 0..<300 where loaded < 50 {  // at most ~30 s
            Thread.sleep(forTimeInterval: 0.1)
            loaded = try world.count("select count(*) from events")
        }
        #expect(loaded == 50)
        try world.write(manyEvents(20, prefix: "later"))
        for _ in 0..<300 where loaded < 70 {
            Thread.sleep(forTimeInterval: 0.1)
            loaded = try world.count("select count(*) from events")
        }
        #expect(loaded == 70)
        aggregator.stop()
        #expect(aggregator.state == .stopped)
        let rendered = world.registry.render()
        #expect(rendered.contains("aggregator_rows_loaded_total{table=\"events\"} 70"))
        #expect(rendered.contains("aggregator_lag_events 0.0"))
        #expect(rendered.contains("aggregator_state 3.0"))
    }

    @Test("configuration limits are checked", arguments: ["maxEventsPerCycle", "backoffCap", "loadInterval"])
    func configurationValidated(field: String) {
        var configuration = AggregatorConfiguration(databaseURL: "postgresql://x", dataDirectory: "/tmp/x")
        #expect(throws: Never.self) { try configuration.validate() }
        switch field {
        case "maxEventsPerCycle": configuration.maxEventsPerCycle = 0
        case "backoffCap": configuration.backoffCap = .milliseconds(1)
        default: configuration.loadInterval = .zero
        }
        #expect {
            try configuration.validate()
        } throws: { error in
            if case .invalidConfiguration(let name, _) = error as? AggregatorError { return name == field }
            return false
        }
    }
}
