"""A single-node Slurm cluster started from Debian's packages (``slurm-wlm``, ``munge``), for the
scheduler tests: ``munged``, ``slurmctld`` and ``slurmd`` run in the foreground as children of the
test, on loopback ports of their own, with every file in one private folder, and are stopped when
the ``with`` block ends.

Nothing here imitates Slurm: jobs are submitted with the real ``sbatch`` and the environment a task
sees (``SLURM_ARRAY_TASK_ID`` and the rest) is the one Slurm itself sets.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "scontrol", "sinfo")
NODE = "docabnode"
FINAL_STATES = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
}


class SlurmUnavailable(RuntimeError):
    """This machine cannot start a cluster (a program is missing, or not running as root)."""


def missing_programs() -> list[str]:
    """The Slurm and munge programs not found on PATH (or in /usr/sbin)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name, path=search) is None]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class JobState:
    """One job (or array task) as ``scontrol show job`` reports it."""

    job_id: str
    state: str
    exit_code: str


class SlurmCluster:
    """One controller and one compute node (all CPUs of this machine) on loopback."""

    def __init__(self, start_timeout: float = 30.0) -> None:
        missing = missing_programs()
        if missing:
            raise SlurmUnavailable(f"{', '.join(missing)} not found (apt-get install slurm-wlm munge)")
        if os.geteuid() != 0:
            raise SlurmUnavailable("slurmd must run as root to start jobs")
        self.start_timeout = start_timeout
        # A short path: munge's socket name must fit in a sockaddr_un (108 bytes).
        self.root = Path(tempfile.mkdtemp(prefix="docab-slurm-", dir="/tmp"))
        self.conf = self.root / "slurm.conf"
        self.env = {
            **os.environ,
            "SLURM_CONF": str(self.conf),
            "PATH": os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]),
        }
        self._daemons: list[subprocess.Popen[bytes]] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> SlurmCluster:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _start(self) -> None:
        munge = self.root / "munge"
        for folder in (munge, self.root / "state", self.root / "spool", self.root / "log"):
            folder.mkdir(mode=0o700)
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self._spawn(
            "munged",
            "--foreground",
            f"--key-file={key}",
            f"--socket={munge / 'sock'}",
            f"--pid-file={munge / 'pid'}",
            f"--log-file={munge / 'log'}",
            f"--seed-file={munge / 'seed'}",
            "--force",
        )
        self._wait_for(lambda: (munge / "sock").exists(), "munged's socket")
        self.conf.write_text(self._config(munge / "sock"))
        self._spawn("slurmctld", "-D", "-i")
        self._spawn("slurmd", "-D", "-N", NODE)
        self._wait_for(self._node_idle, f"node {NODE} to be idle")

    def _config(self, munge_socket: Path) -> str:
        host = socket.gethostname().split(".")[0]
        return "\n".join(
            [
                "ClusterName=docabtest",
                f"SlurmctldHost={host}(127.0.0.1)",
                f"SlurmctldPort={_free_port()}",
                f"SlurmdPort={_free_port()}",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={munge_socket}",
                "SlurmUser=root",
                "SlurmdUser=root",
                f"StateSaveLocation={self.root / 'state'}",
                f"SlurmdSpoolDir={self.root / 'spool'}",
                f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
                f"SlurmdPidFile={self.root / 'slurmd.pid'}",
                f"SlurmctldLogFile={self.root / 'log' / 'slurmctld.log'}",
                f"SlurmdLogFile={self.root / 'log' / 'slurmd.log'}",
                # No cgroups in a container: track processes by their parent, bind nothing.
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "MpiDefault=none",
                "ReturnToService=2",
                "SchedulerType=sched/backfill",
                "JobCompType=jobcomp/none",
                "AccountingStorageType=accounting_storage/none",
                "MinJobAge=3600",  # finished jobs stay visible to scontrol for the whole test
                f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN",
                f"PartitionName=debug Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )

    def _spawn(self, *argv: str) -> None:
        log = (self.root / "log" / f"{argv[0]}.out").open("ab")
        self._daemons.append(
            subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=self.root)
        )
        log.close()

    def _wait_for(self, ready: object, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if callable(ready) and ready():
                return
            dead = [p.args for p in self._daemons if p.poll() is not None]
            if dead:
                raise SlurmUnavailable(f"{dead[0]} exited while waiting for {what}:\n{self.logs()}")
            time.sleep(0.2)
        raise SlurmUnavailable(
            f"timed out after {self.start_timeout:.0f} s waiting for {what}:\n{self.logs()}"
        )

    def _node_idle(self) -> bool:
        out = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True, text=True, check=False
        )
        return out.returncode == 0 and out.stdout.strip() == "idle"

    def stop(self) -> None:
        """Cancel every job, stop the daemons (slurmd first) and remove the cluster's folder."""
        if self._daemons:
            subprocess.run(
                ["scancel", "--full", "--user", "root"], env=self.env, capture_output=True, check=False
            )
        for process in reversed(self._daemons):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(self._daemons):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._daemons.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def logs(self) -> str:
        """The daemons' logs, for a failing test's message."""
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(errors="replace")
            parts.append(f"--- {path.name} ---\n{text[-3000:]}")
        return "\n".join(parts)

    # -- jobs --------------------------------------------------------------------------------

    def sbatch(self, *args: str, cwd: Path) -> str:
        """Submit with the real ``sbatch --parsable``; returns the job id."""
        out = subprocess.run(
            ["sbatch", "--parsable", *args],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(f"sbatch {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout.strip().split(";")[0]

    def jobs(self, job_id: str) -> list[JobState]:
        """The job, or each task of an array job."""
        out = subprocess.run(
            ["scontrol", "-o", "show", "job", job_id],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        states = []
        for line in out.stdout.splitlines():
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            task = fields.get("ArrayTaskId")
            name = f"{fields.get('ArrayJobId', job_id)}_{task}" if task else fields.get("JobId", job_id)
            states.append(JobState(name, fields.get("JobState", "?"), fields.get("ExitCode", "?")))
        return states

    def wait(self, job_ids: Sequence[str], timeout: float) -> list[JobState]:
        """Wait until every job (every task of an array) has ended; returns their final states."""
        deadline = time.monotonic() + timeout
        while True:
            states = [state for job in job_ids for state in self.jobs(job)]
            pending = [s for s in states if s.state not in FINAL_STATES]
            if states and not pending:
                return states
            if time.monotonic() > deadline:
                raise TimeoutError(f"jobs still running after {timeout:.0f} s: {pending}\n{self.logs()}")
            time.sleep(0.5)
