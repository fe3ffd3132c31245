import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Bytes the kernel still holds unread by the process at `serverPort` on the connection from
/// `clientPort` (/proc/net/tcp `rx_queue`): 0 means the server has read every byte sent to it.
func unreadByServer(serverPort: Int, clientPort: Int) -> Int? {
    // Read to the end: String(contentsOfFile:) stops after the first page of a /proc file.
    guard let data = try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/net/tcp")).readToEnd() else { return nil }
    let text = String(decoding: data, as: UTF8.self)
    let local = String(format: ":%04X", serverPort), remote = String(format: ":%04X", clientPort)
    for line in text.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        guard fields.count > 4, fields[1].hasSuffix(local), fields[2].hasSuffix(remote) else { continue }
        return Int(fields[4].split(separator: ":")[1], radix: 16)
    }
    return nil
}
