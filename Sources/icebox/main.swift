import Glibc
import IceboxCLI
import IceboxSystem

// A thin entry point: everything lives in IceboxCLI so tests can drive it.
// The arguments come from ProcessArguments, not CommandLine (see there why).
exit(IceboxMain.main(ProcessArguments.current))
