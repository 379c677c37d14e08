/// Measures the JSON scanner's throughput against Foundation's `JSONSerialization` on the same bodies.
package enum ScannerBenchmark {
    /// One measurement.
    package struct Result: Sendable, CustomStringConvertible {
        /// Bytes scanned per pass.
        package var bytesPerPass: Int
        /// Passes made by each parser.
        package var passes: Int
        /// The scanner's throughput in MB/s (10^6 bytes per second).
        package var scannerMBps: Double
        /// `JSONSerialization`'s throughput in MB/s.
        package var foundationMBps: Double

        /// A one-line summary.
        package var description: String { "" }
    }

    /// Scans `bodies` (default: realistic SDK bodies) repeatedly for about `seconds` per parser.
    package static func run(bodies: [[UInt8]]? = nil, seconds: Double = 2) -> Result {
        fatalError("not yet implemented")
    }
}
