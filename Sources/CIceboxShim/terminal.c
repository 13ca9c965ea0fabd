// The terminal's raw mode for `icebox top`, and its undo from anywhere: a full-screen view that
// dies with the terminal raw and on the alternate screen leaves the user's shell unusable. The undo
// runs in a signal handler, so it is C with async-signal-safe calls only (write, tcsetattr,
// sigaction, raise) on memory set up beforehand.
#include "icebox_shim.h"

#include <errno.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
#define CRASH_SIGNALS (sizeof crash_signals / sizeof crash_signals[0])

static struct termios saved_settings;
static int saved_fd = -1;
static char leave_bytes[256];
static size_t leave_count;
static volatile sig_atomic_t active;
static struct sigaction previous[CRASH_SIGNALS];

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;  // a terminal gone (EIO after a hang-up): nothing more to do
        p += w;
        n -= (size_t)w;
    }
}

static void remove_crash_handlers(void) {
    for (size_t i = 0; i < CRASH_SIGNALS; i++) sigaction(crash_signals[i], &previous[i], NULL);
}

int icebox_terminal_restore(void) {
    if (!active) return 0;
    active = 0;
    int saved_errno = errno;
    write_all(saved_fd, leave_bytes, leave_count);
    int rc = tcsetattr(saved_fd, TCSAFLUSH, &saved_settings);
    int failed = rc == 0 ? 0 : errno;
    remove_crash_handlers();
    errno = failed ? failed : saved_errno;
    return rc;
}

static void crashed(int sig) {
    int saved_errno = errno;
    icebox_terminal_restore();  // puts the previous handlers back too
    errno = saved_errno;
    // Blocked while this handler runs: delivered to the previous handler on return (a
    // fault would also recur when its instruction runs again).
    raise(sig);
}

int icebox_terminal_raw(int fd, const char *leave, size_t leave_len) {
    struct termios settings;
    if (tcgetattr(fd, &settings) != 0) return -1;
    saved_settings = settings;
    saved_fd = fd;
    leave_count = leave_len < sizeof leave_bytes ? leave_len : sizeof leave_bytes;
    memcpy(leave_bytes, leave, leave_count);
    // cfmakeraw without its OPOST change: keep output processing, harmless for a view that
    // addresses the cursor, and what a message printed after a crash expects.
    settings.c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    settings.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
    settings.c_cflag &= ~(tcflag_t)(CSIZE | PARENB);
    settings.c_cflag |= CS8;
    settings.c_cc[VMIN] = 1;
    settings.c_cc[VTIME] = 0;
    struct sigaction action = {.sa_handler = crashed};
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < CRASH_SIGNALS; i++) sigaction(crash_signals[i], &action, &previous[i]);
    active = 1;
    if (tcsetattr(fd, TCSAFLUSH, &settings) != 0) {
        int failed = errno;
        active = 0;
        remove_crash_handlers();
        errno = failed;
        return -1;
    }
    return 0;
}
