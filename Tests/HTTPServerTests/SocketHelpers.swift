import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// This process's open TCP sockets (not listeners) with `port` at either end: the server's
/// accepted connections and the test's clients. Other suites running in the same process open
/// descriptors of their own (files, pooled S3 connections), so a leak check counts only these.
func openSocketsOnPort(_ port: Int) -> Int {
    var inodes = Set<String>()
    for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name),
            target.hasPrefix("socket:[")
        {
            inodes.insert(String(target.dropFirst(8).dropLast()))
        }
    }
    let hexPort = String(format: "%04X", port)
    var count = 0
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        // Read to the end: String(contentsOfFile:) stops after the first page of a /proc file,
        // which would hide sockets past the first few dozen.
        guard let data = try? FileHandle(forReadingFrom: URL(fileURLWithPath: table)).readToEnd() else { continue }
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] != "0A", inodes.contains(String(fields[9])) else { continue }
            if fields[1].hasSuffix(":" + hexPort) || fields[2].hasSuffix(":" + hexPort) { count += 1 }
        }
    }
    return count
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes.
func eventually(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
