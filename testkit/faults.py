"""Failures injected into a run of the job (tests of recovery and maintenance)."""


class Crash(RuntimeError):
    pass


def crash(monkeypatch, cls, name, when="after"):
    """Make `cls.name` (a method, or a module's function) raise, before doing its work or after it."""
    real = getattr(cls, name)

    def wrapper(self, *a, **kw):
        if when == "after":
            real(self, *a, **kw)
        raise Crash(f"injected crash {when} {name}")

    monkeypatch.setattr(cls, name, wrapper)


def run_crashing(lake, monkeypatch, cls, name, when="after"):
    """One job run with `cls.name` crashing: the run must report failure (exit 1). The crashes are
    injected into the Spark engine's code, so the run is Spark's whatever the suite's engine."""
    with monkeypatch.context() as m:
        crash(m, cls, name, when)
        assert lake.run("--engine", "spark") == 1
