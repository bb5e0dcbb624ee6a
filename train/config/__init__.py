"""The recipe of a run (:class:`TrainConfig`, each field with its flag) and the command-line flags built from it."""
