"""The one runner (`runner`): the modes of every task kind on one plumbing; the settings every
run takes and how a run starts (`settings`); the best checkpoint by a metric (`best`)."""
