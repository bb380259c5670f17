"""Distribution strategies by name, and which process may write outputs.

Strategies: `default`, `one_device`, `mirrored`, `multi_worker_mirrored` (cluster from
`TF_CONFIG`), `tpu` (`tpu` = a TPU name, a grpc:// address, or `local` on a TPU VM), and `auto`
(a TPU if one resolves, else mirrored over the GPUs, else the default strategy).

Under multi-worker training every worker runs the same steps, but only the chief writes
checkpoints, summaries, predictions and exports. Checkpoint saving needs every worker to take
part, so the others save into temporary folders that are removed afterwards.
"""
import json
import os
import shutil
import tempfile

import tensorflow as tf
from absl import logging

from zoo.base.errors import UsageError
from zoo.base.progress import bar

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu", "auto")


def _tpu_strategy(tpu):
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu="" if tpu in (None, "local") else tpu)
    except ValueError as e:
        raise UsageError(f"no TPU found ({e}); on a Cloud TPU VM pass `tpu`=local, elsewhere "
                         "`tpu`=NAME or `tpu`=grpc://HOST:8470") from None
    if tpu not in (None, "local"):
        tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


_STRATEGIES = {}


def make_strategy(name="default", tpu=None, num_gpus=0, devices=None):
    """Returns a `tf.distribute.Strategy` and logs what it got.

    The same arguments give the same strategy within a process: two strategies of one kind
    would reuse each other's collective keys (and a TPU must be initialised once).

    Args:
        name: one of `STRATEGIES`.
        tpu: for `tpu`/`auto`: TPU name, grpc address, or `local`.
        num_gpus: for `mirrored`: how many GPUs to use (0: all visible).
        devices: for `mirrored`: explicit device names (e.g. logical CPUs in tests).
    """
    if name not in STRATEGIES:
        raise UsageError(f"strategy must be one of {STRATEGIES}, not {name!r}")
    key = (name, tpu, num_gpus, tuple(devices or ()))
    if key not in _STRATEGIES:
        _STRATEGIES[key] = _new_strategy(name, tpu, num_gpus, devices)
    strategy = _STRATEGIES[key]
    logging.info("Strategy %s with %d replica(s)", type(strategy).__name__,
                 strategy.num_replicas_in_sync)
    print(f"strategy: {type(strategy).__name__}, replicas: {strategy.num_replicas_in_sync}")
    return strategy


def _new_strategy(name, tpu, num_gpus, devices):
    if name == "auto":
        try:
            strategy = _tpu_strategy(tpu)
        except (ValueError, tf.errors.NotFoundError, tf.errors.UnavailableError) as e:
            logging.info("No TPU (%s); trying GPUs", e)
            gpus = tf.config.list_logical_devices("GPU")
            strategy = (tf.distribute.MirroredStrategy() if gpus
                        else tf.distribute.get_strategy())
    elif name == "tpu":
        strategy = _tpu_strategy(tpu)
    elif name == "multi_worker_mirrored":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    elif name == "mirrored":
        if devices is None and num_gpus:
            devices = [d.name for d in tf.config.list_logical_devices("GPU")[:num_gpus]]
        strategy = tf.distribute.MirroredStrategy(devices=devices)
    elif name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        strategy = tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    else:
        strategy = tf.distribute.get_strategy()
    return strategy


def strategy_for(runtime):
    """The strategy a run's runtime settings (`zoo.base.fields.group_of`) ask for."""
    return make_strategy(runtime.strategy, runtime.tpu, runtime.num_gpus, runtime.devices)


def is_tpu(strategy):
    return isinstance(strategy, tf.distribute.TPUStrategy)


def is_chief_task(task_type, task_id, cluster):
    """Whether a cluster task writes outputs: the chief, or worker 0 when there is no chief."""
    if task_type in (None, "chief"):
        return True
    return task_type == "worker" and int(task_id or 0) == 0 and "chief" not in (cluster or {})


def chief_from_env():
    """`is_chief_task` for this process's TF_CONFIG (True when TF_CONFIG is not set)."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = config.get("task", {})
    return is_chief_task(task.get("type"), task.get("index"), config.get("cluster"))


def is_chief(strategy):
    """True unless this process is a non-chief worker of a multi-worker cluster."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return True
    return is_chief_task(resolver.task_type, resolver.task_id,
                         resolver.cluster_spec().as_dict())


