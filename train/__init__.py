"""From a dialogue corpus to a DEnsity checkpoint (``python -m train --help``). Installed and in a checkout the
package imports as ``density_train`` (pyproject.toml maps the name to this folder). Its folders, each importing only
the ones listed before it:

- ``model.py``, ``arguments.py``: the cross-encoder g with its head f, and what every command checks of its arguments;
- ``data/``: corpora, grounded corpora and contexts, human-judgment sets, the training examples;
- ``negatives/``: the kinds of negative, their mix, the retrieval index, the bland replies;
- ``losses/``: response selection with the contrastive term, and the density term;
- ``evaluation/``: validation signals, the grounding signal, model selection and the trainer's evaluators;
- ``config/``: the recipe (:class:`~density_train.config.recipe.TrainConfig`) and its flags;
- ``loop/``: the trainer, each step's batches, the run's state and log;
- ``commands/``: one module per ``python -m train`` command (train, fit, calibrate, ...), and the model card.
"""
