// The executable: `transfer-gateway [serve]`. All work happens in `Command`, off the main
// actor (top-level code here is main-actor isolated, and Dispatch handlers must not be).
import Gateway

await Command.run(CommandLine.arguments)
