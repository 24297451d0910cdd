"""The device check's rows and its two reports: ``report.json`` (a list of rows) and
``report.md`` (the same as a table under a header naming the machine)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, Literal

Status = Literal["pass", "fail", "skip"]


@dataclasses.dataclass
class Row:
    """One check: ``pass``, ``fail`` (with ``error``) or ``skip`` (with ``why``)."""

    name: str
    status: Status
    figures: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None
    why: str | None = None
    seconds: float | None = None

    def __post_init__(self):
        if self.status not in ("pass", "fail", "skip"):
            raise ValueError(f"status must be pass, fail or skip, got {self.status!r}")
        if self.status == "fail" and not self.error:
            raise ValueError(f"row {self.name!r} fails without an error")
        if self.status == "skip" and not self.why:
            raise ValueError(f"row {self.name!r} is skipped without a reason")

    def to_json(self) -> dict[str, Any]:
        found = dataclasses.asdict(self)
        return {key: value for key, value in found.items() if value is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Row:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in fields})


def last_line(text: str) -> str:
    """What a failed process's output says went wrong: its last exception line (``ValueError:
    ...``, not JAX's traceback note after it), else its last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line[:300]
    return lines[-1][:300] if lines else "(no output)"


def format_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list | tuple):
        shown = ", ".join(format_value(v) for v in value[:8])
        return f"[{shown}{', ...' if len(value) > 8 else ''}]"
    return str(value)


def format_figures(figures: dict[str, Any]) -> str:
    return "; ".join(f"{key} {format_value(value)}" for key, value in figures.items())


def markdown(rows: list[Row], header: dict[str, Any]) -> str:
    lines = ["# purerl device check", ""]
    lines += [f"- {key}: {format_value(value)}" for key, value in header.items()]
    counts = {status: sum(row.status == status for row in rows) for status in ("pass", "fail")}
    skipped = sum(row.status == "skip" for row in rows)
    lines += [f"- rows: {counts['pass']} pass, {counts['fail']} fail, {skipped} skip", ""]
    lines += ["| check | status | figures | error or reason | s |", "|---|---|---|---|---:|"]
    for row in rows:
        note = (row.error or row.why or "").replace("|", "/").replace("\n", " ")
        seconds = f"{row.seconds:.1f}" if row.seconds is not None else "-"
        figures = format_figures(row.figures).replace("|", "/")
        lines.append(f"| {row.name} | {row.status} | {figures} | {note} | {seconds} |")
    return "\n".join(lines) + "\n"


def write(out: Path, rows: list[Row], header: dict[str, Any]) -> None:
    """``report.json`` (``{"header": ..., "rows": [...]}``) and ``report.md`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    data = {"header": header, "rows": [row.to_json() for row in rows]}
    (out / "report.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / "report.md").write_text(markdown(rows, header))


def read_rows(path: Path) -> list[Row]:
    """Rows a check process appended to ``path`` (JSON lines), in order; none if it wrote none."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            rows.append(Row.from_json(json.loads(line)))
    return rows


def append_row(path: Path, row: Row) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row.to_json()) + "\n")
