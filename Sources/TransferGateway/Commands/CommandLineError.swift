/// A command line a subcommand cannot run: its message goes before the usage, exit 64.
struct CommandLineError: Error, Equatable {
    let message: String

    init(_ message: String) {
        self.message = message
    }
}
