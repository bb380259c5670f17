"""Task kinds: one module each (`classification` with `regression` and `multilabel`, `squad`,
`tagging`), each ending in its `Kind` (`kind`: task class, settings, data spec, main metrics),
all listed in `table.KINDS`; `labelled` is the base of the kinds on labelled rows, and
`multitask` runs several kinds on one encoder."""
