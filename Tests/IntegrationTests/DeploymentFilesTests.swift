import Foundation
import TestSupport
import Testing

/// docker-compose cannot run here (no Docker engine), so its correctness is checked by reading:
/// the compose file parses into the services an operator runs, and everything it and the
/// Dockerfile name exists: files, commands of the binary, the environment the binary reads. The
/// database roles it sets up are checked by running its init script (DeploymentFilesTests+Roles).
@Suite
struct DeploymentFilesTests {
    let root = RepositoryRoot.path

    @Test("docker-compose.yml parses into postgres, a one-shot migrate and the pipeline")
    func composeServices() throws {
        let compose = try YAMLReader.read(String(contentsOfFile: root + "/docker-compose.yml", encoding: .utf8))
        let services = try #require(compose["services"])
        #expect(Set(services.pairs.map(\.key)) == ["postgres", "migrate", "pipeline"])
        #expect(services["postgres"]?["image"]?.text?.hasPrefix("postgres:15") == true)
        #expect(services["postgres"]?["healthcheck"]?["test"]?.items.first?.text == "CMD-SHELL")
        #expect(services["migrate"]?["command"]?.items.compactMap(\.text) == ["migrate"])
        #expect(services["pipeline"]?["command"]?.items.compactMap(\.text) == ["run"])
        // migrate as the schema's owner, the pipeline as the runtime role; neither as the superuser.
        for (name, role) in [("migrate", "detour_owner"), ("pipeline", "detour_pipeline")] {
            let build = try #require(services[name]?["build"]?.text)
            #expect(
                FileManager.default.fileExists(atPath: root + "/" + build + "/Dockerfile"),
                "\(name) builds from \(build)/Dockerfile")
            let url = services[name]?["environment"]?["DATABASE_URL"]?.text ?? ""
            #expect(url.contains("@postgres:5432/") && url.hasPrefix("postgresql://\(role):"), "\(name): \(url)")
        }
        // The roles come from the repository's init script, mounted where the image runs it.
        let mounts = services["postgres"]?["volumes"]?.items.compactMap(\.text) ?? []
        let initScript = try #require(mounts.first { $0.contains(":/docker-entrypoint-initdb.d/") })
        let script = String(initScript.split(separator: ":")[0])
        #expect(script == "./deploy/postgres-init.sh")
        #expect(FileManager.default.isExecutableFile(atPath: root + "/" + script))
        #expect(initScript.hasSuffix(".sh:ro"), "the image runs *.sh files of that directory: \(initScript)")
        for variable in ["DETOUR_OWNER_PASSWORD", "DETOUR_PIPELINE_PASSWORD"] {
            #expect(services["postgres"]?["environment"]?[variable]?.text?.hasPrefix("${\(variable):?") == true)
        }
        let pipeline = services["pipeline"]
        #expect(pipeline?["environment"]?["DETOUR_HTTP_ADDR"]?.text == "0.0.0.0:8080")
        // Published on the host's loopback unless DETOUR_PUBLISH says otherwise: plain HTTP carrying
        // bearer keys is for a TLS proxy in front, not the network (until 2026-12-05 every interface).
        #expect(pipeline?["ports"]?.items.compactMap(\.text) == ["${DETOUR_PUBLISH:-127.0.0.1:8080}:8080"])
        #expect(pipeline?["depends_on"]?["migrate"]?["condition"]?.text == "service_completed_successfully")
        #expect(services["migrate"]?["depends_on"]?["postgres"]?["condition"]?.text == "service_healthy")
        // The event log is on a named volume of its own, mounted where DETOUR_DATA_DIR points.
        let dataDir = try #require(pipeline?["environment"]?["DETOUR_DATA_DIR"]?.text)
        #expect(pipeline?["volumes"]?.items.compactMap(\.text).contains("eventlog:" + dataDir) == true)
        #expect(compose["volumes"]?.pairs.map(\.key).contains("eventlog") == true)
    }

    @Test("docker-compose.yml has no default database password: it refuses to start until each is set")
    func composeRequiresPassword() throws {
        let text = try String(contentsOfFile: root + "/docker-compose.yml", encoding: .utf8)
        // Every use of a variable is `${POSTGRES_PASSWORD:?message}`: compose stops with the message
        // when it is unset or empty, where `${POSTGRES_PASSWORD:-change-me}` ran with a known password.
        // The superuser's for the postgres image; the owner's also in migrate's URL, the runtime
        // role's in the pipeline's.
        for (variable, count) in [
            ("POSTGRES_PASSWORD", 1), ("DETOUR_OWNER_PASSWORD", 2), ("DETOUR_PIPELINE_PASSWORD", 2),
        ] {
            let uses = text.components(separatedBy: "${\(variable)").dropFirst()
            #expect(uses.count == count, "\(variable) is used \(uses.count) times")
            for use in uses { #expect(use.hasPrefix(":?"), "\(variable)\(use.prefix(20)) has a default") }
        }
        #expect(!text.contains("change-me"))
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

    /// The image's health check runs `sh -c` with the container's environment: it must ask the
    /// address DETOUR_HTTP_ADDR names (it asked 127.0.0.1:8080 whatever that was, so a container
    /// configured with another port was reported unhealthy while it served).
    @Test("the Dockerfile's health check asks /readyz on the port DETOUR_HTTP_ADDR names")
    func healthCheckFollowsTheAddress() throws {
        let text = try String(contentsOfFile: root + "/Dockerfile", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("HEALTHCHECK ") })
        let command = String(try #require(line.range(of: " CMD ").map { line[$0.upperBound...] }))
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "scripts/test installs curl")
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory()
        let (serve, port) = try PipelineProcess.readyServe(database: database, data: data)
        func check(_ address: String) throws -> Int32 {
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
            shell.arguments = ["20", "/bin/sh", "-c", command]
            shell.environment = ["PATH": "/usr/bin:/bin", "DETOUR_HTTP_ADDR": address]
            shell.standardOutput = FileHandle.nullDevice
            shell.standardError = FileHandle.nullDevice
            try shell.run()
            shell.waitUntilExit()
            return shell.terminationStatus
        }
        #expect(try check("0.0.0.0:\(port)") == 0)
        #expect(try check("127.0.0.1:\(port)") == 0)
        // Nothing listens on port 1: the check fails rather than asking some other port.
        #expect(try check("0.0.0.0:1") != 0)
        serve.signal(SIGTERM)
        #expect(serve.waitForExit(timeout: .seconds(60)) == 0)
    }
}
