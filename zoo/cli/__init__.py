"""The command line: the one `zoo` command (`main`), a module per task (`mrpc`, `sst2`, `stsb`,
`classify`, `squad`, `tagging`, `multitask`) and one per tool (`build_hub`, `list_models`,
`check_export`, `batch_predict`, `serve_predict`). These are the only readers of absl FLAGS;
nothing in the rest of zoo imports them. A task's module defines its flags when it is imported,
so `main` imports only the one a command asks for.
"""
