"""Throughput beside the fastest pure-JAX code: compile time and steady-state steps/s.

    python -m benchmarks.throughput --seeds 1 8                        # PPO vs the reference
    python -m benchmarks.throughput --algo dqn --seeds 1 8             # DQN vs the reference
    python -m benchmarks.throughput --peers reference rejax            # also rejax (pip install)
    python -m benchmarks.throughput --algo sac --env Pendulum-v1 --peers reference rejax
    python -m benchmarks.throughput --num-devices 2                    # seeds over 2 CPU devices
    python -m benchmarks.throughput --network gru --env CartPole-NoVelocity-v1 --peers reference mlp
    python -m benchmarks.throughput --env xminigrid/MiniGrid-Empty-6x6 --peers xminigrid \
        --xminigrid-baseline xland-minigrid/training --num-envs 1024 --rollout-len 16 --rnn-size 256

Each configuration trains its whole budget as one compiled program (every seed vmapped; one
seed unmapped). The peers run the same hyperparameters in the same process, alternating call by
call with purerl (A B A B ...): ``reference`` is the minimal single-closure PPO / DQN of
``benchmarks/reference.py`` (SAC: ``benchmarks/reference_sac.py``; PPO with ``--network gru``:
``benchmarks/reference_rnn_ppo.py``), written in PureJaxRL's style as the bar to clear, ``rejax``
the public rejax 0.1.3, ``xminigrid`` XLand-MiniGrid's own recurrent PPO
(``--xminigrid-baseline``: its repository's ``training/`` folder; both sides then take its PPO
settings, one seed, ``benchmarks.peers.xminigrid_ppo_runner``), and ``mlp`` purerl itself with
the feed-forward torso at the same configuration and budget (beside ``--network gru`` or
``lstm``: what the recurrent torso costs).
Following docs/measuring.md: compile is timed on its own (AOT; purerl's init program and
chunk, a peer's one program that initialises and trains), then a warm-up call and ``--repeats``
calls on fresh seeds; the table quotes their median, and the ratio column is the median of
purerl's per-pair speed-ups over the peer. Steps count environment steps of all seeds together.

With ``--write-records`` each row beside a peer becomes a record of the results store
(``benchmarks/results/speed/``, beside ``--benchmarks``; the same row measured again replaces its
record) and the page is rendered again from every record.

With ``--num-devices D`` purerl splits the seeds over D devices (``purerl train --num-devices D``;
on a CPU, D XLA:CPU devices), and each peer runs twice: as published (vmapped on one device)
and placed the same way (``PEER/D``: its vmapped train function under ``jax.shard_map``), so
the table separates what the placement gains from what the code gains.
"""

from __future__ import annotations

import dataclasses
import datetime
import gc
import os
import platform
import shlex
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Annotated

import jax
import tyro
from jax.sharding import PartitionSpec as P

from benchmarks import page, peers, reference, reference_rnn_ppo, reference_sac, results
from benchmarks.timing import Runner, measure, peak_rss_mib
from purerl import algos
from purerl.config import Network
from purerl.core.nets import orthogonal
from purerl.core.parallel import (
    DEVICE_AXIS,
    Placement,
    make_placement,
    request_cpu_devices,
    select_devices,
)
from purerl.core.program import build_program, init_agents
from purerl.options import hint
from purerl.runtime import configure_jax


