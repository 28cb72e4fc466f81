// securepin: the command-line face of SecurePIN. It parses arguments and
// calls the modules; no logic of its own lives here.
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let usage = """
    usage: securepin <command> [options]

    commands:
      demo [--interactive]  the end-to-end story, one line per step (PINs typed on the pad)
      server --port N --db PATH [--admin-token-file P]   the reference activation server
      doctor [--json]    what protection this machine gives to secrets
      kdf hash|tune|bench  Argon2id: hash stdin, calibrate the cost, benchmark
      vault init|unlock|change-pin|status|destroy   a secret sealed under a PIN
      pin check          strength flags and verdict for a PIN

    Exit codes: 0 success, 1 wrong PIN or failure, 2 usage error or bad input, 3 locked.
    """

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
case "doctor":
    status = Doctor.run(arguments)
case "kdf":
    status = KDFCommand.run(arguments)
case "vault":
    status = VaultCommand.run(arguments)
case "pin":
    status = PinCommand.run(arguments)
case "-h", "--help", "help":
    print(usage)
    status = 0
default:
    CLI.fail(command.isEmpty ? "missing command" : "unknown command '\(command)'", usage: usage)
}
exit(status)
