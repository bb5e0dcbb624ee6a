"""The training losses: response selection with the supervised contrastive term (the paper), and the density term
that pushes copies of the context out of the Gaussian."""
