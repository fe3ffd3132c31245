import Foundation
import TransferGatewayClient

enum ClientApp {
    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 4, let gateway = URL(string: arguments[0]) else {
            FileHandle.standardError.write(Data("usage: client-app GATEWAY_URL TOKEN_FILE FILE KEY\n".utf8))
            return 2
        }
        let tokenFile = arguments[1]
        let file = URL(fileURLWithPath: arguments[2])
        let key = arguments[3]
        let copy = URL(fileURLWithPath: arguments[2] + ".downloaded")
        do {
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("client-app-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: state) }
            // The token provider is asked again whenever the gateway refuses a token.
            let client = try TransferClient(configuration: .init(gatewayURL: gateway, stateDirectory: state)) {
                try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let upload = try client.upload(file: file, to: .private(key), contentType: "application/octet-stream")
            for await event in upload.events {
                if case .failed(let error) = event { throw error }
            }
            let uploaded = try await upload.result()
            print("uploaded \(uploaded.size) bytes as \(uploaded.objectKey ?? key)")
            try? FileManager.default.removeItem(at: copy)
            let downloaded = try await client.download(.private(key), to: copy).result()
            print("downloaded \(downloaded.size) bytes")
            let sent = try SHA256.file(file)
            let received = try SHA256.file(copy)
            print("sha256 sent     \(sent)")
            print("sha256 received \(received)")
            try? FileManager.default.removeItem(at: copy)
            return sent == received ? 0 : 1
        } catch {
            FileHandle.standardError.write(Data("client-app: \(error)\n".utf8))
            return 1
        }
    }
}
