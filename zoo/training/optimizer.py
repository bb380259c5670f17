"""The optimizer of every training run: AdamW with warmup and decay, and a head-and-encoder split.

`create_optimizer` gives AdamW (no weight decay on LayerNorm and bias, global-norm clipping)
on a `WarmupDecay` schedule. Its `HeadAdamW` can give a freshly initialised head a learning
rate that is a multiple of the pretrained encoder's, and can hold the encoder still for the first
steps, so that the head is trained alone before the encoder moves (a warm start).
"""
import contextlib

import tensorflow as tf
import tf_keras as keras

from zoo.base.errors import UsageError
from zoo.training import encoder_layers

NO_WEIGHT_DECAY = ("layer_norm", "LayerNorm", "bias")


class WarmupDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to `peak` over `warmup_steps`, then linear (to 0) or exponential decay.

    Args:
        peak: learning rate at the end of warmup.
        total_steps: training steps in all; linear decay reaches 0 there.
        warmup_steps: steps of linear warmup.
        decay: "linear" or "exponential" (multiplies by `final_fraction` over the decay steps).
        final_fraction: for exponential decay, the fraction of `peak` left at `total_steps`.
    """

    def __init__(self, peak, total_steps, warmup_steps, decay="linear", final_fraction=0.01):
        if decay not in ("linear", "exponential"):
            raise UsageError(f"decay must be 'linear' or 'exponential', not {decay!r}")
        self.peak = peak
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps
        self.decay = decay
        self.final_fraction = final_fraction

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        warmup = tf.cast(self.warmup_steps, tf.float32)
        decay_steps = tf.maximum(tf.cast(self.total_steps, tf.float32) - warmup, 1.0)
        progress = tf.clip_by_value((step - warmup) / decay_steps, 0.0, 1.0)
        if self.decay == "linear":
            decayed = self.peak * (1.0 - progress)
        else:
            decayed = self.peak * tf.pow(self.final_fraction, progress)
        warming = self.peak * step / tf.maximum(warmup, 1.0)
        return tf.where(step < warmup, warming, decayed)

    def get_config(self):
        return dict(peak=self.peak, total_steps=self.total_steps, warmup_steps=self.warmup_steps,
                    decay=self.decay, final_fraction=self.final_fraction)


class _Scale:  # a plain holder: not tracked by Keras, not saved
    value = None


class HeadAdamW(keras.optimizers.AdamW):
    """AdamW whose learning rate is `head_multiplier` times larger on the head's variables, and
    zero on the other (the encoder's) for the first `frozen_encoder_steps` steps.

    Both the Adam step and the weight decay of a variable are proportional to the learning
    rate, so a variable with multiplier m moves exactly as it would at m times the rate. While
    the encoder is frozen its gradients are still computed and its moment estimates updated;
    its weights stay as loaded.

    Args:
        head_variables: the variables that get `head_multiplier` (and are never frozen).
        head_multiplier: the head's learning rate over the schedule's.
        frozen_encoder_steps: steps at the start in which only the head variables move.
        variable_rates: (variable, multiplier) pairs of other variables whose learning rate is
            scaled (layer-wise decay: `zoo.training.encoder_layers.decayed_rates`).
        **kwargs: those of `keras.optimizers.AdamW`.
    """

    def __init__(self, head_variables=(), head_multiplier=1.0, frozen_encoder_steps=0,
                 variable_rates=(), **kwargs):
        super().__init__(**kwargs)
        if head_multiplier <= 0:
            raise UsageError(f"the head's learning rate multiplier must be above 0, not "
                             f"{head_multiplier}")
        if frozen_encoder_steps < 0:
            raise UsageError(f"frozen encoder steps must be 0 or more, not "
                             f"{frozen_encoder_steps}")
        self.head_multiplier = float(head_multiplier)
        self.frozen_encoder_steps = int(frozen_encoder_steps)
        self._head_keys = {self._var_key(v) for v in head_variables}
        self._rates = {self._var_key(v): float(m) for v, m in variable_rates if m != 1.0}
        self._scale = _Scale()

    def _multiplier(self, variable):
        """The variable's learning-rate multiplier (a tensor while frozen), or None for 1."""
        key = self._var_key(variable)
        if key in self._head_keys:
            return None if self.head_multiplier == 1.0 else self.head_multiplier
        rate = self._rates.get(key)
        if self.frozen_encoder_steps:
            moving = tf.cast(self.iterations >= self.frozen_encoder_steps, tf.float32)
            return moving if rate is None else moving * rate
        return rate

    @property
    def learning_rate(self):
        rate = keras.optimizers.AdamW.learning_rate.fget(self)
        return rate if self._scale.value is None else rate * self._scale.value

    @learning_rate.setter
    def learning_rate(self, value):
        keras.optimizers.AdamW.learning_rate.fset(self, value)

    @contextlib.contextmanager
    def _rate_of(self, variable):
        """`learning_rate` is `variable`'s (scaled by its multiplier) inside the block."""
        self._scale.value = self._multiplier(variable)
        try:
            yield
        finally:
            self._scale.value = None

    @property
    def _fused(self):
        """Whether updates (weight decay included) run as `_fused_step`, not as Keras's own."""
        return not (self.amsgrad or self.jit_compile)

    def update_step(self, gradient, variable):
        with self._rate_of(variable):
            if self._fused:
                self._fused_step(gradient, variable)
            else:
                super().update_step(gradient, variable)

    def _fused_step(self, gradient, variable):
        """`keras.optimizers.AdamW`'s weight decay and `update_step` in two kernels: the decay
        as one multiplication by 1 - rate x decay, assigned (PyTorch's form; Keras computes
        `variable * decay * rate` and then subtracts it, one more pass), then `ResourceApplyAdam`,
        which computes the same m, v and step:
        Keras runs it as a dozen elementwise ops, each a pass over the variable and its moments,
        which made the update a large part of a training step without XLA. A sparse gradient
        (an embedding lookup's, its rows summed by Keras first) is made dense: Keras's sparse
        update passes over the whole variable and its moments too, and with each row once it is
        the dense update with zeros elsewhere."""
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        index = self._index_dict[self._var_key(variable)]
        rate = tf.cast(self.learning_rate, dtype)
        if self.weight_decay is not None and self._use_weight_decay(variable):
            variable.assign(variable * (1.0 - rate * tf.cast(self.weight_decay, dtype)))
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=self._momentums[index].handle,
            v=self._velocities[index].handle,
            beta1_power=tf.pow(tf.cast(self.beta_1, dtype), step),
            beta2_power=tf.pow(tf.cast(self.beta_2, dtype), step),
            lr=rate, beta1=tf.cast(self.beta_1, dtype),
            beta2=tf.cast(self.beta_2, dtype), epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype))

    def _apply_weight_decay(self, variables):
        if self._fused:
            return  # `_fused_step` decays each variable with its update
        groups = {}  # variables of one learning rate
        for v in variables:
            key = self._var_key(v)
            groups.setdefault((key in self._head_keys, self._rates.get(key)), []).append(v)
        for group in groups.values():
            with self._rate_of(group[0]):
                super()._apply_weight_decay(group)

    def get_config(self):
        return dict(super().get_config(), head_multiplier=self.head_multiplier,
                    frozen_encoder_steps=self.frozen_encoder_steps)


