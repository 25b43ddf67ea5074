# ruff: noqa: E501 - sacct lines are long by nature
from datetime import UTC, datetime

import pytest

from jobs.drivers.sacct import gpus_from_tres, parse_elapsed, parse_sacct
from portal.errors import InvalidInput

DUMP = """JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|NodeList|AllocTRES
3|fail|alice|med|gpu|FAILED|3:0|2025-01-05T10:00:00|2025-01-05T10:00:01|2025-01-05T10:00:11|00:00:10|gpu001|billing=1,cpu=1,gres/gpu=8,node=1
3.batch|batch|||||3:0|2025-01-05T10:00:01|2025-01-05T10:00:01|2025-01-05T10:00:11|00:00:10|gpu001|cpu=1,gres/gpu=8,node=1
4|cpt|bob|med|gpu|CANCELLED by 0|0:15|2025-01-05T10:00:00|2025-01-05T11:00:00|2025-01-13T11:00:00|8-00:00:00|gpu[001-004]|billing=4,gres/gpu=32,node=4
5|never|bob|med|gpu|CANCELLED by 1000|0:0|2025-01-05T10:00:00|None|2025-01-05T10:05:00|00:00:00|None assigned|billing=1,node=1
"""


def test_parses_jobs_and_folds_steps():
    jobs = {job.job_id: job for job in parse_sacct(DUMP)}
    assert set(jobs) == {"3", "4", "5"}
    failed = jobs["3"]
    assert (failed.state, failed.exit_code, failed.signal, failed.gpus) == ("FAILED", 3, 0, 8)
    assert failed.node_names == ("gpu001",)
    assert failed.end_time == datetime(2025, 1, 5, 10, 0, 11, tzinfo=UTC)
    cancelled = jobs["4"]
    assert cancelled.state == "CANCELLED" and cancelled.signal == 15
    assert cancelled.node_names == ("gpu001", "gpu002", "gpu003", "gpu004")
    assert cancelled.gpu_seconds == 8 * 86400 * 32
    assert jobs["5"].start_time is None and jobs["5"].node_names == ()


def test_elapsed_and_tres():
    assert parse_elapsed("1-02:03:04") == 93784
    assert parse_elapsed("05:06") == 306
    assert gpus_from_tres("cpu=2,gres/gpu:h100=4,node=1") == 4
    assert gpus_from_tres("cpu=2,node=1") == 0


@pytest.mark.parametrize(
    "line",
    [
        "9|x|u|a|p|COMPLETED|0:0",
        "9|x|u|a|p|COMPLETED|0:0|yesterday|None|None|00:00:01|gpu001|node=1",
        "9|x|u|a|p|COMPLETED|0:0|None|None|None|soon|gpu001|node=1",
        "9|x|u|a|p|COMPLETED|0:0|None|None|None|00:00:01|gpu[001|node=1",
    ],
)
def test_bad_lines_name_the_line(line):
    with pytest.raises(InvalidInput) as error:
        parse_sacct(DUMP + line + "\n")
    assert "line 6" in str(error.value.detail) or "hostlist" in str(error.value.detail)
