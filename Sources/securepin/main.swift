// securepin: the command-line face of SecurePIN. It parses arguments and
// calls the modules; no logic of its own lives here.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let usage = """
    usage: securepin <command> [options]

    commands:
      doctor [--json]    what protection this machine gives to secrets
      kdf hash|tune|bench  Argon2id: hash stdin, calibrate the cost, benchmark

    Exit codes: 0 success, 2 usage error.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "" : arguments.removeFirst()
let status: Int32
switch command {
case "doctor":
    status = Doctor.run(arguments)
case "kdf":
    status = KDFCommand.run(arguments)
case "-h", "--help", "help":
    print(usage)
    status = 0
default:
    CLI.fail(command.isEmpty ? "missing command" : "unknown command '\(command)'", usage: usage)
}
exit(status)