@dataclasses.dataclass(frozen=True)
class BenchArgs:
    algo: str = "ppo"
    """A registered algorithm (purerl train --help lists them)."""
    env: str = "CartPole-v1"
    """Environment id; the algorithm's preset for it (or the generic defaults) is the base."""
    num_envs: Annotated[int | None, hint("the preset's", "INT")] = None
    """Parallel environments per agent."""
    rollout_len: Annotated[int | None, hint("the preset's", "INT")] = None
    """Steps per environment per update."""
    learning_starts: Annotated[int | None, hint("the preset's", "INT")] = None
    """Environment steps before learning starts (off-policy algorithms)."""
    hidden_sizes: Annotated[tuple[int, ...] | None, hint("the preset's", "INT [INT ...]")] = None
    """Hidden layer widths."""
    network: Annotated[Network | None, hint("the preset's", "{mlp,gru,lstm}")] = None
    """Torso (PPO, PQN): mlp, or a gru or lstm cell after the MLP."""
    rnn_size: Annotated[int | None, hint("the preset's", "INT")] = None
    """Width of the gru or lstm cell."""
    bptt_len: Annotated[int | None, hint("the preset's", "INT")] = None
    """Steps per replayed sequence of a recurrent update (0: the whole rollout)."""
    seeds: tuple[int, ...] = (1, 8)
    """Numbers of vmapped seeds to measure, one row each."""
    total_timesteps: int = 500_000
    """Environment steps per agent per timed call."""
    repeats: int = 3
    """Timed calls after the warm-up call."""
    peers: tuple[str, ...] = ("reference",)
    """Implementations timed beside purerl: reference, rejax (pip install rejax), xminigrid
    (XLand-MiniGrid's recurrent PPO; needs --xminigrid-baseline), mlp (purerl with the
    feed-forward torso, beside a recurrent one), or none."""
    xminigrid_baseline: Annotated[Path | None, hint("none", "DIR")] = None
    """The training/ folder of a checkout of github.com/corl-team/xland-minigrid, for --peers
    xminigrid."""
    num_devices: int = 1
    """Devices the seeds are split over (CPU devices on a CPU); rows whose seeds do not divide
    run on one device."""
    write_records: bool = False
    """Record each row beside a peer in the results store and render --benchmarks again."""
    benchmarks: Path = Path("BENCHMARKS.md")
    """The results page --write-records renders (at the repository root)."""


def reference_ppo(cfg):
    """The feed-forward PPO reference, or the recurrent one for a recurrent network."""
    if cfg.network == "mlp":
        return reference.make_ppo_train(cfg)
    return reference_rnn_ppo.make_train(cfg)


XMINIGRID_PEER = "xminigrid"
"""XLand-MiniGrid's own recurrent PPO (``benchmarks.peers.xminigrid_ppo_runner``)."""

MLP_PEER = "mlp"
"""Not another implementation: purerl with ``network="mlp"``, the rest of the config unchanged."""

PEERS = {
    "reference": {
        "ppo": reference_ppo,
        "dqn": reference.make_dqn_train,
        "sac": reference_sac.make_sac_train,
    },
    "rejax": {
        "ppo": peers.make_rejax_ppo,
        "dqn": peers.make_rejax_dqn,
        "sac": peers.make_rejax_sac,
    },
}

"""``run(call_index) -> seconds`` for one full call on fresh seeds."""


def warm_up_process() -> None:
    """Pays the process's one-time costs of compiling before any compile is timed: JAX's first
    lowering and XLA's first compile, and LAPACK's set-up for the QR of orthogonal initialisers
    (it imports SciPy), which purerl and the references both use. Otherwise the side that
    compiles first (purerl) carries them."""
    program = jax.jit(lambda key: orthogonal(1.0)(key, (4, 4)))
    jax.block_until_ready(program(jax.random.key(0)))


def settle_heap() -> None:
    """Before a compile is timed: what lives now is frozen out of the garbage collector's reach
    (``gc.freeze``), as ``purerl`` does once its modules are loaded, so a collection during
    either side's compile walks that side's new objects, not the modules and programs of
    every implementation built before it in this process."""
    gc.collect()
    gc.freeze()


def purerl_runner(
    algo_name: str, cfg, num_seeds: int, placement: Placement | None = None
) -> tuple[Runner, float]:
    algo = algos.get(algo_name).make(cfg).algo
    # The peers' one program initialises too, so purerl's compile counts its init program (its
    # first call: compile, then microseconds of work) as well as the chunk, built as a run
    # builds them (``build_program``: init compiles beside the chunk).
    settle_heap()
    start = time.perf_counter()
    agents, programs = build_program(
        algo, list(range(num_seeds)), [cfg.num_updates], None, placement
    )
    jax.block_until_ready(agents)
    compiled = programs[cfg.num_updates]
    compile_s = time.perf_counter() - start

    def run(call: int) -> float:
        fresh = jax.block_until_ready(
            init_agents(algo, [1000 * (call + 1) + i for i in range(num_seeds)], placement)
        )
        start = time.perf_counter()
        jax.block_until_ready(compiled(fresh))
        return time.perf_counter() - start

    return run, compile_s


