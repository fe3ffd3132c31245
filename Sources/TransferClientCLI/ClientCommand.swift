import Foundation
import TransferGatewayClient

/// Runs one command line: makes the client, starts or finds the tasks, follows them to the end.
/// Exit status 0 only when every transfer it followed completed.
enum ClientCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        let options: Options
        do {
            options = try Options.parse(arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            let message = "\(error)"
            FileHandle.standardError.write(Data(((message.isEmpty ? "" : "transfer-client: \(message)\n") + Options.usage + "\n").utf8))
            return 2
        }
        do {
            let configuration = try options.configuration()
            let tokenFile = options.tokenFile
            let client = try TransferClient(configuration: configuration) { try readToken(tokenFile) }
            let control = ControlFiles(
                directory: configuration.stateDirectory.appendingPathComponent(configuration.identifier).appendingPathComponent("control"))
            let printer = EventPrinter(json: options.json)
            switch options.command {
            case .upload:
                let reference = try ObjectReference(parsing: options.operands[1])
                let file = URL(fileURLWithPath: options.operands[0])
                let task = try client.upload(file: file, to: reference, contentType: options.contentType)
                return await follow([task], printer: printer, control: control)
            case .download:
                let reference = try ObjectReference(parsing: options.operands[0])
                let task = try client.download(reference, to: URL(fileURLWithPath: options.operands[1]))
                return await follow([task], printer: printer, control: control)
            case .list:
                for task in await client.tasks { list(task, json: options.json, printer: printer) }
                return 0
            case .resume:
                let tasks = await client.tasks.filter { options.operands.isEmpty || $0.id == options.operands[0] }
                if !options.operands.isEmpty && tasks.isEmpty {
                    throw Options.UsageError(description: "no unfinished transfer \(options.operands[0])")
                }
                for task in tasks {
                    control.clear(task.id)
                    task.resume()
                }
                return await follow(tasks, printer: printer, control: control)
            case .pause:
                // The process moving the task notices within half a second and stops.
                try control.request(.pause, options.operands[0])
                return 0
            case .cancel:
                try control.request(.cancel, options.operands[0])
                guard let task = await client.task(id: options.operands[0]) else { return 0 }
                task.cancel()
                _ = try? await task.result()
                return 0
            }
        } catch {
            FileHandle.standardError.write(Data("transfer-client: \(error)\n".utf8))
            return error is Options.UsageError || error is ObjectReference.ParseError ? 2 : 1
        }
    }

    static func readToken(_ path: String?) throws -> String {
        guard let path else { throw Options.UsageError(description: "--token-file (or TRANSFER_TOKEN_FILE) is required") }
        return try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func list(_ task: TransferTask, json: Bool, printer: EventPrinter) {
        if json {
            printer.line([
                "id": task.id, "direction": task.direction.rawValue, "state": task.state.rawValue,
                "reference": task.reference.description, "file": task.fileURL.path,
            ])
        } else {
            print("\(task.id)  \(task.direction.rawValue)  \(task.state.rawValue)  \(task.reference)  \(task.fileURL.path)")
        }
    }

    /// Follows `tasks` to their ends, acting on pause and cancel requests from other processes.
    static func follow(_ tasks: [TransferTask], printer: EventPrinter, control: ControlFiles) async -> Int32 {
        await withTaskGroup(of: Int32.self) { group in
            for task in tasks {
                group.addTask {
                    let watcher = Task {
                        while !Task.isCancelled {
                            try? await Task.sleep(nanoseconds: 500_000_000)
                            if control.take(.cancel, task.id) { task.cancel() }
                            if control.take(.pause, task.id) { task.pause() }
                        }
                    }
                    defer { watcher.cancel() }
                    if task.state == .paused { return 3 }
                    for await event in task.events {
                        printer.show(event, of: task)
                        switch event {
                        case .completed: return 0
                        case .failed(let error): return error.code == .canceled ? 4 : 1
                        case .paused: return 3
                        default: continue
                        }
                    }
                    return 1
                }
            }
            var worst: Int32 = 0
            for await status in group where status != 0 && (worst == 0 || status == 1) { worst = status }
            return worst
        }
    }
}
