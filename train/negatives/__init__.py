"""Negative candidates: the kinds and their generators, their mix by weight, the retrieval index behind
``retrieved`` negatives and the bland replies mined from the training pairs."""
