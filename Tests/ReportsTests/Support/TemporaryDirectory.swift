import Foundation

/// A fresh directory for a test's output files (the caller removes it).
func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "reports-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
