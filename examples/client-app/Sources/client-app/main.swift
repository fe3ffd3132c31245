// client-app: uploads a file through a TransferGateway with the TransferGatewayClient library and
// downloads it back, printing the SHA-256 of the file sent and of the file received.
//
//     client-app GATEWAY_URL TOKEN_FILE FILE KEY
//
// Top-level code is main-actor isolated in Swift 6: it only calls the nonisolated entry point.
import Foundation

let status = await ClientApp.run(Array(CommandLine.arguments.dropFirst()))
exit(status)
