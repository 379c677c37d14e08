import Foundation
import TestSupport
import Testing

/// The fuzzers (Fuzz/, a separate package) compile the main package's modules from symlinked
/// source directories with a target list of their own. When a module gains a dependency in the
/// main Package.swift and not in Fuzz/Package.swift, the fuzzers stop building and nothing else
/// notices (it happened twice: CivilTime, then Locking). This compares the two manifests.
@Suite
struct FuzzPackageTests {
    /// `swift package dump-package` of the package at `path`: target name → (type, dependency names).
    static func targets(packageAt path: String) throws -> [String: (type: String, dependencies: Set<String>)] {
        let swift = try #require(
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
                .map { $0 + "/swift" }.first { FileManager.default.isExecutableFile(atPath: $0) },
            "swift is on PATH")
        // A scratch path of its own: `swift test` holds the lock on the package's .build.
        let scratch = try TemporaryDirectory(prefix: "detour-dump-package")
        let result = try ChildProcess.run(
            swift, ["package", "--package-path", path, "--scratch-path", scratch.path, "dump-package"],
            environment: ProcessInfo.processInfo.environment, timeout: .seconds(120))
        #expect(result.status == 0, "dump-package \(path): \(result.errors)")
        let manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        var targets: [String: (type: String, dependencies: Set<String>)] = [:]
        for target in manifest["targets"] as? [[String: Any]] ?? [] {
            guard let name = target["name"] as? String, let type = target["type"] as? String else { continue }
            let dependencies = (target["dependencies"] as? [[String: Any]] ?? []).compactMap {
                ($0["byName"] as? [Any])?.first as? String
            }
            targets[name] = (type, Set(dependencies))
        }
        return targets
    }

    @Test("every module the fuzzers compile from the main sources has the main package's dependencies")
    func fuzzManifestMatchesMain() throws {
        let root = RepositoryRoot.path
        let main = try Self.targets(packageAt: root)
        let fuzz = try Self.targets(packageAt: root + "/Fuzz")
        let linked = try FileManager.default.contentsOfDirectory(atPath: root + "/Fuzz/Sources").filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: root + "/Fuzz/Sources/" + $0)) != nil
        }
        #expect(linked.contains("EventModel") && linked.contains("EventLog"), "symlinked modules: \(linked)")
        for name in linked {
            let destination = try FileManager.default.destinationOfSymbolicLink(atPath: root + "/Fuzz/Sources/" + name)
            #expect(destination == "../../Sources/" + name, "Fuzz/Sources/\(name) points at the main sources")
            let ours = try #require(main[name], "\(name) is a target of the main package")
            let theirs = try #require(fuzz[name], "\(name) is a target of Fuzz/Package.swift")
            #expect(theirs.type == ours.type, "\(name): target type")
            #expect(
                theirs.dependencies == ours.dependencies,
                "\(name): Fuzz/Package.swift has \(theirs.dependencies.sorted()), the main package \(ours.dependencies.sorted())"
            )
            for dependency in ours.dependencies {
                #expect(
                    linked.contains(dependency),
                    "\(name) needs \(dependency): add the symlink Fuzz/Sources/\(dependency)")
            }
        }
    }
}
