"""Training: the fit loop (`loop`), its step functions and task mixtures (`steps`), AdamW and
its schedules (`optimizer`), checkpoints that are restored only whole (`checkpoints`), the run
record a resume is checked against (`run_record`, MODEL_DIR/run.json), warm starts from another
run's weights (`warm_start`, `--init_from`) and the distribution strategies (`distribute`)."""