def peer_runner(
    peer: str, algo_name: str, cfg, num_seeds: int, placement: Placement | None = None
) -> tuple[Runner, float]:
    # Like purerl, a single seed runs without vmap (a batch of one is slower on CPU).
    train = PEERS[peer][algo_name](cfg)
    if num_seeds > 1:
        train = jax.vmap(train)
    if placement is not None:
        # Peers were written for one device; their loop carries do not declare how they vary
        # over a device axis, so shard_map's check of that is off.
        spec = P(DEVICE_AXIS)
        train = jax.shard_map(
            train, mesh=placement.mesh, in_specs=spec, out_specs=spec, check_vma=False
        )
    keys = jax.random.split(jax.random.key(0), num_seeds)
    if num_seeds == 1:
        keys = keys[0]
    settle_heap()
    start = time.perf_counter()
    compiled = jax.jit(train).lower(keys).compile()
    compile_s = time.perf_counter() - start

    def run(call: int) -> float:
        fresh = jax.random.split(jax.random.key(call + 1), num_seeds)
        fresh = fresh if num_seeds > 1 else fresh[0]
        start = time.perf_counter()
        jax.block_until_ready(compiled(fresh))
        return time.perf_counter() - start

    return run, compile_s


def bench_config(args: BenchArgs):
    """The preset for ``args.env`` with the benchmark's overrides."""
    base = algos.get(args.algo).base_config(args.env)
    overrides = {"env": args.env, "total_timesteps": args.total_timesteps, "num_seeds": 1}
    if args.num_envs is not None:
        overrides["num_envs"] = args.num_envs
    if args.rollout_len is not None:
        overrides["rollout_len"] = args.rollout_len
    for field in ("learning_starts", "hidden_sizes", "network", "rnn_size", "bptt_len"):
        value = getattr(args, field)
        if value is not None:
            if not hasattr(base, field):
                raise SystemExit(f"error: {args.algo} has no --{field.replace('_', '-')}")
            overrides[field] = value
    if args.algo == "dqn" and "rejax" in args.peers:
        overrides["hidden_sizes"] = peers.REJAX_DQN_HIDDEN
    if args.algo == "sac" and "rejax" in args.peers:
        overrides["policy_lr"] = base.q_lr  # rejax has one learning rate
    cfg = dataclasses.replace(base, **overrides)
    if XMINIGRID_PEER in args.peers:
        cfg = peers.xminigrid_ppo_config(cfg)
    return cfg


def describe(algo_name: str, cfg) -> str:
    """The configuration in one line: the fields that differ from the algorithm's defaults."""
    defaults = type(cfg)()
    changed = [
        f"{f.name}={getattr(cfg, f.name)}"
        for f in dataclasses.fields(cfg)
        if getattr(cfg, f.name) != getattr(defaults, f.name) and f.name != "total_timesteps"
    ]
    return f"{algo_name.upper()} {cfg.env}: {', '.join(changed) or 'defaults'}"


REFERENCE_FILES = {"ppo": "reference.py", "dqn": "reference.py", "sac": "reference_sac.py"}


def peer_label(peer: str, algo_name: str, cfg) -> str:
    """The peer in words: ``reference`` names its file, ``rejax`` its version, ``PEER/D`` how it
    was placed."""
    base, _, split = peer.partition("/")
    if base == "reference":
        recurrent = getattr(cfg, "network", "mlp") != "mlp"
        source = "reference_rnn_ppo.py" if recurrent else REFERENCE_FILES[algo_name]
        label = f"reference (benchmarks/{source})"
    elif base == XMINIGRID_PEER:
        label = (
            "XLand-MiniGrid's training/train_single_task.py (recurrent PPO), with xminigrid "
            f"{metadata.version('xminigrid')}"
        )
    else:
        label = f"{base} {metadata.version(base)}"
    return f"{label}, split over {split} devices the same way" if split else label


