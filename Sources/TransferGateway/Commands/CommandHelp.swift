/// What `--help` and `--version` print: the usage of each subcommand (`transfer-gateway
/// SUBCOMMAND --help`) and of the whole, and the version (openapi.yaml's `info.version`).
enum CommandHelp {
    static let version = "0.1.0"

    /// Every subcommand, in the order `--help` lists them.
    static let subcommands = ["serve", "migrate", "token", "bucket-cors", "bench-s3"]

    static let overview = """
        usage: transfer-gateway [serve]
               transfer-gateway migrate
               transfer-gateway token --sub ID [--ttl SECONDS] [--role ROLE]...
               transfer-gateway bucket-cors [--format xml|json] [--origin ORIGIN]... [--apply]
               transfer-gateway bench-s3 upload|download --file PATH --key KEY [--part-size BYTES] [--concurrency N]
               transfer-gateway --version
        `transfer-gateway COMMAND --help` says more of each. Settings come from GATEWAY_*
        environment variables; see docs/configuration.md.
        """

    /// The usage of `command`, or nil for one that does not exist.
    static func usage(of command: String) -> String? {
        switch command {
        case "serve":
            return """
                usage: transfer-gateway [serve]
                  Serves the API on GATEWAY_HOST:GATEWAY_PORT (127.0.0.1:8080) after applying missing
                  migrations, and runs jobs. Logs one "listening" line with its URL once it accepts
                  connections. Needs GATEWAY_DATABASE_URL, GATEWAY_S3_BUCKET, S3 credentials and a JWT key.
                  SIGTERM or SIGINT stops it gracefully.
                """
        case "migrate":
            return """
                usage: transfer-gateway migrate
                  Applies the missing schema migrations to GATEWAY_DATABASE_URL and exits.
                """
        case "token":
            return """
                usage: transfer-gateway token --sub ID [--ttl SECONDS] [--role ROLE]...
                  Prints a development JWT signed HS256 with GATEWAY_JWT_SECRET (with GATEWAY_JWT_ISSUER
                  and GATEWAY_JWT_AUDIENCE when set).
                  --sub ID       the identity id (required)
                  --ttl SECONDS  lifetime, 1 to 31536000 (3600)
                  --role ROLE    a role in the roles claim (repeatable; admin marks an operator)
                """
        case "bucket-cors": return BucketCORSCommand.usage
        case "bench-s3":
            return """
                usage: transfer-gateway bench-s3 upload|download --file PATH --key KEY [--part-size BYTES] [--concurrency N]
                  Moves one local file to or from GATEWAY_S3_BUCKET with the gateway's multipart S3
                  client and prints `seconds bytes MB/s` (bench/s3.sh drives it).
                """
        default: return nil
        }
    }

    /// Whether `arguments` (those after the subcommand) ask for its usage.
    static func asksForHelp(_ arguments: [String]) -> Bool {
        arguments.contains("--help") || arguments.contains("-h")
    }
}
