"""BENCHMARKS.md, rendered from the results store (``benchmarks/results/``) and nothing else.

``python -m benchmarks.table --render`` writes it; a test renders the committed records and
compares the page, so the page is never edited by hand. Imports neither JAX nor purerl.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from benchmarks import results
from benchmarks.results import LearningRecord, Machine, SpeedRecord

REGENERATE = "python -m benchmarks.table --seeds 4 --out-dir runs/bench --write-benchmarks"
"""Trains every learning row, writes its record and plot, and renders the page."""
RENDER = "python -m benchmarks.table --render"
NOTES_DIR = Path("docs") / "notes"

PLANNED = (
    "PPO and PQN on Atari Breakout-v5 at CleanRL's 10M agent steps (its EnvPool scripts report "
    "430 +- 8 and 385 +- 12), and SAC and TD3 on MuJoCo at CleanRL's 1M steps: jobs for a GPU, "
    "not run yet."
)

INTRO = """\
What purerl's presets learn and how fast purerl runs beside other code. Final return: mean +- std
across seeds of each seed's mean return over its last 100 or more training episodes. Steps/s:
environment steps of all seeds per second of training, compile excluded. Wall: the whole run,
compile included. A speed ratio is purerl's rate over the peer's, the median of per-pair ratios
with calls alternating in one process. [docs/measuring.md](docs/measuring.md) says how each figure
is measured and how to reproduce one."""


def table(header: Sequence[str], lines: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """A markdown table; columns in ``right`` align right."""
    rule = ["---:" if i in right else "---" for i in range(len(header))]
    rows = [header, rule, *lines]
    return ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]


def rate(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:,.0f}"


def machines(learning: list[LearningRecord], speed: list[SpeedRecord]) -> dict[str, Machine]:
    """Each machine label with its hardware and the versions its records name (a package measured
    at two versions lists both)."""
    found: dict[str, Machine] = {}
    for record in [*learning, *speed]:
        where = record.where
        seen = found.setdefault(where.machine, Machine(where.machine, where.hardware, {}))
        if seen.hardware != where.hardware:
            raise results.RecordError(
                f"{record.name}: machine {where.machine!r} is {where.hardware!r} here and "
                f"{seen.hardware!r} elsewhere; give one of them another label"
            )
        for package, version in where.versions.items():
            known = seen.versions.get(package)
            if known is None:
                seen.versions[package] = version
            elif version not in known.split(" and "):
                seen.versions[package] = f"{known} and {version}"
    return found


def hardware_section(found: dict[str, Machine], gpu_header: dict | None) -> list[str]:
    lines = [
        [m.machine, m.hardware, ", ".join(f"{k} {v}" for k, v in sorted(m.versions.items()))]
        for m in found.values()
    ]
    if gpu_header:
        devices = ", ".join(gpu_header.get("devices", []))
        versions = f"python {gpu_header.get('python')}, jax {gpu_header.get('jax')}"
        hardware = f"{devices}, {gpu_header.get('cpu_cores')} CPU cores"
        lines.append([gpu_header["label"], hardware, versions])
    return [
        "## Hardware and versions",
        "",
        *table(["machine", "hardware", "versions"], lines, set()),
    ]


def dates(records: Sequence[LearningRecord | SpeedRecord]) -> str:
    days = sorted({r.measured for r in records})
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def learning_section(section: str, records: list[LearningRecord]) -> list[str]:
    records = sorted(records, key=lambda r: r.order)
    memory = section == "memory"
    header = ["algo"] if memory else []
    header += ["env", "protocol", "steps per seed", "seeds", "final return"]
    header += ["published reference (source)", "wall", "steps/s", "plot"]
    right = {3, 4, 5, 7, 8} if memory else {2, 3, 4, 6, 7}
    lines = []
    for r in records:
        span = f"{r.seeds[0]}-{r.seeds[-1]}" if len(r.seeds) > 1 else str(r.seeds[0])
        seeds = f"{len(r.seeds)} ({span})"
        wall = "not recorded" if r.wall_time_s is None else f"{r.wall_time_s / 60:.1f} min"
        plot = f"[png]({r.plot})" if r.plot else "none"
        line = [r.algo.upper()] if memory else []
        line += [r.env, r.protocol, f"{r.steps_per_seed:,}", seeds]
        shown = results.show_return(r.final_mean, r.final_std)
        line += [shown, r.reference, wall, rate(r.steps_per_s)]
        lines.append([*line, plot])
    on = sorted({r.where.machine for r in records})
    return [
        f"## {results.SECTIONS[section]}",
        "",
        *table(header, lines, right),
        "",
        f"Measured {dates(records)} on {', '.join(on)}.",
    ]


def speed_section(records: list[SpeedRecord]) -> list[str]:
    records = sorted(records, key=lambda r: r.order)
    commands: list[str] = []
    lines = []
    for r in records:
        if r.command not in commands:
            commands.append(r.command)
        lines.append(
            [
                r.algo.upper(), f"{r.env}: {r.workload}", str(r.seeds), str(r.devices),
                rate(r.purerl_steps_per_s), r.peer, rate(r.peer_steps_per_s),
                f"**{r.ratio:.2f}x**", f"[{commands.index(r.command) + 1}]",
            ]
        )  # fmt: skip
    header = ["algo", "env: workload", "seeds", "devices", "purerl steps/s", "peer"]
    header += ["peer steps/s", "purerl / peer", "command"]
    listed = []
    for number, command in enumerate(commands, 1):
        first = next(r for r in records if r.command == command)
        listed.append(f"{number}. `{command}` ({first.measured}, {first.where.machine})")
    return [
        "## Speed beside peers",
        "",
        "Each peer does the same work as purerl: `benchmarks/reference.py` and its siblings are",
        "minimal single-closure implementations in PureJaxRL's style; rejax and Brax's trainer",
        "are the published libraries, run at purerl's settings.",
        "",
        *table(header, lines, {2, 3, 4, 6, 7}),
        "",
        *listed,
        "",
        "A `benchmarks.throughput` command run with `--write-records` replaces its rows' records",
        "and renders this page again.",
    ]


def gpu_rows(root: Path, paths: list[str]) -> tuple[dict | None, list[dict]]:
    """The first header that names its devices, and each check's latest row (a later report
    replaces a row)."""
    headers, rows = [], {}
    for path in paths:
        data = json.loads((root / path).read_text(encoding="utf-8"))
        headers.append(data["header"])
        rows.update({row["name"]: row for row in data["rows"]})
    named = [header for header in headers if header.get("devices")]
    dates = sorted({header["date"][:10] for header in headers if header.get("date")})
    return {**(named or headers)[0], "dates": dates}, list(rows.values())


def gpu_section(header: dict, rows: list[dict], paths: list[str]) -> list[str]:
    speed = []
    for row in rows:
        fig = row.get("figures") or {}
        if row["status"] == "pass" and "speedup_vs_reference" in fig:
            workload = row["name"].removeprefix("throughput ")
            speed.append(
                [workload, rate(fig["steps_per_s"]), rate(fig["reference_steps_per_s"]),
                 f"**{fig['speedup_vs_reference']:.2f}x**"]
            )  # fmt: skip
    ends = []
    for row in rows:
        fig = row.get("figures") or {}
        if row["status"] != "pass":
            continue
        if row["name"].startswith("learning "):
            _, algo, env = row["name"].split(" ", 2)
            ends.append(
                f"- {algo.upper()} on {env}, the preset, {fig['seeds']} seeds x "
                f"{fig['env_steps_per_seed']:,} steps: final return {fig['final_mean_return']:.1f}"
                f" +- {fig['final_std_return']:.1f} in {fig['wall_s']:.1f} s ("
                f"{fig['compile_s']:.1f} s of it compiling), {rate(fig['steps_per_s'])} steps/s."
            )
        elif row["name"].startswith("atari command"):
            ends.append(
                f"- PPO on Breakout-v5 ({row['name'].removeprefix('atari command ')}): "
                f"{rate(fig['frames_per_s'])} frames/s, {fig['vs_raw_envpool']:.2f}x raw EnvPool."
            )
    links = ", ".join(
        f"[{Path(p).parent.name}]({Path(p).parent.as_posix()}/report.md)" for p in paths
    )
    return [
        f"## On one GPU ({header['label']})",
        "",
        f"`python -m benchmarks.device` on {' and '.join(header['dates'])} (reports: {links}); "
        "the peer is",
        "`benchmarks/reference.py` in the same process, calls alternating.",
        "",
        *table(["workload", "purerl steps/s", "reference steps/s", "purerl / reference"], speed,
               {1, 2, 3}),
        "",
        *ends,
    ]  # fmt: skip


def notes_section(root: Path) -> list[str]:
    notes = sorted((root / NOTES_DIR).glob("*.md"))
    if not notes:
        return []
    items = []
    for note in notes:
        title = note.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
        items.append(f"- [{title}]({(NOTES_DIR / note.name).as_posix()})")
    return ["## Notes", "", "How some of these figures were reached, dated:", "", *items]


def render(root: Path, results_dir: Path = results.RESULTS_DIR) -> str:
    """The whole page, from the records under ``results_dir``; links relative to ``root``."""
    learning = results.read_all(LearningRecord, results_dir)
    speed = results.read_all(SpeedRecord, results_dir)
    reports = results.device_reports(results_dir)
    gpu_header, rows = gpu_rows(root, reports) if reports else (None, [])
    if gpu_header:
        device = (gpu_header.get("devices") or ["an accelerator"])[0]
        gpu_header = {**gpu_header, "label": device.split("(")[-1].rstrip(")")}
    parts = [
        ["# Benchmarks", "", INTRO],
        [
            "Every learning row and this page, regenerated (trains each row: hours on a CPU):",
            "",
            f"```\n{REGENERATE}\n```",
            "",
            f"`{RENDER}` writes this page from the records in `benchmarks/results/`",
            "without training: the page is never edited by hand.",
        ],
        hardware_section(machines(learning, speed), gpu_header),
    ]
    for section in results.SECTIONS:
        chosen = [r for r in learning if r.section == section]
        if chosen:
            parts.append(learning_section(section, chosen))
    parts.append(["## Planned", "", PLANNED])
    if speed:
        parts.append(speed_section(speed))
    if gpu_header:
        parts.append(gpu_section(gpu_header, rows, reports))
    parts.append(notes_section(root))
    return "\n\n".join("\n".join(part) for part in parts if part) + "\n"