def workload(algo_name: str, cfg) -> str:
    """The preset and what the benchmark changed in it, and the budget per seed."""
    base = algos.get(algo_name).base_config(cfg.env)
    skip = {"env", "total_timesteps", "num_seeds"}
    changed = [
        f"{f.name}={getattr(cfg, f.name)}"
        for f in dataclasses.fields(cfg)
        if f.name not in skip and getattr(cfg, f.name) != getattr(base, f.name)
    ]
    steps = cfg.num_updates * cfg.env_steps_per_update
    base_name = "preset" if cfg.env in algos.get(algo_name).presets else "defaults"
    preset = f"{base_name} with {', '.join(changed)}" if changed else base_name
    return f"{preset}, {steps:,} steps per seed"


def speed_record(
    args: BenchArgs, cfg, peer: str, row: tuple[int, int, float, float, float], argv: list[str]
) -> results.SpeedRecord:
    """One row beside ``peer``: ``row`` is (seeds, purerl's devices, purerl steps/s, the peer's
    steps/s, purerl's speed-up); ``argv`` the benchmark's arguments."""
    num_seeds, devices, purerl_rate, peer_rate, ratio = row
    key = peer.replace("/", "-") + ("dev" if "/" in peer else "")
    name = f"{args.algo}-{cfg.env.replace('/', '-')}-{num_seeds}seed{'s' * (num_seeds > 1)}"
    name += f"-{devices}dev-{key}"
    if peer == XMINIGRID_PEER:
        # Its rows differ by workload (envs, GRU width), not by seeds or devices.
        name += f"-{cfg.num_envs}envs-gru{cfg.rnn_size}"
    shown = [a for a in argv if a != "--write-records"]
    if "--benchmarks" in shown:
        index = shown.index("--benchmarks")
        del shown[index : index + 2]
    backend = jax.default_backend()
    kind = None if backend == "cpu" else jax.devices()[0].device_kind
    today = datetime.date.today().isoformat()
    command = shlex.join(["python", "-m", "benchmarks.throughput", *shown])
    return results.SpeedRecord(
        name=name, order=0, algo=args.algo, env=cfg.env, workload=workload(args.algo, cfg),
        seeds=num_seeds, devices=devices, purerl_steps_per_s=float(round(purerl_rate)),
        peer=peer_label(peer, args.algo, cfg), peer_steps_per_s=float(round(peer_rate)),
        ratio=round(ratio, 3), command=command,
        measured=today, where=results.this_machine(os.cpu_count(), backend, kind),
        origin=f"benchmarks.throughput, {today}",
    )  # fmt: skip


def publish(args: BenchArgs, records: list[results.SpeedRecord]) -> None:
    """Writes ``records`` (a row measured again keeps its place on the page) and renders the
    page from every record."""
    results_dir = args.benchmarks.parent / "benchmarks" / "results"
    known = {r.name: r.order for r in results.read_all(results.SpeedRecord, results_dir)}
    last = max(known.values(), default=-1)
    for record in records:
        if record.name not in known:
            last += 1
            known[record.name] = last
        results.write(dataclasses.replace(record, order=known[record.name]), results_dir)
    args.benchmarks.write_text(page.render(args.benchmarks.parent, results_dir), encoding="utf-8")
    print(f"\nwrote {len(records)} record(s) to {results_dir} and {args.benchmarks}")