def write_dir(path, strategy):
    """`path` on the chief; a fresh temporary folder on other workers (see `cleanup_write_dir`)."""
    if is_chief(strategy):
        return path
    resolver = strategy.cluster_resolver
    return tempfile.mkdtemp(prefix=f"zoo-{resolver.task_type}{resolver.task_id}-")


def cleanup_write_dir(path, strategy):
    if not is_chief(strategy):
        shutil.rmtree(path, ignore_errors=True)


def _pad_rows(batch, batch_size):
    """Pads every tensor of a batch to `batch_size` rows; adds a 0/1 row-validity vector."""
    rows = tf.shape(tf.nest.flatten(batch)[0])[0]

    def pad(t):
        return tf.pad(t, [[0, batch_size - rows]] + [[0, 0]] * (t.shape.rank - 1))

    return tf.nest.map_structure(pad, batch), pad(tf.ones([rows], tf.int32))


def map_batches(strategy, fn, dataset, batch_size, progress=None):
    """Yields `fn(batch)` as NumPy for every batch of `dataset`, in order.

    Under mirrored and TPU strategies each batch runs on all replicas with a fixed shape: the last
    batch is padded to `batch_size` and its padding rows dropped again. Elsewhere (one replica,
    or multi-worker, where each worker evaluates on its own) it is a plain loop.

    `progress` = (description, unit[, total]) shows a progress bar (`zoo.base.progress`, the chief
    only) counting the rows of `fn`'s outputs.
    """
    if progress is None:
        yield from _map_batches(strategy, fn, dataset, batch_size)
        return
    with bar(*progress, enabled=is_chief(strategy)) as shown:
        for outputs in _map_batches(strategy, fn, dataset, batch_size):
            shown.update(len(tf.nest.flatten(outputs)[0]))
            yield outputs


def _local(strategy):
    """Whether `map_batches` runs a plain loop in this process (see there)."""
    return (strategy.num_replicas_in_sync == 1 and not is_tpu(strategy)) or isinstance(
        strategy, tf.distribute.MultiWorkerMirroredStrategy)


def compiled(strategy, fn, element_spec):
    """`fn` as `map_batches` would compile it for batches of `element_spec` (the dataset's
    `tf.data` spec), to be passed to it again and again (each call of `map_batches` with a plain
    function traces it anew). It is traced once, for batches of any size and length (every
    dimension of the signature unknown), not again for a length of another bucket or the last,
    smaller batch. Under mirrored and TPU strategies `fn` runs per replica inside
    `map_batches`' own step, and is returned as it is; so is a function already compiled."""
    if not _local(strategy) or isinstance(fn, tf.types.experimental.PolymorphicFunction):
        return fn
    return tf.function(fn, input_signature=[any_shape(element_spec)])


def any_shape(element_spec):
    """`element_spec` with every dimension of its tensors unknown (ragged and other specs as
    they are)."""
    def relax(spec):
        if not isinstance(spec, tf.TensorSpec):
            return spec
        rank = spec.shape.rank
        return tf.TensorSpec(None if rank is None else [None] * rank, spec.dtype)

    return tf.nest.map_structure(relax, element_spec)


def _map_batches(strategy, fn, dataset, batch_size):
    if _local(strategy):
        step = compiled(strategy, fn, dataset.element_spec)
        for batch in dataset:
            yield tf.nest.map_structure(lambda t: t.numpy(), step(batch))
        return
    padded = strategy.experimental_distribute_dataset(
        dataset.map(lambda *b: _pad_rows(b[0] if len(b) == 1 else b, batch_size)))

    @tf.function(reduce_retracing=True)
    def step(batch, valid):
        outputs = strategy.run(fn, args=(batch,))
        gather = lambda t: strategy.gather(t, axis=0)  # noqa: E731  (tensor by tensor)
        return tf.nest.map_structure(gather, outputs), gather(valid)

    for batch, valid in padded:
        outputs, valid = step(batch, valid)
        keep = valid.numpy().astype(bool)
        yield tf.nest.map_structure(lambda t, keep=keep: t.numpy()[keep], outputs)
