import Foundation

/// Locates the repository checkout the tests were built from.
package enum RepositoryRoot {
    /// The repository root: the nearest directory above this file holding `Package.swift`.
    package static let path: String = find(from: #filePath)

    /// Walks up from `file` to the first directory that contains `Package.swift`.
    package static func find(from file: String) -> String {
        var url = URL(fileURLWithPath: file).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url.path
            }
            url = url.deletingLastPathComponent()
        }
        preconditionFailure("no Package.swift above \(file)")
    }
}
