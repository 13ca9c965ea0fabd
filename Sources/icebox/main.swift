import Glibc
import IceboxCLI

// A thin entry point: everything lives in IceboxCLI so tests can drive it.
// The arguments are decoded from argv here (invalid UTF-8 repaired, as CommandLine.arguments
// does): CommandLine.arguments goes through the generic String(validating:), whose type
// metadata lookups every one-shot command paid at start-up.
let arguments = (0..<Int(CommandLine.argc)).map { i in CommandLine.unsafeArgv[i].map { String(cString: $0) } ?? "" }
exit(IceboxMain.main(arguments))
