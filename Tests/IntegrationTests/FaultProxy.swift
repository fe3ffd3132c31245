import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One of the Python tools of `scripts/` as a child process that prints `listening PORT` once it
/// accepts connections; killed when the value goes (a test that needs it to the end says so with
/// `withExtendedLifetime`). Immutable after `init` (the process is only touched again in
/// `deinit`), hence `@unchecked Sendable`.
final class ScriptProcess: @unchecked Sendable {
    let process = Process()
    let port: Int

    struct NoPort: Error, CustomStringConvertible {
        let script: String
        let output: String
        var description: String { "\(script) printed no `listening PORT` line: \(output)" }
    }

    init(script name: String, _ arguments: [String]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/\(name)").standardizedFileURL
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Up to the first newline; `availableData` is empty once the script exits.
        var text = ""
        while !text.contains("\n") {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        let line = text.split(separator: "\n").first.map(String.init) ?? ""
        guard line.hasPrefix("listening "), let port = Int(line.dropFirst("listening ".count).trimmingCharacters(in: .whitespaces)) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw NoPort(script: name, output: text)
        }
        self.port = port
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// GET or POST of a control path (`/__…`) of the script; the JSON it answers.
    func control(_ path: String, method: String = "GET") async throws -> Any {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.timeoutInterval = 10
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONSerialization.jsonObject(with: data)
    }

    /// A JSON object's integer fields (numbers arrive as NSNumber on Linux).
    static func integers(_ object: Any) -> [String: Int] {
        var result: [String: Int] = [:]
        for (key, value) in object as? [String: Any] ?? [:] {
            if let number = value as? Int {
                result[key] = number
            } else if let flag = value as? Bool {
                result[key] = flag ? 1 : 0
            }
        }
        return result
    }
}

/// `scripts/faultproxy.py` between the gateway and SeaweedFS: S3 errors, resets and stalls on a
/// share of the requests, an outage on demand, and a count of every part S3 stored.
final class FaultProxy: Sendable {
    /// One part S3 stored, and how many times its PUT (UploadPart, UploadPartCopy) got a 2xx.
    struct StoredPart: Sendable, Hashable {
        let uploadID: String
        let partNumber: Int
        let stored: Int
    }

    let script: ScriptProcess
    var port: Int { script.port }

    init(_ arguments: [String], upstream: String = "127.0.0.1:18333") throws {
        script = try ScriptProcess(script: "faultproxy.py", ["--upstream", upstream] + arguments)
    }

    /// The counts so far (`/__faults`): requests, matched, errors, resets, stalls, delays,
    /// outage, flips, parts_stored, parts_stored_twice, outage_active.
    func stats() async throws -> [String: Int] {
        ScriptProcess.integers(try await script.control("/__faults"))
    }

    /// Every part S3 stored so far.
    func parts() async throws -> [StoredPart] {
        Self.parts(try await script.control("/__parts"))
    }

    /// Every request is answered 503 SlowDown (or `--error`) for `seconds`; returns the parts
    /// S3 had stored when the outage began.
    func beginOutage(seconds: Int) async throws -> [StoredPart] {
        let answer = try await script.control("/__outage?seconds=\(seconds)", method: "POST") as? [String: Any]
        return Self.parts(answer?["parts"] ?? [])
    }

    func endOutage() async throws {
        _ = try await script.control("/__outage?seconds=0", method: "POST")
    }

    private static func parts(_ list: Any) -> [StoredPart] {
        (list as? [[String: Any]] ?? []).compactMap {
            guard let uploadID = $0["uploadId"] as? String, let number = $0["partNumber"] as? NSNumber,
                let stored = $0["stored"] as? NSNumber
            else { return nil }
            return StoredPart(uploadID: uploadID, partNumber: number.intValue, stored: stored.intValue)
        }
    }
}

/// `scripts/slowsource.py`: an HTTP source of `size` known bytes (byte i is (i × 31 + 7) mod 251)
/// for import jobs, paced, with or without ranges, or stopping after some bytes.
final class SlowSource: Sendable {
    let script: ScriptProcess
    let size: Int
    var port: Int { script.port }

    /// `rate` bytes per second for all answers together (0: unpaced).
    init(size: Int, rate: Int, ranges: Bool, stopAfter: Int? = nil) throws {
        self.size = size
        var arguments = ["--size", String(size), "--rate", String(rate), "--ranges", ranges ? "on" : "off"]
        if let stopAfter { arguments += ["--stop-after", String(stopAfter)] }
        script = try ScriptProcess(script: "slowsource.py", arguments)
    }

    /// Where an import job reads it (any path serves the same bytes).
    var url: String { "http://127.0.0.1:\(port)/source.bin" }

    /// bytesSent, requests, rangeRequests, size, and stopped (1 once the source sent its
    /// `--stop-after` bytes and holds its connections silent).
    func stats() async throws -> [String: Int] {
        ScriptProcess.integers(try await script.control("/__stats"))
    }

    /// The bytes slowsource.py serves: (i × 31 + seed) mod 251, the 251-byte pattern repeated.
    static func bytes(size: Int, seed: Int = 7) -> [UInt8] {
        let pattern = (0..<251).map { UInt8(($0 * 31 + seed) % 251) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        while bytes.count < size { bytes.append(contentsOf: pattern.prefix(size - bytes.count)) }
        return bytes
    }
}
