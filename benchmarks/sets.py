"""Published correlations (x100) with the human-judgment sets of :mod:`density_train.data.judgments`, for the
reference columns of the meta-evaluation tables."""

# DEnsity's published numbers (x100), for a clearly labelled reference column only.
PAPER_DENSITY = {
    "dailydialog_zhao": {"pearson": 56.81, "spearman": 57.03},
    # Transcription B of the paper; transcription A gives 54.92 / 62.70 (docs/published-numbers.md gives both).
    "convai2_usr": {"pearson": 57.03, "spearman": 62.97},
    "fed_dialogue": {"spearman": 43.3},
}

# Other metrics' published numbers (x100) that our sources hold, beside ours in the headline table.
PUBLISHED = {
    "DEnsity (bert-base)": {name: values for name, values in PAPER_DENSITY.items() if "pearson" in values},
    "USR-Retrieval (in the DEnsity paper)": {"dailydialog_zhao": {"pearson": 48.77, "spearman": 51.61}},
    "Zhao et al. 2020, RoBERTa, supervised": {"dailydialog_zhao": {"pearson": 62.0, "spearman": 64.0}},
}
