"""TensorBoard event files without TensorFlow: a training sink and a small reader.

Writing goes through ``tensorboardX`` (the ``tensorboard`` extra), imported when a sink is
built, so purerl works without it. Tags:

- ``<metric>`` (e.g. ``episode/return``): the mean over seeds, over the seeds where the value is
  defined, as the top-level values of ``metrics.jsonl``;
- ``<metric>/seed_<i>``: the seed at index ``i`` of the run (seed ``cfg.seed + i``);
- ``perf/frames`` (frames per agent) and ``perf/steps_per_second`` (all seeds' environment
  steps per second of training, compile excluded, once per chunk);
- ``summary/<key>`` and ``summary/<key>/seed_<i>``: the numbers of ``summary.json``, at close.

The global step of every scalar is the environment step count of one agent (frames divided by
the frame skip). Undefined values (``episode/return`` of an update that finished no episode)
are left out rather than written as NaN.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from purerl.core.report import ChunkReport
from purerl.extras import import_extra
from purerl.run.rundir import report_rows

TENSORBOARD_EXTRA = "'purerl[tensorboard]'"
"""What to pip install for this module (tensorboardX)."""


class TensorBoardSink:
    """A ``purerl.core.report.Sink`` that writes every metric as TensorBoard scalars.

    Args:
        log_dir: directory for the event file (created if needed), e.g. ``<run_dir>/tensorboard``.
        env_steps_per_update: environment steps of one agent per update (the global step unit).
        frame_skip: emulator frames per environment step, for ``perf/frames``.
        start_update: updates done before this sink starts (a resumed run, same ``log_dir``):
            TensorBoard then hides what an earlier writer logged for the updates after it.

    Raises:
        MissingExtraError: tensorboardX is not installed (``pip install 'purerl[tensorboard]'``).
    """

    def __init__(
        self,
        log_dir: str | Path,
        env_steps_per_update: int,
        frame_skip: int = 1,
        start_update: int = 0,
    ):
        tensorboardx = import_extra("tensorboardX", TENSORBOARD_EXTRA, "--tensorboard")
        # Rows past the checkpoint a run resumes from are logged again; the purge step makes
        # TensorBoard drop the first writer's copies (steps >= it) instead of showing both.
        purge_step = (start_update + 1) * env_steps_per_update if start_update else None
        # tensorboardX names files by the second they were opened and overwrites a namesake:
        # the suffix keeps a quickly resumed run's file apart (and sorted after the first).
        self.writer = tensorboardx.SummaryWriter(
            logdir=str(log_dir),
            purge_step=purge_step,
            filename_suffix=f".update{start_update:09d}",
        )
        self.env_steps_per_update = env_steps_per_update
        self.frame_skip = frame_skip
        self.last_step = start_update * env_steps_per_update

    def write(self, report: ChunkReport) -> None:
        rows = report_rows(report, self.env_steps_per_update, self.frame_skip)
        for row in rows:
            step = row["env_steps"]
            for name, per_seed in row["per_seed"].items():
                self.add(name, row[name], step)
                for index, value in enumerate(per_seed):
                    self.add(f"{name}/seed_{index}", value, step)
            self.add("perf/frames", row["frames"], step)
        self.last_step = rows[-1]["env_steps"]
        num_seeds = len(rows[-1]["per_seed"]["episode/return"])
        speed = self.last_step * num_seeds / max(report.train_time_s, 1e-9)
        self.add("perf/steps_per_second", speed, self.last_step)
        # One flush per chunk, so a TensorBoard watching the run sees each chunk as it ends.
        self.writer.flush()

    def add(self, tag: str, value: float | None, step: int) -> None:
        if value is not None:
            self.writer.add_scalar(tag, value, global_step=step)

    def close(self, summary: dict[str, Any]) -> None:
        for key, value in summary.items():
            if isinstance(value, list):
                for index, item in enumerate(value):
                    self.add(f"summary/{key}/seed_{index}", number_or_none(item), self.last_step)
            else:
                self.add(f"summary/{key}", number_or_none(value), self.last_step)
        self.writer.close()


def number_or_none(value: Any) -> float | None:
    """``value`` as a float if it is a number (bools and strings are not), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def crc32c_table() -> list[int]:
    """Byte table of CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)."""
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


CRC32C_TABLE = crc32c_table()


def masked_crc32c(data: bytes) -> int:
    """The checksum TFRecord framing stores: CRC-32C rotated right by 15 plus a constant."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def iter_records(data: bytes, source: str = "event file") -> list[bytes]:
    """Payloads of TFRecord framing: ``u64 length, u32 crc(length), payload, u32 crc(payload)``.

    A record cut short at the end (a writer still running) is left out.

    Raises:
        ValueError: a checksum does not match (a corrupt file).
    """
    records, offset = [], 0
    while offset + 12 <= len(data):
        header = data[offset : offset + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[offset + 8 : offset + 12])
        end = offset + 12 + length + 4
        if header_crc != masked_crc32c(header):
            raise ValueError(f"{source}: corrupt record header at byte {offset}")
        if end > len(data):
            break
        payload = data[offset + 12 : offset + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[end - 4 : end])
        if payload_crc != masked_crc32c(payload):
            raise ValueError(f"{source}: corrupt record payload at byte {offset}")
        records.append(payload)
        offset = end
    return records


def read_scalars(log_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the event files directly in ``log_dir``, by tag, as TensorBoard shows them.

    Needs tensorboardX for its bundled protobuf classes (not TensorFlow). Values are float32 as
    stored. Files are read in name order (their names start with a creation timestamp); a
    writer's purge step (a resumed run) drops the values read before it at steps >= it.

    Returns:
        ``{tag: [(global_step, value), ...]}`` in the order written.
    """
    event_pb2 = import_extra("tensorboardX.proto.event_pb2", TENSORBOARD_EXTRA, "read_scalars")
    scalars: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(Path(log_dir).glob("*tfevents*")):
        for record in iter_records(path.read_bytes(), str(path)):
            event = event_pb2.Event.FromString(record)
            if event.session_log.status == event_pb2.SessionLog.START:
                for tag, points in scalars.items():
                    scalars[tag] = [(step, v) for step, v in points if step < event.step]
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars
