// securepin: the command-line face of SecurePIN. It parses arguments and
// calls the modules; no logic of its own lives here.
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Every command may hold a PIN, a key or an Argon2 matrix: no core dump, no same-user
// /proc/PID/mem, for the whole life of the process.
do {
    try SecureMemory.hardenProcess()
} catch {
    CLI.printError("securepin: warning: this process could not be made non-dumpable; a core dump may hold secrets")
}

var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "" : arguments.removeFirst()
let status: Int32
switch command {
case "demo":
    status = await DemoCommand.run(arguments)
case "server":
    status = await ServerCommand.run(arguments)
case "storage-key":
    status = StorageKeyCommand.run(arguments)
case "client":
    status = await ClientCommand.run(arguments)
case "doctor":
    status = Doctor.run(arguments)
case "kdf":
    status = KDFCommand.run(arguments)
case "vault":
    status = await VaultCommand.run(arguments)
case "pin":
    status = PinCommand.run(arguments)
case "pq":
    status = PQCommand.run(arguments)
case "completions":
    status = Completions.run(arguments)
case "man":
    status = ManPage.run(arguments)
case "help":
    status = CLI.help(arguments)
case "-h", "--help":
    print(Help.main)
    status = ExitCode.ok
case "--version", "version":
    print(CLI.versionText())
    status = ExitCode.ok
case "":
    CLI.fail("missing command", usage: Help.briefMain)
default:
    let names = Help.commands.map(\.name) + ["--help", "--version"]
    let hint = Help.nearest(to: command, among: names).map { "; did you mean \($0)?" } ?? ""
    CLI.fail("unknown command '\(command)'\(hint)", usage: Help.briefMain)
}
exit(status)
