import Glibc
import IceboxCLI

// A thin entry point: everything lives in IceboxCLI so tests can drive it.
exit(IceboxMain.main(CommandLine.arguments))
