"""From a dialogue corpus to a DEnsity checkpoint: corpora, Gaussian fitting (training: to come)."""
