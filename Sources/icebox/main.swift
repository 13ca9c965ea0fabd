import Glibc
import IceboxCLI

// A thin entry point: everything lives in IceboxCLI so tests can drive it. The start-up
// shortcuts (CIceboxStart) link into this executable alone.
// The arguments come from ProcessArguments, not CommandLine (see there why).
exit(IceboxMain.main(ProcessArguments.current))
