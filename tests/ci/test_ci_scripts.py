"""The CI scripts a fresh machine depends on (issue 10 items 2 and 4): the README's commands
are extracted, not copied, and the throwaway PostgreSQL server starts on a free port even when
the old fixed port 55432 is taken."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".ci"))
from readme_command import block  # noqa: E402


def test_main_job_is_the_first_bash_block_and_installs_no_extra():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    main_job = block(readme, 1)
    assert ".venv/bin/pip install -e . " in main_job  # the plain install a new user runs
    assert "tracegrade score" in main_job and "agreement.py" in main_job
    assert "pytest" in block(readme, 2)


def test_missing_block_names_the_count():
    with pytest.raises(SystemExit, match="has 1 bash blocks, not 2"):
        block("```bash\necho hi\n```\n", 2)


@pytest.mark.skipif(
    not glob.glob("/usr/lib/postgresql/*/bin/initdb") or os.geteuid() != 0,
    reason="needs Debian's postgresql package and root (.ci/postgres installs it in CI)",
)
def test_postgres_starts_on_a_free_port_when_55432_is_taken():
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 55432))
        taken.listen()
    except OSError:
        pass  # already taken by another server: the situation under test
    data = Path(tempfile.mkdtemp(prefix="tg-ci-pg-"))  # the postgres user must reach it
    data.chmod(0o755)
    env = {**os.environ, "TRACEGRADE_PGDATA": str(data / "pg")}
    script = str(ROOT / ".ci" / "postgres")
    try:
        started = subprocess.run(
            [script, "start"], env=env, capture_output=True, text=True, timeout=120
        )
        assert started.returncode == 0, started.stderr
        url = started.stdout.strip().splitlines()[-1]
        assert url.startswith("postgresql://postgres@127.0.0.1:") and ":55432/" not in url
        import psycopg

        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, timeout=60)
        taken.close()
        shutil.rmtree(data, ignore_errors=True)
