from __future__ import annotations

from dataclasses import dataclass

from .._exceptions import UsageError

__all__ = ["SandboxLimits"]


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Resource limits applied to every script run by a :class:`Sandbox`.

    Attributes:
        cpu_seconds: CPU time per script, summed over every process it starts; past it
            the script is killed. The wall clock is the ``timeout`` argument of ``execute``.
        memory_mb: memory the script may allocate on top of the interpreter it starts
            from, summed over every process it starts (each process is also held to it as
            address space, so it bounds reservations too).
        max_processes: processes and threads a script may start. Scripts running at the
            same time in one Sandbox share this budget.
        max_file_mb: largest file a script may write.
        scratch_mb: size of the writable scratch directory (``/tmp``, the working
            directory). Each script gets its own, empty, and it is gone when the script
            ends.
        scratch_files: files and directories the scratch directory (and the script's
            ``/dev/shm``) may hold: empty files cost the kernel memory too.
        max_open_files: open file descriptors per process.
        max_output_bytes: what comes back from a script (stdout, stderr and the error
            text together) is cut to about this many bytes, keeping the head and the tail
            of each and saying how much was cut in between.
        flood_limit_mb: a script writing more than this to one stream is stopped.
        max_calls: tool calls per script; the call past it stops the script with a message
            for the model. None means no cap.
        max_concurrent_calls: tool calls of one script that the host runs at the same time.
    """

    cpu_seconds: float = 30.0
    memory_mb: int = 512
    max_processes: int = 64
    max_file_mb: int = 64
    scratch_mb: int = 256
    scratch_files: int = 10_000
    max_open_files: int = 256
    max_output_bytes: int = 20_000
    flood_limit_mb: int = 16
    max_calls: int | None = 1_000
    max_concurrent_calls: int = 64

    def __post_init__(self) -> None:
        positive = {
            "cpu_seconds": self.cpu_seconds,
            "memory_mb": self.memory_mb,
            "max_processes": self.max_processes,
            "max_file_mb": self.max_file_mb,
            "scratch_mb": self.scratch_mb,
            "scratch_files": self.scratch_files,
            "max_open_files": self.max_open_files,
            "max_output_bytes": self.max_output_bytes,
            "flood_limit_mb": self.flood_limit_mb,
            "max_concurrent_calls": self.max_concurrent_calls,
        }
        for name, value in positive.items():
            if value <= 0:
                raise UsageError(f"SandboxLimits.{name} must be positive, got {value!r}")
        if self.max_open_files < 16:
            raise UsageError("SandboxLimits.max_open_files must be at least 16")
        if self.max_calls is not None and self.max_calls < 0:
            raise UsageError(f"SandboxLimits.max_calls must be >= 0 or None, got {self.max_calls}")

    def for_worker(self) -> dict[str, object]:
        """The limits as the in-sandbox server expects them."""
        return {
            "cpu": self.cpu_seconds,
            "memory": self.memory_mb * 1024 * 1024,
            "processes": self.max_processes,
            "fsize": self.max_file_mb * 1024 * 1024,
            "nofile": self.max_open_files,
        }
