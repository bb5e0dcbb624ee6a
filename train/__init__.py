"""From a dialogue corpus to a DEnsity checkpoint: corpora, negatives, losses, the training
loop, Gaussian fitting, the model card and the push to the Hub. See ``python -m train --help``."""
