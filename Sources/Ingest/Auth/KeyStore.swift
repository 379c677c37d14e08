import Dispatch
import Foundation
import Locking
import Observability
import Synchronization

/// The API keys ingest accepts, held in memory, refreshed from a `KeySource` every
/// `refreshInterval`, and mirrored to a JSON file of hashes (`<data>/keys.json`) so ingest starts
/// and keeps accepting known keys while PostgreSQL is down. Keys themselves are never stored or logged.
package final class KeyStore: Sendable {
    /// The outcome of checking a key against an app.
    package enum Verdict: Sendable, Equatable {
        /// The key belongs to the app.
        case valid(KeyKind)
        /// The key is active, but for a different app.
        case otherApp
        /// No active key matches.
        case unknown
    }

    private struct Snapshot: Sendable {
        var byApp: [String: [(kind: KeyKind, hash: [UInt8])]] = [:]
        /// The app and kind of each active key hash (a key belongs to exactly one app).
        var owners: [String: (appID: String, kind: KeyKind)] = [:]
        /// The records, sorted: what a reload is compared with.
        var records: [APIKeyRecord]
        var count: Int { records.count }

        init(_ records: [APIKeyRecord] = []) {
            for record in records {
                byApp[record.appID, default: []].append((record.kind, Array(record.keyHash.utf8)))
                owners[record.keyHash] = (record.appID, record.kind)
            }
            self.records = records.sorted {
                ($0.appID, $0.keyHash, $0.kind.rawValue) < ($1.appID, $1.keyHash, $1.kind.rawValue)
            }
        }
    }

    private let source: any KeySource
    private let cacheFile: String?
    private let refreshInterval: Duration
    private let snapshot = Locked(Snapshot())
    /// The records `<data>/keys.json` was last written with by this process, sorted; nil until a
    /// write succeeds. A load that differs from them (the first load, even an empty one, and a key
    /// whose app or kind changed) rewrites the file, and a failed write is tried again at the next
    /// refresh. Until 2026-12-04 the file was rewritten only when the set of key hashes changed
    /// against memory, so a first load of no keys left a stale file whose revoked keys came back
    /// at the next start during an outage.
    private let mirrored = Locked<[APIKeyRecord]?>(nil)
    private let timer = Locked<TimerBox?>(nil)
    /// Refreshes failed since the last success: the first failure logs `keys.refresh_failed`, the
    /// next success `keys.refresh_recovered` with the count.
    private let failedRefreshes = Atomic<Int>(0)
    /// Cache writes failed since the last one that worked: the first logs `keys.cache_write_failed`,
    /// the next success `keys.cache_write_recovered` with the count. Until 2026-12-05 every failed
    /// try logged an error, every refresh (10 s) for as long as a full disk lasted.
    private let failedCacheWrites = Locked(0)
    /// Whether a key set was ever loaded (from the source or the cache file). Until then no key
    /// can be judged: a valid key would be refused as unknown, and the SDKs, which send once,
    /// would drop the event for good.
    private let loaded = Atomic<Bool>(false)
    private let logger = Logger(label: "ingest")
    /// Memo of presented key → its SHA-256 hex, so the hot path hashes each distinct key once.
    /// Bounded: cleared when it reaches `maxMemo` entries (garbage keys cannot grow it).
    private let hashMemo = Locked<[String: [UInt8]]>([:])
    private let maxMemo = 10_000
    /// Longest key considered at all, in bytes.
    private let maxKeyBytes = 256

    /// Creates a store; call `start()` to load keys and begin refreshing.
    /// - Parameters:
    ///   - source: where active keys come from (PostgreSQL).
    ///   - cacheFile: path of the on-disk cache of hashes, or nil for none.
    ///   - refreshInterval: time between reloads.
    package init(source: any KeySource, cacheFile: String?, refreshInterval: Duration = .seconds(10)) {
        self.source = source
        self.cacheFile = cacheFile
        self.refreshInterval = refreshInterval
    }

    /// Loads keys (from the source, else from the cache file) and starts the refresh timer.
    package func start() {
        if !refresh() { loadCache() }
        let queue = DispatchQueue(label: "ingest.keys")
        let source = DispatchSource.makeTimerSource(queue: queue)
        let nanos =
            Int(refreshInterval.components.seconds) * 1_000_000_000
            + Int(refreshInterval.components.attoseconds / 1_000_000_000)
        source.schedule(deadline: .now() + .nanoseconds(nanos), repeating: .nanoseconds(nanos))
        source.setEventHandler { [weak self] in _ = self?.refresh() }
        source.resume()
        timer.withLock { $0 = TimerBox(source: source) }
    }

    /// Stops refreshing.
    package func stop() {
        timer.withLock {
            $0?.source.cancel()
            $0 = nil
        }
    }

    deinit { stop() }

    /// Reloads from the source now; on success replaces the keys and rewrites the cache file unless
    /// this process last wrote it with the same records. Returns whether the source answered.
    @discardableResult
    package func refresh() -> Bool {
        let records: [APIKeyRecord]
        do {
            records = try source.loadKeys()
        } catch {
            let failedBefore = failedRefreshes.add(1, ordering: .relaxed).oldValue
            if failedBefore == 0 || snapshot.withLock({ $0.count }) == 0 {
                logger.warning("keys.refresh_failed", ["error": "\(error)"])
            }
            return false
        }
        let failed = failedRefreshes.exchange(0, ordering: .relaxed)
        if failed > 0 {
            logger.notice(
                "keys.refresh_recovered", ["keys.count": String(records.count), "failed.refreshes": String(failed)])
        }
        let next = Snapshot(records)
        let changed = snapshot.withLock { current in
            let changed = current.records != next.records
            current = next
            return changed
        }
        let wasLoaded = loaded.exchange(true, ordering: .acquiringAndReleasing)
        if changed || !wasLoaded {
            logger.info("keys.loaded", ["keys.count": String(records.count), "keys.source": "database"])
        }
        if mirrored.withLock({ $0 != next.records }), writeCache(records) {
            mirrored.withLock { $0 = next.records }
        }
        return true
    }

    /// Checks `key` (as sent by the client) for `appID`, comparing hashes in constant time.
    package func verify(key: String, appID: String) -> Verdict {
        // No issued key is this long; refusing early also keeps the hash memo small.
        guard let hashBytes = hash(of: key) else { return .unknown }
        return snapshot.withLock { snapshot in
            var found: KeyKind?
            for candidate in snapshot.byApp[appID] ?? [] where constantTimeEquals(candidate.hash, hashBytes) {
                found = candidate.kind
            }
            if let found { return .valid(found) }
            return snapshot.owners[String(decoding: hashBytes, as: UTF8.self)] != nil ? .otherApp : .unknown
        }
    }

    /// The app and kind of an active `key`, or nil when no active key matches: for a caller that
    /// names no app (the link service, whose secret key belongs to exactly one app).
    package func owner(of key: String) -> (appID: String, kind: KeyKind)? {
        guard let hashBytes = hash(of: key) else { return nil }
        let hex = String(decoding: hashBytes, as: UTF8.self)
        return snapshot.withLock { $0.owners[hex] }
    }

    /// Whether a key set was ever loaded, from PostgreSQL or the cache file (an empty set counts:
    /// the source answered). Before that, keys cannot be judged and ingest answers 503.
    package var isLoaded: Bool { loaded.load(ordering: .acquiring) }

    /// The SHA-256 hex of `key` as bytes, memoised; nil for a key longer than any issued one.
    private func hash(of key: String) -> [UInt8]? {
        guard key.utf8.count <= maxKeyBytes else { return nil }
        if let memo = hashMemo.withLock({ $0[key] }) { return memo }
        let computed = Array(SHA256.hex(Array(key.utf8)).utf8)
        hashMemo.withLock { memo in
            if memo.count >= maxMemo { memo.removeAll(keepingCapacity: true) }
            memo[key] = computed
        }
        return computed
    }

    /// A Dispatch timer; `@unchecked Sendable` because Dispatch sources are thread-safe objects.
    private struct TimerBox: @unchecked Sendable {
        let source: any DispatchSourceTimer
    }

    /// How many keys are loaded.
    package var count: Int { snapshot.withLock { $0.count } }

    private struct CacheFile: Codable {
        var version: Int
        var keys: [APIKeyRecord]
    }

    private func loadCache() {
        guard let cacheFile else { return }
        guard FileManager.default.fileExists(atPath: cacheFile) else {
            // The first start, or a new data directory: nothing to fall back on until PostgreSQL answers.
            logger.warning(
                "keys.unavailable",
                ["file": cacheFile, "reason": "PostgreSQL did not answer and there is no key cache yet; answering 503"])
            return
        }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: cacheFile))
            let cache = try JSONDecoder().decode(CacheFile.self, from: data)
            snapshot.withLock { $0 = Snapshot(cache.keys) }
            loaded.store(true, ordering: .releasing)
            logger.notice("keys.loaded", ["keys.count": String(cache.keys.count), "keys.source": "cache"])
        } catch {
            logger.error("keys.cache_unreadable", ["file": cacheFile, "error": "\(error)"])
        }
    }

    /// Writes the cache atomically: a temporary file, fsync, rename over the old one, fsync the
    /// directory. Returns whether it was written (true with no cache file configured).
    private func writeCache(_ records: [APIKeyRecord]) -> Bool {
        guard let cacheFile else { return true }
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(CacheFile(version: 1, keys: records))
            try AtomicFile.write(data, to: cacheFile)
            let failed = failedCacheWrites.withLock { failed in
                defer { failed = 0 }
                return failed
            }
            if failed > 0 {
                logger.notice("keys.cache_write_recovered", ["file": cacheFile, "failed.writes": String(failed)])
            }
            return true
        } catch {
            let failedBefore = failedCacheWrites.withLock { failed in
                defer { failed += 1 }
                return failed
            }
            if failedBefore == 0 {
                logger.error("keys.cache_write_failed", ["file": cacheFile, "error": "\(error)"])
            }
            return false
        }
    }
}

/// Replaces a file's contents atomically and durably.
enum AtomicFile {
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var code: Int32
        var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    static func write(_ data: Data, to path: String) throws {
        // A name of this write's own: ingest nodes sharing a data directory share the cache file, and
        // with one fixed `.tmp` name (until 2026-12-05) one node could unlink the other's file while
        // it was written, or rename the other's half-written file into place.
        let temporary = path + ".tmp.\(getpid()).\(UInt64.random(in: 0...UInt64.max))"
        // A fresh file, never one found there (a planted link is not followed).
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(call: "open", code: errno) }
        var failure: Failure?
        data.withUnsafeBytes { bytes in
            var written = 0
            while written < bytes.count {
                let n = Foundation.write(fd, bytes.baseAddress! + written, bytes.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = Failure(call: "write", code: errno)
                    return
                }
                written += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = Failure(call: "fsync", code: errno) }
        close(fd)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw Failure(call: "rename", code: code)
        }
        let directory = (path as NSString).deletingLastPathComponent
        let dirFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            fsync(dirFD)
            close(dirFD)
        }
    }
}
