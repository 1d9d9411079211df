"""Terminal niceties: repeated --fail-on, bars readable without colour, README examples that
work as written, patterns expanded by gpudiag itself."""

from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
from rich.console import Console

from gpudiag.analyze import diagnose
from gpudiag.show.report import render_report
from gpudiag.trace.load import load_file
from tests.helpers.paths import REPO, SAMPLES

NCCL = str(SAMPLES / "nccl_world128_rank0.json.gz")  # sync-bound
W0 = str(SAMPLES / "resnet50_dataloader_workers0.pt.trace.json.gz")


def gpudiag(
    *args: str, cwd: str | os.PathLike[str] = REPO, env_columns: int = 100
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpudiag", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "COLUMNS": str(env_columns)},
    )


@pytest.mark.parametrize("order", [("sync-bound", "data-starved"), ("data-starved", "sync-bound")])
def test_fail_on_given_twice_accumulates(order):
    r = gpudiag("analyze", NCCL, "--fail-on", order[0], "--fail-on", order[1])
    assert r.returncode == 3, r.stderr


def _render(colour: bool) -> str:
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=100,
        force_terminal=colour,
        no_color=not colour,
        color_system="standard" if colour else None,
    )
    console.print(render_report(diagnose(load_file(W0)), width=100))
    return buf.getvalue()


def test_bars_without_colour_use_a_letter_per_share():
    plain = _render(colour=False)
    assert "█" not in plain
    bar = next(ln for ln in plain.splitlines() if "IIII" in ln)
    run = re.search(r"(I+)(T*)(C+)(\.+)", bar)
    assert run, bar
    # the letters' lengths follow the shares (input 33.9%, compute 54.9%)
    width = len(run.group(0))
    assert abs(len(run.group(1)) / width - 0.339) < 0.02
    assert abs(len(run.group(3)) / width - 0.549) < 0.02
    assert "I input wait 34%" in plain and "C compute 55%" in plain
    coloured = _render(colour=True)
    assert "█" in coloured and "IIII" not in coloured


def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    lines = " ".join(blocks).replace("\\\n", " ").splitlines()
    cmds = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            if re.match(r"gpudiag (analyze|compare) sample_traces/", line):
                cmds.append(line)
    assert lines and cmds
    return cmds


def test_readme_examples_work_as_written(tmp_path):
    cmds = _readme_commands()
    assert len(cmds) >= 5
    shutil.copytree(SAMPLES, tmp_path / "sample_traces")
    for line in cmds:
        code, _, comment = line.partition("#")
        args = shlex.split(code)[1:]
        r = gpudiag(*args, cwd=tmp_path)
        expected = 3 if "exit 3" in comment else 0
        assert r.returncode == expected, (line, r.stderr[-500:])
        assert "Traceback" not in r.stderr