def create_optimizer(learning_rate, total_steps, warmup_steps, decay="linear", weight_decay=0.01,
                     clipnorm=1.0, jit_compile=False, head_variables=(), head_multiplier=1.0,
                     frozen_encoder_steps=0, variable_rates=()):
    """`HeadAdamW` (no weight decay on LayerNorm and bias) with `WarmupDecay` and global-norm
    clipping.

    `jit_compile` compiles each weight's update with XLA (one fused loop), also on a CPU, where
    tf_keras would not.
    """
    optimizer = HeadAdamW(
        head_variables=head_variables, head_multiplier=head_multiplier,
        frozen_encoder_steps=frozen_encoder_steps, variable_rates=variable_rates,
        learning_rate=WarmupDecay(learning_rate, total_steps, warmup_steps, decay),
        weight_decay=weight_decay, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
        global_clipnorm=clipnorm)
    optimizer.jit_compile = jit_compile
    optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
    return optimizer


def optimizer_for(trainer, total_steps, xla_fusion=False, head_variables=(),
                  encoder_variables=()):
    """`create_optimizer` with a run's learning rate, warmup, decay, weight decay, head
    multiplier, frozen encoder steps and layer-wise decay (`trainer`: the run's trainer
    settings, `zoo.base.fields.group_of`; `head_variables`: the core's variables outside its
    encoder; `encoder_variables`: its encoder's); its update is compiled with XLA when the run
    fuses (`xla_fusion`, see `zoo.compute.fusion`)."""
    split = trainer.head_learning_rate_multiplier != 1.0 or trainer.frozen_encoder_steps
    if split and not head_variables:
        raise UsageError("`head_learning_rate_multiplier` and `frozen_encoder_steps` need a "
                         "model with a head beside its encoder")
    if trainer.frozen_encoder_steps and trainer.frozen_encoder_steps >= total_steps:
        raise UsageError(f"`frozen_encoder_steps`={trainer.frozen_encoder_steps} leaves no "
                         f"step of the {total_steps} to train the encoder")
    return create_optimizer(trainer.learning_rate, total_steps,
                            int(total_steps * trainer.warmup_proportion), trainer.decay,
                            trainer.weight_decay, jit_compile=xla_fusion,
                            head_variables=head_variables,
                            head_multiplier=trainer.head_learning_rate_multiplier,
                            frozen_encoder_steps=trainer.frozen_encoder_steps,
                            variable_rates=_layer_rates(trainer, encoder_variables))


def _layer_rates(trainer, encoder_variables):
    decay = trainer.layer_decay
    if decay == 1.0:
        return ()
    rates = encoder_layers.decayed_rates(encoder_variables, decay)
    return [(v, rates[id(v)]) for v in encoder_variables]
