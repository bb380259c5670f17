"""Training: the fit loop (`loop`), its step functions and task mixtures (`steps`), AdamW and
its schedules (`optimizer`), checkpoints that are restored only whole (`checkpoints`), the run
record a resume is checked against (`run_record`, MODEL_DIR/run.json) and the distribution
strategies (`distribute`)."""
