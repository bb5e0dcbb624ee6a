"""What a run measures while it trains and which evaluation it keeps: the evaluators the trainer holds, the
validation signals, the grounding signal and model selection (``--select-on``)."""
