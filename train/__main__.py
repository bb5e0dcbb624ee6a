"""``python -m train`` from a checkout, ``python -m density_train`` once installed: the commands of
:mod:`density_train.commands`. Both names run the one installed package, ``density_train`` (pyproject.toml maps it
to this folder), so a checkout never imports its modules a second time under the name ``train``."""

from density_train.commands import main

if __name__ == "__main__":
    main()
