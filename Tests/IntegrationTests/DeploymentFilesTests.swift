import Foundation
import TestSupport
import Testing

/// docker-compose cannot run here (no Docker engine), so its correctness is checked by reading:
/// the compose file parses into the services an operator runs, and everything it and the
/// Dockerfile name exists: files, commands of the binary, the environment the binary reads.
@Suite
struct DeploymentFilesTests {
    let root = RepositoryRoot.path

    @Test("docker-compose.yml parses into postgres, a one-shot migrate and the pipeline")
    func composeServices() throws {
        let compose = try ComposeFile(path: root + "/docker-compose.yml")
        #expect(Set(compose.services.keys) == ["postgres", "migrate", "pipeline"])
        #expect(compose.services["postgres"]?["image"]?.hasPrefix("postgres:15") == true)
        #expect(compose.services["migrate"]?["command"] == #"["migrate"]"#)
        #expect(compose.services["pipeline"]?["command"] == #"["run"]"#)
        for name in ["migrate", "pipeline"] {
            let build = try #require(compose.services[name]?["build"])
            #expect(
                FileManager.default.fileExists(atPath: root + "/" + build + "/Dockerfile"),
                "\(name) builds from \(build)/Dockerfile")
            #expect(compose.services[name]?["environment.DATABASE_URL"]?.contains("@postgres:5432/") == true)
        }
        #expect(compose.services["pipeline"]?["environment.DETOUR_HTTP_ADDR"] == "0.0.0.0:8080")
        #expect(compose.services["pipeline"]?["depends_on.migrate.condition"] == "service_completed_successfully")
        #expect(compose.services["migrate"]?["depends_on.postgres.condition"] == "service_healthy")
    }

    @Test("the Dockerfile copies files that exist and runs commands the binary has")
    func dockerfile() throws {
        let text = try String(contentsOfFile: root + "/Dockerfile", encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let copies = lines.filter { $0.hasPrefix("COPY ") && !$0.contains("--from=") }
        #expect(copies.count >= 4)
        for line in copies {
            let parts = line.split(separator: " ").map(String.init)
            for source in parts.dropFirst().dropLast() {
                #expect(
                    FileManager.default.fileExists(atPath: root + "/" + source),
                    "Dockerfile copies \(source), which does not exist")
            }
        }
        #expect(text.contains("COPY sql /usr/share/detour-analytics/sql"))
        #expect(text.contains("DETOUR_SQL_DIR=/usr/share/detour-analytics/sql"))
        #expect(text.contains(#"ENTRYPOINT ["detour-analytics"]"#))
        // A named volume starts with the image's ownership of its mount point: each VOLUME must be
        // created and given to the USER the image runs as, or `run` cannot create segments/ in it.
        let user = lines.last { $0.hasPrefix("USER ") }.map { String($0.dropFirst(5)) }
        let volumes = lines.filter { $0.hasPrefix("VOLUME ") }.map { String($0.dropFirst(7)) }
        #expect(user != nil && !volumes.isEmpty)
        for volume in volumes {
            #expect(
                text.contains("mkdir -p \(volume)") && text.contains("chown \(user ?? "?"):\(user ?? "?") \(volume)"),
                "Dockerfile declares VOLUME \(volume) but does not create it owned by \(user ?? "its USER")")
        }
        for command in ["run", "migrate"] {
            let help = try PipelineProcess.runToEnd([command, "--help"])
            #expect(help.status == 0, "the image runs `detour-analytics \(command)`")
        }
        let runHelp = try PipelineProcess.runToEnd(["run", "--help"]).output
        for variable in ["DATABASE_URL", "DETOUR_DATA_DIR", "DETOUR_HTTP_ADDR"] {
            #expect(runHelp.contains(variable), "run reads \(variable), which compose sets")
        }
    }
}

/// The subset of YAML docker-compose.yml uses: nested maps by indentation, scalars, flow lists
/// kept as text, `- item` lists. Keys are flattened with dots below each service.
struct ComposeFile {
    var services: [String: [String: String]] = [:]

    init(path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var stack: [(indent: Int, key: String)] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = String(raw)
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let indent = line.prefix { $0 == " " }.count
            while let last = stack.last, last.indent >= indent { stack.removeLast() }
            if trimmed.hasPrefix("- ") { continue }  // list items (ports, volumes, test) are not checked
            guard let colon = trimmed.firstIndex(of: ":") else {
                throw ComposeError(line: line, reason: "expected key: value")
            }
            let key = String(trimmed[..<colon])
            let value = trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            let path = stack.map(\.key) + [key]
            if path.count >= 3, path[0] == "services" {
                let service = path[1]
                let field = path.dropFirst(2).joined(separator: ".")
                services[service, default: [:]][field] =
                    value.isEmpty ? "" : value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            } else if path.count == 2, path[0] == "services" {
                services[key, default: [:]] = services[key] ?? [:]
            }
            if value.isEmpty { stack.append((indent, key)) }
        }
    }
}

struct ComposeError: Error, CustomStringConvertible {
    let line: String
    let reason: String
    var description: String { "docker-compose.yml: \(reason): \(line)" }
}
