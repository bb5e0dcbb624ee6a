"""The training loop: the trainer, each step's batches made one step ahead from tokenised texts, the run's state
folder and its log."""
