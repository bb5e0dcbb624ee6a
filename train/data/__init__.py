"""Corpora as datasets.Dataset, the grounded corpora and grounded contexts, human-judgment sets, and the training
examples of response selection (a gold pair and its candidates)."""
