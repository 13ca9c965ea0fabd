// libcap from Debian's libcap-dev: read the capabilities icebox has (icebox doctor).
#include <sys/capability.h>
