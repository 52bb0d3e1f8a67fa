"""A checkpoint directory read and checked before any slow work (loading), what a command can tell of the
checkpoints it reads before loading them (checkpoint_inputs), and how a trained one records its making
(training_record)."""