def test_quoted_patterns_are_expanded_by_gpudiag(tmp_path):
    shutil.copy(NCCL, tmp_path / "rank0.json.gz")
    r = gpudiag("analyze", "rank*.json.gz", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert '"verdict": "sync-bound"' in r.stdout
    r = gpudiag("analyze", "nothing*.json", cwd=tmp_path)
    assert r.returncode == 2 and "nothing*.json: no file matches" in r.stderr


def test_follow_pattern_picks_the_newest_trace(tmp_path):
    from gpudiag.record.writer import TraceWriter
    from gpudiag.trace.model.timeline import Metadata

    TraceWriter(str(tmp_path / "gpudiag-trace-1.json"), Metadata(producer="gpudiag")).close()
    os.utime(tmp_path / "gpudiag-trace-1.json", (1, 1))  # the older run
    (tmp_path / "gpudiag-trace-2.json").write_text('{"traceEvents": []}')  # newest: not ours
    r = gpudiag("live", "--once", "--follow", "gpudiag-trace-*.json", cwd=tmp_path)
    assert r.returncode == 2 and "gpudiag-trace-2.json: not a gpudiag trace" in r.stderr
    os.utime(tmp_path / "gpudiag-trace-2.json", (1, 1))
    os.utime(tmp_path / "gpudiag-trace-1.json")  # now the newest
    r = gpudiag("live", "--once", "--follow", "gpudiag-trace-*.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # a pattern that matches nothing yet: training has not started, wait for it
    r = gpudiag("live", "--once", "--follow", "none-*.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "waiting for none-*.json to appear" in r.stdout


MULTI = str(SAMPLES / "tf_gpu_multi_worker.xplane.pb")  # two workers, one GPU each


def _section(out: str, title: str) -> list[str]:
    """The lines of one titled section of the report, up to the next blank line."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip("│ ").startswith(title))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].strip("│╰─╯ "))
    return lines[start:end]


def _fits(out: str, width: int) -> None:
    from rich.cells import cell_len

    assert "…" not in out, out  # nothing cut
    assert max(cell_len(ln) for ln in out.splitlines()) <= width


def test_report_at_80_columns_cuts_no_word_and_wraps_no_name():
    pytest.importorskip("xprof")
    r = gpudiag("analyze", MULTI, env_columns=80)
    assert r.returncode == 0, r.stderr
    _fits(r.stdout, 80)
    for title, row in (("Devices", "worker GPU 4"), ("Ranks", "worker GPU 4")):
        rows = [ln for ln in _section(r.stdout, title) if row in ln]
        assert len(rows) == 1 and "%" in rows[0], (title, rows)  # name and figures: one line
    ranks = _section(r.stdout, "Ranks")
    assert sum("data-starved" in ln for ln in ranks) == 2  # both verdicts whole
    assert any("19.9 ms" in ln and "12%" in ln for ln in ranks)
    assert any("not shown at this width: steps, work" in ln for ln in ranks)
    # the legend breaks between items, never between a mark and its label
    assert any(". other/idle 16%" in ln for ln in r.stdout.splitlines())
    wide = gpudiag("analyze", MULTI, env_columns=120)
    _fits(wide.stdout, 120)
    assert "not shown" not in wide.stdout  # every column at 120
    heads = next(ln for ln in _section(wide.stdout, "Ranks") if "verdict" in ln)
    assert re.search(r"rank\s+┃ verdict\s+┃ steps ┃ +step ┃ +work ┃ +waits", heads), heads


def test_cpu_replica_names_stay_on_one_line_at_80_columns():
    from gpudiag.trace.model.timeline import Kind, Metadata, Timeline

    tl = Timeline(meta=Metadata(producer="gpudiag", device_type="CPU", replicas=2))
    starts = [i * 1000.0 for i in range(6)]
    for r in range(2):
        dev = f"CPU replica {r}"
        tl.add_activity(dev, Kind.COMPUTE, [s + 300 for s in starts], [s + 900 for s in starts])
    tl.add_input_wait([s for s in starts], [s + 300 for s in starts], ["IteratorGetNext"])
    tl.add_steps(range(6), starts, [s + 1000 for s in starts])
    d = diagnose([tl.freeze()])
    buf = io.StringIO()
    Console(file=buf, width=80, color_system=None).print(render_report(d, width=80))
    out = buf.getvalue()
    _fits(out, 80)
    devices = _section(out, "Devices")
    for r in range(2):
        row = [ln for ln in devices if f"CPU replica {r}" in ln]
        assert len(row) == 1 and row[0].count("%") == 5, devices


def test_a_long_trace_path_is_not_cut_by_the_panel_border(tmp_path):
    long = tmp_path / ("run_of_" + "x" * 60) / "resnet50_dataloader_workers0.pt.trace.json.gz"
    long.parent.mkdir()
    shutil.copy(W0, long)
    r = gpudiag("analyze", str(long), env_columns=80)
    assert r.returncode == 0, r.stderr
    _fits(r.stdout, 80)
    first = r.stdout.splitlines()[:4]
    # the title holds the file name only
    assert first[0].startswith("╭─ gpudiag — resnet50_dataloader_workers0.pt.trace.json.gz ─")
    joined = "".join(ln.strip("│ ") for ln in first[1:])
    assert str(long) in joined, first  # the panel opens with it, whole


@pytest.mark.parametrize("width", [44, 60, 80, 100, 120, 160])
def test_multi_rank_report_fits_any_width_keeping_names_with_their_verdicts(width):
    pytest.importorskip("xprof")
    d = diagnose(load_file(MULTI))
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(render_report(d, width=width))
    out = buf.getvalue()
    _fits(out, width)
    for label in ("worker GPU 4", "worker GPU 6"):
        # in the table row or as the heading of its entry: the name and verdict, whole
        assert any(label in ln and "data-starved" in ln for ln in out.splitlines()), out
