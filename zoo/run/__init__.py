"""The one runner (`runner`): the modes of every task kind on one plumbing; the settings every
run takes and how a run starts (`settings`); the model dir and the output files, checked before
any work (`paths`); one writer per model dir (`lock`); the best checkpoint by a metric
(`best`)."""
