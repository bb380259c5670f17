"""zoo-models: list the model names zoo knows, their handles, and which load offline here."""
import sys

from absl import flags

flags.DEFINE_bool("offline_only", False, "List only the models that load offline here.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    from zoo.model import hub

    rows = []
    for name, spec in hub.MODELS.items():
        offline = hub.is_available_offline(spec.encoder) and hub.is_available_offline(
            spec.preprocessor)
        if offline or not FLAGS.offline_only:
            rows.append((name, "yes" if offline else "no", spec.encoder, spec.preprocessor,
                         spec.note))
    header = ("name", "offline", "encoder", "preprocessor", "note")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(4)]
    for row in [header] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[4])
    print(f"\nlocal builds are cached in {hub.cache_dir()}/hub (set ZOO_CACHE_DIR to move them)")


def run():
    """The `zoo-models` console script (the same as `zoo models`)."""
    from zoo.cli.main import run_absl

    run_absl(__name__, sys.argv[1:])


if __name__ == "__main__":
    run()
