// transfer-client: uploads and downloads through a TransferGateway from the command line, on the
// TransferGatewayClient library alone. Top-level code is main-actor isolated: it only calls into
// the nonisolated command.
import Foundation

let status = await ClientCommand.run(Array(CommandLine.arguments.dropFirst()))
exit(status)
