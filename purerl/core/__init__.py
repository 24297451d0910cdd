"""The compute core: pure functions and the loop that compiles them.

| module | owns |
|---|---|
| ``algo`` | the ``Algo(init, update, act, hparams)`` interface, acting with memory, hparams |
| ``env`` | the ``Environment`` protocol: ``Step``, ``EnvSpec``, action spaces |
| ``stats`` | episode returns and lengths as pure functions, and their per-update summary |
| ``program`` | agents and the compiled chunk of updates: key streams, seeds mapped, AOT compile |
| ``schedule`` | where chunks end: their lengths, evaluations and checkpoints between them |
| ``loop`` | the host driver: runs chunk after chunk, timing, history, snapshots, checkpoints |
| ``rollout`` | collecting ``Transition[T, B]`` with a policy inside ``lax.scan`` |
| ``memory`` | feed-forward and recurrent networks stepped along rollouts in one signature |
| ``buffers`` | the replay buffer as init/add/sample pure functions |
| ``nets`` | flax modules: MLP and Nature-CNN torsos, policy, value and Q heads |
| ``distributions`` | categorical, diagonal Gaussian and epsilon-greedy action distributions |
| ``ops/`` | returns and targets, losses, minibatch SGD, optimisers, normalisation, convolution |
| ``parallel`` | the only module that knows about devices: placement, sharding, replicas |
| ``report`` | what the loop hands its sinks (``ChunkReport``, ``Sink``) and ``emit`` |
| ``types`` | shared containers (``Transition``) and array aliases |

Nothing here touches files or prints, and nothing imports a floor above (``algos``, ``envs``,
``run``, ...): docs/architecture.md.
"""