def main(args: BenchArgs, argv: list[str] = ()) -> None:
    cfg = bench_config(args)
    chosen = [peer for peer in args.peers if peer != "none"]
    for peer in chosen:
        if peer == XMINIGRID_PEER:
            if args.algo != "ppo" or args.xminigrid_baseline is None or args.seeds != (1,):
                raise SystemExit(
                    "error: --peers xminigrid times PPO at --seeds 1 and needs "
                    "--xminigrid-baseline DIR (the training/ folder of its repository)"
                )
        elif peer == MLP_PEER:
            if getattr(cfg, "network", "mlp") == "mlp":
                raise SystemExit("error: --peers mlp compares a --network gru or lstm with the mlp")
        elif peer not in PEERS or args.algo not in PEERS[peer]:
            names = ", ".join([*PEERS, MLP_PEER])
            raise SystemExit(f"error: no {peer} peer for {args.algo}; peers: {names}")
    if "reference" in chosen and getattr(cfg, "network", "mlp") == "lstm":
        raise SystemExit("error: the recurrent reference is a GRU; time --network lstm without it")
    if "rejax" in chosen and not peers.rejax_available():
        raise SystemExit("error: --peers rejax needs rejax (pip install rejax)")
    print(
        f"# {describe(args.algo, cfg)}, {cfg.num_updates} updates per call\n"
        f"# {platform.processor() or platform.machine()}, {jax.device_count()} "
        f"{jax.default_backend()} device(s), jax {jax.__version__}; "
        f"median of {args.repeats} calls after a warm-up\n"
    )
    warm_up_process()
    header = "| impl | seeds | devices | compile s | steps/s | steps/s per seed | purerl speed-up |"
    print(header)
    print("|---|---:|---:|---:|---:|---:|---:|")
    steps = cfg.num_updates * cfg.env_steps_per_update
    records = []
    for num_seeds in args.seeds:
        placement = seeds_placement(args.num_devices, num_seeds, cfg.num_envs)
        devices = placement.num_devices if placement else 1
        runners, compiles, where = {}, {}, {"purerl": devices}
        runners["purerl"], compiles["purerl"] = purerl_runner(args.algo, cfg, num_seeds, placement)
        for peer in chosen:
            if peer == MLP_PEER:
                name = f"purerl {MLP_PEER}"
                mlp = dataclasses.replace(cfg, network=MLP_PEER)
                runners[name], compiles[name] = purerl_runner(args.algo, mlp, num_seeds, placement)
                where[name] = devices
                continue
            if peer == XMINIGRID_PEER:
                runners[peer], compiles[peer] = peers.xminigrid_ppo_runner(
                    cfg, args.xminigrid_baseline
                )
                where[peer] = 1
                continue
            runners[peer], compiles[peer] = peer_runner(peer, args.algo, cfg, num_seeds)
            where[peer] = 1
            if placement is not None:
                name = f"{peer}/{devices}"
                runners[name], compiles[name] = peer_runner(
                    peer, args.algo, cfg, num_seeds, placement
                )
                where[name] = devices
        times = measure(runners, args.repeats)
        rates = {name: steps * num_seeds / statistics.median(times[name]) for name in runners}
        for name in runners:
            sps = rates[name]
            speedup = "-"
            if name != "purerl":
                ratios = [b / a for a, b in zip(times["purerl"], times[name], strict=True)]
                ratio = statistics.median(ratios)
                speedup = f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.3f}x"
                if args.write_records and not name.startswith("purerl"):
                    row = (num_seeds, devices, rates["purerl"], sps, ratio)
                    records.append(speed_record(args, cfg, name, row, list(argv)))
            print(
                f"| {name} | {num_seeds} | {where[name]} | {compiles[name]:.1f} | {sps:,.0f} | "
                f"{sps / num_seeds:,.0f} | {speedup} |",
                flush=True,
            )
    print(f"\npeak resident memory: {peak_rss_mib():,.0f} MiB")
    if records:
        publish(args, records)


def seeds_placement(num_devices: int, num_seeds: int, num_envs: int) -> Placement | None:
    """Seeds split over ``num_devices`` devices, or None (one device) when they do not divide."""
    if num_devices == 1 or num_seeds % num_devices:
        return None
    return make_placement(select_devices("auto", num_devices), "seeds", num_seeds, num_envs)


if __name__ == "__main__":
    configure_jax()
    bench_args = tyro.cli(BenchArgs, description=__doc__)
    if bench_args.num_devices > 1:
        request_cpu_devices(bench_args.num_devices)
    main(bench_args, sys.argv[1:])
