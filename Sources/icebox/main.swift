import Glibc
import IceboxCLI

// A thin entry point: everything lives in IceboxCLI so tests can drive it. The start-up shortcuts
// (CIceboxStart) link into this executable alone; the arguments come from ProcessArguments (see why
// there).
exit(IceboxMain.main(ProcessArguments.current))
