import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.core.env import Box, Discrete, EnvSpec
from purerl.core.nets import make_actor_critic, make_continuous_nets, make_q_network, orthogonal


def test_orthogonal_init_vmapped_equals_flax_one_key_at_a_time():
    # Vmapped over seeds it loops over single QRs (no batched LAPACK call that can deadlock
    # XLA:CPU's pool); each seed must get exactly the matrix flax gives that key alone.
    keys = jax.random.split(jax.random.key(3), 3)
    shape = (7, 5)
    batched = jax.jit(jax.vmap(lambda k: orthogonal(1.7)(k, shape)))(keys)
    flax_init = nn.initializers.orthogonal(1.7)
    for key, matrix in zip(keys, batched, strict=True):
        expected = jax.jit(lambda k: flax_init(k, shape))(key)
        np.testing.assert_array_equal(np.asarray(matrix), np.asarray(expected))
    # Columns are orthogonal with norm 1.7: the property the initialiser exists for.
    gram = np.asarray(batched[0]).T @ np.asarray(batched[0])
    np.testing.assert_allclose(gram, 1.7**2 * np.eye(5), atol=1e-5)


def test_twin_critics_are_independent_and_actors_respect_the_bounds():
    spec = EnvSpec("toy", (3,), "float32", Box((-2.0, 0.0), (2.0, 1.0), (2,)), num_envs=5)
    obs = jax.random.normal(jax.random.key(0), (5, 3))
    action = jnp.ones((5, 2))
    for stochastic in (True, False):
        actor, critics = make_continuous_nets(spec, (8, 8), "relu", stochastic=stochastic)
        critic_params = critics.init(jax.random.key(1), obs, action)
        q = critics.apply(critic_params, obs, action)
        assert q.shape == (2, 5) and q.dtype == jnp.float32
        assert not np.allclose(q[0], q[1])  # each critic has its own initialisation
        out = actor.apply(actor.init(jax.random.key(2), obs), obs)
        acted = out.sample(jax.random.key(3)) if stochastic else out
        assert acted.shape == (5, 2)
        assert (acted[:, 0] >= -2).all() and (acted[:, 0] <= 2).all()
        assert (acted[:, 1] >= 0).all() and (acted[:, 1] <= 1).all()


class Torso(nn.Module):
    """A torso of the user's: one tanh layer of 6 units over the flattened observation."""

    @nn.compact
    def __call__(self, obs):
        return nn.tanh(nn.Dense(6)(obs.reshape(obs.shape[0], -1)))


def torso_kernels(params: dict, *path: str) -> list:
    """The kernels of every ``Torso`` copy under ``params['params'][path...]``."""
    tree = params["params"]
    for key in path:
        tree = tree[key]
    return tree["Dense_0"]["kernel"]


def test_a_users_torso_gets_purerls_heads_and_a_copy_per_network():
    obs = jax.random.normal(jax.random.key(0), (5, 3))
    # On pixels purerl's CNN is shared by actor and critic; a user's torso is copied for each.
    for shape, dtype in (((3,), "float32"), ((4, 84, 84), "uint8")):
        spec = EnvSpec("toy", shape, dtype, Discrete(4), num_envs=5)
        network = make_actor_critic(spec, (16,), "tanh", network=Torso())
        frames = obs if dtype == "float32" else jnp.zeros((5, *shape), jnp.uint8)
        params = network.init(jax.random.key(1), frames)
        assert sorted(params["params"]) == ["actor_torso", "critic_torso", "policy", "value_head"]
        dist, value = network.apply(params, frames)
        assert dist.logits.shape == (5, 4) and value.shape == (5,)
        assert params["params"]["policy"]["Dense_0"]["kernel"].shape == (6, 4)
    actor, critic = torso_kernels(params, "actor_torso"), torso_kernels(params, "critic_torso")
    assert not np.allclose(actor, critic)  # parameters of their own
    q_network = make_q_network(
        EnvSpec("toy", (3,), "float32", Discrete(4)), (16,), "relu", network=Torso()
    )
    q_params = q_network.init(jax.random.key(1), obs)
    assert q_network.apply(q_params, obs).shape == (5, 4)
    assert torso_kernels(q_params, "torso").shape == (3, 6)


def test_twin_critics_and_the_actor_each_get_their_own_copy_of_a_users_torso():
    spec = EnvSpec("toy", (3,), "float32", Box((-1.0,), (1.0,), (1,)), num_envs=5)
    obs, action = jax.random.normal(jax.random.key(0), (5, 3)), jnp.zeros((5, 1))
    actor, critics = make_continuous_nets(spec, (8,), "relu", network=Torso())
    actor_params = actor.init(jax.random.key(1), obs)
    critic_params = critics.init(jax.random.key(2), obs, action)
    assert torso_kernels(actor_params, "torso").shape == (3, 6)
    twins = torso_kernels(critic_params, "torso")
    assert twins.shape == (2, 3, 6) and not np.allclose(twins[0], twins[1])
    # The critics' MLP reads the torso's 6 features and the action.
    assert critic_params["params"]["VmapCritic_0"]["MLP_0"]["Dense_0"]["kernel"].shape == (2, 7, 8)
    assert critics.apply(critic_params, obs, action).shape == (2, 5)


def test_purerls_own_networks_keep_their_parameters_and_refuse_an_unresolved_name():
    spec = EnvSpec("toy", (3,), "float32", Discrete(2), num_envs=5)
    obs = jnp.zeros((5, 3))
    params = make_actor_critic(spec, (16,), "tanh").init(jax.random.key(0), obs)["params"]
    assert sorted(params["actor_torso"]) == ["Dense_0"]  # the MLP, under the same names
    box = EnvSpec("toy", (3,), "float32", Box((-1.0,), (1.0,), (1,)), num_envs=5)
    _, critics = make_continuous_nets(box, (8,), "relu")
    critic_params = critics.init(jax.random.key(0), obs, jnp.zeros((5, 1)))["params"]
    assert list(critic_params) == ["VmapCritic_0"]  # no torso: the observation as it is
    for make, on in ((make_actor_critic, spec), (make_q_network, spec)):
        with pytest.raises(ValueError, match="names a torso of yours"):
            make(on, (16,), "tanh", network="mymodule:Torso")
    with pytest.raises(ValueError, match="mlp or a module"):
        make_continuous_nets(box, (8,), "relu", network="mymodule:Torso")
