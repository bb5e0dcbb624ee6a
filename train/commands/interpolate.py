"""Weight-space interpolation of two DEnsity checkpoints; ``python -m train interpolate``.

WiSE-FT (Wortsman et al., CVPR 2022): a fine-tuned model and the model it started from, averaged
weight by weight, often keeps most of the fine-tune's gain and most of what the start did well. For
every tensor of the encoder and of the head f(c, r),

    theta(w) = (1 - w) * theta_start + w * theta_end,    0 <= w <= 1,

computed in float32. The two checkpoints must share the pair format, the tokenizer's vocabulary
and every tensor's name and shape. The Gaussian is not interpolated: a Gaussian belongs to one
encoder's features, so the result is an encoder folder (weights, tokenizer, head,
``density_config.json``) to fit with ``python -m train fit --encoder DIR`` or to start a run from
(``--init-from``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from density_metric.checkpoint.format import CONFIG_FILE, HEAD_FILE, DensityConfig, load_head, save_head
from density_metric.errors import fail

from ..arguments import ENCODER_FOLDER_FILES, OUT_RULE, check_out, checkpoint_folder
from ..config.flags import init_from_pair_format


def interpolate(start: str | Path, end: str | Path, weight: float, out: Path) -> dict:
    """Write theta(weight) of the checkpoints ``start`` and ``end`` (``default``, a folder or a Hub repo id)
    to ``out``; a ValueError names the problem."""
    from density_metric.backbone import load_backbone, quiet_transformers, save_tokenizer

    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"--weight must be in [0, 1] (0: the start, 1: the end), got {weight}")
    out = Path(out)
    check_out(out)
    start, end = checkpoint_folder(start, "start"), checkpoint_folder(end, "end")
    check_out(out, inputs=[start, end], writes=ENCODER_FOLDER_FILES)
    formats = {path: init_from_pair_format(str(path), flag) for path, flag in ((start, "start"), (end, "end"))}
    if formats[start] != formats[end]:
        raise ValueError(
            f"{start} and {end} have different pair formats ({formats[start]} and {formats[end]}): "
            "only checkpoints of one format can be interpolated"
        )
    (model, tokenizer), (other, other_tokenizer) = load_backbone(start), load_backbone(end)
    if tokenizer.get_vocab() != other_tokenizer.get_vocab():
        raise ValueError(f"{start} and {end} have different tokenizer vocabularies")
    ours, theirs = model.state_dict(), other.state_dict()
    if ours.keys() != theirs.keys() or any(ours[name].shape != theirs[name].shape for name in ours):
        differ = sorted(set(ours) ^ set(theirs)) or [n for n in ours if ours[n].shape != theirs[n].shape]
        raise ValueError(f"{start} and {end} have different encoder tensors ({', '.join(differ[:3])}, ...)")
    differ = [name for name in ours if not ours[name].is_floating_point() and not torch.equal(ours[name], theirs[name])]
    if differ:
        raise ValueError(f"{start} and {end} have different integer buffers ({', '.join(differ[:3])})")
    model.load_state_dict(
        {
            name: torch.lerp(t.float(), theirs[name].float(), weight) if t.is_floating_point() else t
            for name, t in ours.items()
        }
    )
    heads = [load_head(path / HEAD_FILE, model.config.hidden_size) for path in (start, end)]
    if any(head is None for head in heads):
        raise ValueError(f"{start if heads[0] is None else end}: no {HEAD_FILE}; give DEnsity checkpoints")
    (w0, b0), (w1, b1) = heads
    out.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():
        model.save_pretrained(out, safe_serialization=True)
        save_tokenizer(tokenizer, out)
    save_head(out / HEAD_FILE, (1 - weight) * np.asarray(w0) + weight * np.asarray(w1), (1 - weight) * b0 + weight * b1)
    name = DensityConfig.from_file(end / CONFIG_FILE).name
    config = DensityConfig(pair_format=formats[start], name=name)
    config.write(out / CONFIG_FILE)
    return {"start": str(start), "end": str(end), "weight": weight, "out": str(out)}


def add_interpolate_arguments(parser) -> None:
    """The flags of ``python -m train interpolate``."""
    parser.add_argument(
        "start",
        help="DEnsity checkpoint at --weight 0 (e.g. the model fine-tuned from): 'default', a folder or a Hub repo id",
    )
    parser.add_argument("end", help="DEnsity checkpoint at --weight 1 (e.g. the fine-tuned model), as start")
    parser.add_argument("--weight", type=float, required=True, help="w in (1 - w) * start + w * end")
    parser.add_argument(
        "--out", type=Path, required=True, help=f"encoder folder to write (no Gaussian: fit it next): {OUT_RULE}"
    )


def interpolate_command(args) -> None:
    try:
        report = interpolate(args.start, args.end, args.weight, args.out)
    except ValueError as err:  # CheckpointError is a ValueError: each names its file
        fail(str(err))
    print(json.dumps(report, indent=2))
