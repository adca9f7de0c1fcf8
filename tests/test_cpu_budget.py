"""The CPU a process may really use: physical cores in its affinity mask, the container's quota
(cgroup v1 and v2) and the time it throttled, read from a fake /sys; a throttled share is
contended, and named so."""
from suites.harness import cpu_budget as cb
from suites.harness import round_checks as rc
from suites.harness.contention import RoundLoad


def _topology(root, cpus_per_core: dict[int, tuple[int, int]]):
    for cpu, (package, core) in cpus_per_core.items():
        folder = root / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True)
        (folder / "physical_package_id").write_text(f"{package}\n")
        (folder / "core_id").write_text(f"{core}\n")


def test_smt_siblings_are_one_core(tmp_path):
    _topology(tmp_path, {0: (0, 0), 1: (0, 1), 2: (0, 0), 3: (0, 1)})  # 2 cores, 2 threads each
    assert cb.physical_cores({0, 1, 2, 3}, tmp_path) == 2
    assert cb.physical_cores({0, 1}, tmp_path) == 2
    assert cb.physical_cores({0, 2}, tmp_path) == 1  # both threads of one core
    assert cb.physical_cores({0, 7}, tmp_path) == 2  # unreadable topology: count the CPUs


def test_quota_v2_v1_and_none(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("400000 100000\n")
    assert cb.cpu_quota(v2) == 4.0
    (v2 / "cpu.max").write_text("max 100000\n")
    assert cb.cpu_quota(v2) is None
    v1 = tmp_path / "v1" / "cpu"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("250000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert cb.cpu_quota(tmp_path / "v1") == 2.5
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    assert cb.cpu_quota(tmp_path / "v1") is None
    assert cb.cpu_quota(tmp_path / "nothing") is None


def test_throttled_time_v2_and_v1(tmp_path):
    (tmp_path / "cpu.stat").write_text("usage_usec 10\nnr_throttled 3\nthrottled_usec 250000\n")
    assert cb.throttled_s(tmp_path) == 0.25
    v1 = tmp_path / "v1" / "cpu"
    v1.mkdir(parents=True)
    (v1 / "cpu.stat").write_text("nr_periods 9\nnr_throttled 2\nthrottled_time 5000000000\n")
    assert cb.throttled_s(tmp_path / "v1") == 5.0
    assert cb.throttled_s(tmp_path / "none") is None


def test_auto_threads_stay_within_the_quota_and_the_physical_cores():
    # 64 logical CPUs, 32 cores, a 4-CPU quota: 4 cores' worth, so auto takes 3.
    budget = cb.CpuBudget(logical=64, physical=32, quota=4.0)
    assert budget.cores == 4
    assert "32 physical cores of 64 logical CPUs" in budget.describe()
    assert "within a CPU quota of 4" in budget.describe()
    assert cb.CpuBudget(2, 2, None).cores == 2 and cb.CpuBudget(8, 8, 0.5).cores == 1


def test_a_throttled_share_is_contended_and_says_so():
    throttled = RoundLoad(0.2, others_cores=0.0, wait_frac=0.0, throttled_frac=0.3)
    reason = rc.contention([throttled], cores=4, threads=3)
    assert "CPU quota throttled the timing for 30%" in reason
    assert rc.contention([RoundLoad(0.2, 0.0, throttled_frac=0.01)], 4, 3) == ""


def test_the_real_machine_reads_without_error():
    from suites.harness.contention import usable_cpus

    budget = cb.cpu_budget(usable_cpus())
    assert 1 <= budget.cores <= budget.logical
