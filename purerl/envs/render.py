"""RGB frames of single environment states, for evaluation videos (host-side NumPy).

``render_frame(env, state, params)`` walks down the wrapper stack to the adapter: Atari shows
the newest frame of its observation (what the agent sees, 84x84 grayscale); an adapter with its
own ``render`` draws itself (Snake; Brax through MuJoCo's renderer; Jumanji and XLand-MiniGrid
through theirs); gymnax classic-control
and MinAtar states are drawn here with a few NumPy primitives (gymnax's own visualiser needs
pygame and builds a Gymnasium environment per frame); anything else gets a bar chart of its
observation.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

FRAME_SHAPE = (200, 300)
"""Height and width of drawn frames."""
BACKGROUND, INK, ACCENT, GROUND = (255, 255, 255), (40, 40, 40), (204, 120, 40), (120, 120, 120)


def _canvas() -> np.ndarray:
    return np.full(FRAME_SHAPE + (3,), BACKGROUND, np.uint8)


def _pixel_grid() -> tuple[np.ndarray, np.ndarray]:
    rows, cols = np.mgrid[0 : FRAME_SHAPE[0], 0 : FRAME_SHAPE[1]]
    return rows.astype(np.float32), cols.astype(np.float32)


def draw_segment(image, start, end, width: float, colour) -> None:
    """Paints the thick segment from ``start`` to ``end`` (``(row, col)`` pixels) in place."""
    rows, cols = _pixel_grid()
    (r0, c0), (r1, c1) = start, end
    dr, dc = r1 - r0, c1 - c0
    length2 = max(dr * dr + dc * dc, 1e-9)
    t = np.clip(((rows - r0) * dr + (cols - c0) * dc) / length2, 0.0, 1.0)
    dist2 = (rows - (r0 + t * dr)) ** 2 + (cols - (c0 + t * dc)) ** 2
    image[dist2 <= (width / 2) ** 2] = colour


def draw_disc(image, centre, radius: float, colour) -> None:
    rows, cols = _pixel_grid()
    image[(rows - centre[0]) ** 2 + (cols - centre[1]) ** 2 <= radius**2] = colour


def draw_box(image, top: float, left: float, bottom: float, right: float, colour) -> None:
    image[int(max(top, 0)) : int(max(bottom, 0)), int(max(left, 0)) : int(max(right, 0))] = colour


def draw_cartpole(state: Any, params: Any) -> np.ndarray:
    image = _canvas()
    scale = FRAME_SHAPE[1] / (2 * float(params.x_threshold) * 1.2)
    ground = 150.0
    cart_col = FRAME_SHAPE[1] / 2 + float(state.x) * scale
    draw_segment(image, (ground, 0), (ground, FRAME_SHAPE[1]), 1, GROUND)
    draw_box(image, ground - 15, cart_col - 25, ground + 5, cart_col + 25, INK)
    pole = 2 * float(params.length) * scale
    theta = float(state.theta)  # 0 is upright, positive leans right
    tip = (ground - 15 - pole * np.cos(theta), cart_col + pole * np.sin(theta))
    draw_segment(image, (ground - 15, cart_col), tip, 8, ACCENT)
    return image


def draw_pendulum(state: Any, params: Any) -> np.ndarray:
    image = _canvas()
    centre, length = (100.0, 150.0), 80.0
    theta = float(state.theta)  # 0 is upright
    tip = (centre[0] - length * np.cos(theta), centre[1] + length * np.sin(theta))
    draw_segment(image, centre, tip, 14, ACCENT)
    draw_disc(image, centre, 5, INK)
    return image


def draw_acrobot(state: Any, params: Any) -> np.ndarray:
    image = _canvas()
    centre, link = (100.0, 150.0), 45.0
    a1, a2 = float(state.joint_angle1), float(state.joint_angle2)  # 0 hangs straight down
    elbow = (centre[0] + link * np.cos(a1), centre[1] + link * np.sin(a1))
    tip = (elbow[0] + link * np.cos(a1 + a2), elbow[1] + link * np.sin(a1 + a2))
    draw_segment(image, (centre[0] - link, 0), (centre[0] - link, FRAME_SHAPE[1]), 1, GROUND)
    draw_segment(image, centre, elbow, 8, INK)
    draw_segment(image, elbow, tip, 8, ACCENT)
    return image


def draw_mountain_car(state: Any, params: Any) -> np.ndarray:
    image = _canvas()
    low, high = float(params.min_position), float(params.max_position)

    def to_pixel(x: float) -> tuple[float, float]:
        height = np.sin(3 * x) * 0.45 + 0.55
        return 180 - height * 150, (x - low) / (high - low) * FRAME_SHAPE[1]

    xs = np.linspace(low, high, 60)
    for a, b in zip(xs[:-1], xs[1:], strict=True):
        draw_segment(image, to_pixel(a), to_pixel(b), 2, GROUND)
    goal = to_pixel(float(params.goal_position))
    draw_segment(image, goal, (goal[0] - 25, goal[1]), 2, INK)
    draw_disc(image, to_pixel(float(state.position)), 9, ACCENT)
    return image


MINATAR_COLOURS = np.array(
    [[230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200], [245, 130, 48],
     [145, 30, 180], [70, 240, 240], [240, 50, 230], [128, 128, 0], [0, 128, 128]],
    np.uint8,
)  # fmt: skip


def draw_channels(obs: np.ndarray, scale: int = 20) -> np.ndarray:
    """A ``[H, W, C]`` 0/1 grid (MinAtar) with one colour per channel, black where empty."""
    obs = np.asarray(obs) > 0
    image = np.zeros(obs.shape[:2] + (3,), np.uint8)
    for channel in range(obs.shape[-1]):
        image[obs[..., channel]] = MINATAR_COLOURS[channel % len(MINATAR_COLOURS)]
    return image.repeat(scale, axis=0).repeat(scale, axis=1)


def draw_frame_stack(obs: np.ndarray, scale: int = 2) -> np.ndarray:
    """The newest frame of a channel-first grayscale stack ``[C, H, W]``, as RGB."""
    frame = np.asarray(obs, np.uint8)[-1]
    return np.repeat(frame[..., None], 3, axis=-1).repeat(scale, axis=0).repeat(scale, axis=1)


def draw_bars(obs: np.ndarray) -> np.ndarray:
    """Any observation as bars of its (flattened, squashed) values around a middle line."""
    image = _canvas()
    leaves = [np.asarray(leaf, np.float32).ravel() for leaf in jax.tree.leaves(obs)]
    values = np.tanh(np.concatenate(leaves)[:64])
    width = FRAME_SHAPE[1] / max(len(values), 1)
    middle = FRAME_SHAPE[0] / 2
    for i, v in enumerate(values):
        top, bottom = sorted((middle, middle - v * (middle - 10)))
        draw_box(image, top, i * width + 1, bottom + 1, (i + 1) * width - 1, ACCENT)
    draw_segment(image, (middle, 0), (middle, FRAME_SHAPE[1]), 1, INK)
    return image


DRAWERS = {
    "CartPole-v1": draw_cartpole,
    "Pendulum-v1": draw_pendulum,
    "Acrobot-v1": draw_acrobot,
    "MountainCar-v0": draw_mountain_car,
    "MountainCarContinuous-v0": draw_mountain_car,
}


def adapter_state(env: Any, state: Any, index: int = 0) -> tuple[Any, Any]:
    """The innermost environment and its state for environment ``index`` of a batch."""
    from purerl.envs.wrappers import Vectorize, Wrapper

    while isinstance(env, Wrapper):
        if isinstance(env, Vectorize):
            state = jax.tree.map(lambda x: x[index], state)
        elif hasattr(state, "inner"):
            state = state.inner
        env = env.env
    return env, state


def render_frame(env: Any, state: Any, params: Any, obs: Any = None, index: int = 0) -> np.ndarray:
    """uint8 RGB frame ``[height, width, 3]`` of environment ``index`` in ``state``.

    Args:
        env: the (wrapped) environment ``state`` belongs to.
        params: its parameters.
        obs: the observation of that environment, used where no drawing of the state exists.
    """
    base, inner = adapter_state(env, state, index)
    if getattr(base, "atari", False) and obs is not None:
        return draw_frame_stack(jax.device_get(obs))
    frame = base.render(inner) if hasattr(base, "render") else None
    if frame is not None:
        return np.asarray(frame)
    env_id = base.spec.id
    if env_id in DRAWERS:
        return DRAWERS[env_id](jax.device_get(inner), jax.device_get(params))
    if env_id.endswith("-MinAtar") and obs is not None:
        return draw_channels(jax.device_get(obs))
    return draw_bars(np.zeros(1) if obs is None else jax.device_get(obs))
