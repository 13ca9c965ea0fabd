"""What every part is given: the binary and the compiled tools, the run's options, and what the
part set up (its daemons, its cleanups), undone when the part ends, failed or not."""
from .session import Session


class Context:
    def __init__(self, icebox, tools, scale, interval_us):
        self.icebox, self.tools, self.scale, self.interval_us = icebox, tools, scale, interval_us
        self.backends, self.workloads, self.modes = [], [], []
        self.sessions, self.cleanups = [], []  # cleanups: callables, run last first

    def session(self, tag):
        """A daemon of the part's own, with its own directories and cgroup root."""
        sess = Session(self.icebox, tag)
        self.sessions.append(sess)
        return sess

    def close_all(self):
        """Stops the part's daemons (their apps and cgroups go with them), then undoes the rest of
        what it set up, the last first."""
        while self.sessions:
            self.sessions.pop().close()
        while self.cleanups:
            self.cleanups.pop()()
