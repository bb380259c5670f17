"""zoo build-hub and zoo models as a user runs them, through the console script's own `run` in
the test's process (a zoo command in a fresh process: tests/cli/test_main.py)."""
import json
import os

from tests.helpers import zoo_inline


def test_build_hub_writes_preprocessor_and_encoder(tmp_path):
    out = tmp_path / "tiny"
    result = zoo_inline("build-hub", "--source=tiny", f"--output_dir={out}")
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stdout
    for part in ("encoder", "preprocessor"):
        assert os.path.exists(out / part / "saved_model.pb")
    assert json.load(open(out / "zoo_build_info.json"))["random_init"] is True


def test_build_hub_reports_a_bad_source_without_a_traceback(tmp_path):
    (tmp_path / "roberta").mkdir()
    (tmp_path / "roberta" / "config.json").write_text('{"model_type": "roberta"}')
    result = zoo_inline("build-hub", f"--source={tmp_path / 'roberta'}",
                        f"--output_dir={tmp_path / 'out'}")
    assert result.returncode != 0
    assert "model_type is 'roberta'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_build_hub_requires_its_flags():
    result = zoo_inline("build-hub")
    assert result.returncode != 0 and "--source" in result.stderr


def test_zoo_models_lists_names_handles_and_offline_availability():
    result = zoo_inline("models")
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line.split() for line in result.stdout.splitlines() if line.strip()}
    assert lines["minilm_l6_h384_uncased"][1] == "yes"
    assert lines["bert_en_uncased_L-12_H-768_A-12"][1] == "no"
    assert "bert_en_uncased_preprocess/3" in lines["bert_en_uncased_L-12_H-768_A-12"][3]
    offline = zoo_inline("models", "--offline_only")
    assert "bert_en_cased_L-12_H-768_A-12" not in offline.stdout
    assert "minilm_l6_h384_uncased" in offline.stdout
