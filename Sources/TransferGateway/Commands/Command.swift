import Dispatch
import Foundation
import Gateway

#if canImport(Glibc)
    import Glibc
#endif

/// Parses the command line and runs a subcommand.
enum Command {
    nonisolated static func run(_ arguments: [String]) async {
        let command = arguments.dropFirst().first ?? "serve"
        let rest = Array(arguments.dropFirst(2))
        if let usage = CommandHelp.usage(of: command), CommandHelp.asksForHelp(rest) {
            print(usage)
            return
        }
        switch command {
        case "serve":
            guard rest.isEmpty else {
                fail("serve takes no arguments (settings are GATEWAY_* variables)\n\(CommandHelp.usage(of: "serve") ?? "")", code: 64)
            }
            await serve()
        case "migrate":
            guard rest.isEmpty else { fail("migrate takes no arguments\n\(CommandHelp.usage(of: "migrate") ?? "")", code: 64) }
            await MigrateCommand.run()
        case "token":
            TokenCommand.run(rest)
        case "bucket-cors":
            await BucketCORSCommand.run(rest)
        case "bench-s3":
            await BenchS3Command.run(rest)
        case "-h", "--help", "help":
            print(CommandHelp.overview)
        case "-V", "--version", "version":
            print("transfer-gateway \(CommandHelp.version)")
        default:
            fail("unknown command '\(command)'\n\(CommandHelp.overview)", code: 64)
        }
    }

    /// The settings from the environment, or exit 2 with the one line naming the bad one.
    static func configuration() -> Configuration {
        do {
            return try Configuration.fromEnvironment(ProcessInfo.processInfo.environment)
        } catch {
            fail("\(error)", code: 2)
        }
    }

    static func fail(_ message: String, code: Int32) -> Never {
        FileHandle.standardError.write(Data("transfer-gateway: \(message)\n".utf8))
        exit(code)
    }

    static func serve() async {
        let configuration = configuration()
        do {
            try configuration.checkServeRequirements()
        } catch {
            fail("\(error)", code: 2)
        }
        signal(SIGPIPE, SIG_IGN)
        raiseDescriptorLimit()
        let sink = StderrSink()
        let logger = Logger(level: configuration.logLevel, sink: sink)
        // The database first: its schema, and what every instance shares (the link secret).
        var deployment = GatewayApp.Deployment()
        if let url = configuration.databaseURL {
            do {
                let prepared = try await GatewayApp.prepareDatabase(databaseURL: url)
                deployment = prepared.deployment
                if !prepared.applied.isEmpty {
                    logger.info("migrated", ["versions": .string(prepared.applied.map(String.init).joined(separator: ","))])
                }
            } catch let error as GatewayApp.SchemaTooNew {
                fail("\(error)", code: 1)
            } catch {
                fail("migration failed: \(error)", code: 1)
            }
        }
        let app: GatewayApp
        do {
            app = try GatewayApp(configuration: configuration, logger: logger, deployment: deployment)
        } catch {
            fail("\(error)", code: 2)
        }
        // Credentials from STS, the container endpoint or IMDS are fetched before listening. With
        // no keys and nothing configured but IMDS (a machine off EC2), no answer means no keys:
        // the start stops as it always has.
        if !app.credentialsRefresher.isFixed, await !app.credentialsRefresher.refresh(),
            case .instanceMetadata = configuration.s3CredentialsSource
        {
            fail("GATEWAY_S3_ACCESS_KEY_ID: is required (or AWS_ACCESS_KEY_ID); the instance metadata service gave none", code: 2)
        }
        let port: Int
        do {
            port = try app.server.start()
        } catch {
            fail("\(error)", code: 1)
        }
        // The one line that says the server takes connections now (scripts/run.sh waits for it),
        // written whatever GATEWAY_LOG_LEVEL says.
        let shownHost = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        logger.always(
            "listening", ["url": .string("http://\(shownHost):\(port)"), "host": .string(configuration.host), "port": .int(port)])
        if configuration.jwtJWKSURL != nil && (configuration.jwtIssuer == nil || configuration.jwtAudience == nil) {
            // Some key sets sign tokens for many tenants (Firebase's signs every project's).
            logger.warn(
                "GATEWAY_JWT_JWKS_URL is set without GATEWAY_JWT_ISSUER and GATEWAY_JWT_AUDIENCE: tokens the provider signed for other applications are accepted too"
            )
        }
        if configuration.linkSecret == nil && deployment.linkSecret == nil {
            logger.warn(
                "GATEWAY_LINK_SECRET is not set: dataUrl links are signed with a random key of this instance, so only it serves them")
        }
        app.startBackground()
        let janitorTask = app.janitor.map { janitor in
            Task { await janitor.run(every: min(600, Double(configuration.uploadTTL) / 4), logger: logger) }
        }
        let signalName = await waitForTermination()
        logger.info("shutting down", ["signal": .string(signalName), "graceSeconds": .double(configuration.shutdownGrace)])
        // Jobs first: their leases are released at once, so another instance takes them now.
        janitorTask?.cancel()
        await app.shutdown(grace: configuration.shutdownGrace, idleWindow: min(1, configuration.shutdownGrace / 4))
        logger.info("stopped")
        sink.flush()
        exit(0)
    }

    /// Suspends until SIGTERM or SIGINT arrives.
    static func waitForTermination() async -> String {
        await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            let queue = DispatchQueue(label: "signals")
            let once = SignalOnce(continuation)
            for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { once.fire(name) }
                source.activate()
                once.keep(source)
            }
        }
    }

    /// Lets many connections open: raise the soft descriptor limit to the hard one.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
    }
}
